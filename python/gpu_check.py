"""The Python door on a GPU: torch, CuPy and JAX against Vulkan's memory, one row per check.

Run by ``scripts/python-gpu-check.sh`` on a machine with an NVIDIA GPU, its driver and the
frameworks (no network needed: the wheel is installed from a folder). Every row prints
``PASS``/``FAIL``/``SKIP``, the check's name and what was measured; the exit code is the number of
failed rows (0: all passed).

Each framework loop, K = 3 buffers in turn, frame f on buffer f mod 3:
  Vulkan fills the buffer with f + 0.25 (vkCmdFillBuffer; returns at once) →
  the framework takes it on its own stream (``__dlpack__(stream=…)`` enqueues the wait there) and
  compares every element with f + 0.25 on the GPU (an accumulated flag: no host sync) →
  it writes f + 0.5 into every element and releases the buffer on that stream →
  Vulkan reads back the buffer of frame f − 2 (a one-shot copy waiting for that release) and the
  host checks every element is (f − 2) + 0.5.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import time
from typing import Any, Callable

import numpy as np

import vkhip

ROWS: list[tuple[str, str, str]] = []


def row(status: str, name: str, detail: str) -> None:
    ROWS.append((status, name, detail))
    print(f"{status:4}  {name}: {detail}", flush=True)


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


class Framework:
    """How one framework takes, checks, writes and releases a buffer on its stream."""

    name = ""

    def stream(self) -> Any:
        raise NotImplementedError

    def take(self, buf: vkhip.Buffer) -> Any:
        raise NotImplementedError

    def check_and_write(self, t: Any, expect: float, write: float) -> None:
        raise NotImplementedError

    def all_ok(self) -> bool:
        raise NotImplementedError

    def data_ptr(self, t: Any) -> int:
        raise NotImplementedError


class Torch(Framework):
    name = "torch"

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.ok = torch.ones((), dtype=torch.bool, device="cuda")

    def stream(self) -> Any:
        return self.torch.cuda.current_stream()

    def take(self, buf: vkhip.Buffer) -> Any:
        return self.torch.from_dlpack(buf)

    def check_and_write(self, t: Any, expect: float, write: float) -> None:
        self.ok &= (t == expect).all()
        t.fill_(write)

    def all_ok(self) -> bool:
        return bool(self.ok.item())

    def data_ptr(self, t: Any) -> int:
        return int(t.data_ptr())


class CuPy(Framework):
    name = "cupy"

    def __init__(self) -> None:
        import cupy

        self.cupy = cupy
        self.ok = cupy.ones((), dtype=cupy.bool_)

    def stream(self) -> Any:
        return self.cupy.cuda.get_current_stream()

    def take(self, buf: vkhip.Buffer) -> Any:
        return self.cupy.from_dlpack(buf)

    def check_and_write(self, t: Any, expect: float, write: float) -> None:
        self.ok &= (t == expect).all()
        t.fill(write)

    def all_ok(self) -> bool:
        return bool(self.ok.get())

    def data_ptr(self, t: Any) -> int:
        return int(t.data.ptr)


class Jax(Framework):
    """JAX arrays are immutable: JAX reads Vulkan's memory in place; what it writes back is its
    result, copied into the buffer on the GPU through a torch view of the same memory."""

    name = "jax"

    def __init__(self) -> None:
        import jax
        import jax.numpy as jnp
        import torch

        self.jax, self.jnp, self.torch = jax, jnp, torch
        self.ok = jnp.array(True)

    def stream(self) -> Any:
        return self.torch.cuda.current_stream()

    def take(self, buf: vkhip.Buffer) -> Any:
        return (self.jax.dlpack.from_dlpack(buf), buf)

    def check_and_write(self, t: Any, expect: float, write: float) -> None:
        arr, buf = t
        # One flag on the GPU, not one per frame (a list of 10,000 arrays would grow the RSS).
        self.ok = self.ok & self.jnp.all(arr == expect)
        out = self.jnp.full(arr.shape, write, dtype=arr.dtype)
        # JAX's stream is not torch's: its read and its result are complete before torch
        # overwrites the buffer (a host wait per frame, for this check only).
        self.ok.block_until_ready()
        out.block_until_ready()
        view = self.torch.from_dlpack(buf)
        view.copy_(self.torch.from_dlpack(out))

    def all_ok(self) -> bool:
        return bool(self.ok)

    def data_ptr(self, t: Any) -> int:
        arr, _ = t
        return int(arr.unsafe_buffer_pointer())


class TorchOn(Torch):
    """torch on ``cuda:n`` named explicitly (not the current device): its flag, its stream, and
    a check that every tensor it takes lives on ``cuda:n``."""

    def __init__(self, n: int) -> None:
        import torch

        self.torch = torch
        self.device = torch.device("cuda", n)
        self.name = f"torch on cuda:{n}"
        self.ok = torch.ones((), dtype=torch.bool, device=self.device)

    def stream(self) -> Any:
        return self.torch.cuda.current_stream(self.device)

    def take(self, buf: vkhip.Buffer) -> Any:
        t = self.torch.from_dlpack(buf)
        if t.device != self.device:
            raise AssertionError(f"{buf.name}: the tensor is on {t.device}, not {self.device}")
        return t


def loop(
    fw: Framework, dev: vkhip.Device, frames: int, elements: int, flat_check: bool = True
) -> None:
    k = 3
    bufs = [dev.buffer((elements,), "float32", name=f"{fw.name}{i}") for i in range(k)]
    zero_copy = True
    mismatches = 0
    fd0 = rss0 = None
    t0 = time.perf_counter()
    for f in range(frames):
        b = bufs[f % k]
        b.vulkan_fill(f + 0.25)
        s = fw.stream()
        t = fw.take(b)
        if f < k:
            zero_copy &= fw.data_ptr(t) == b.data_ptr
        fw.check_and_write(t, f + 0.25, f + 0.5)
        del t
        b.release(s)
        if f >= k - 1:
            old = f - (k - 1)
            got = np.frombuffer(bufs[old % k].vulkan_read(), dtype=np.float32)
            mismatches += int(np.count_nonzero(got != old + 0.5))
        if f == min(1000, frames // 2):
            gc.collect()
            fd0, rss0 = fds(), rss_mib()
    elapsed = time.perf_counter() - t0
    gpu_ok = fw.all_ok()
    gc.collect()
    fd1, rss1 = fds(), rss_mib()
    checked = (frames - (k - 1)) * elements
    ok = gpu_ok and mismatches == 0
    row(
        "PASS" if ok else "FAIL",
        f"{fw.name} reads what Vulkan wrote and writes what Vulkan reads",
        f"{frames} frames at K = {k}, {elements} floats each: framework compares on the GPU "
        f"{'all equal' if gpu_ok else 'MISMATCH'}; Vulkan read back {checked} values, "
        f"{mismatches} wrong; {elapsed / frames * 1e6:.0f} us/frame",
    )
    row(
        "PASS" if zero_copy else "FAIL",
        f"{fw.name} views Vulkan's memory (no copy)",
        "the tensor's data pointer is the imported Vulkan allocation's"
        if zero_copy
        else "a pointer differs: the framework copied",
    )
    if fd0 is not None and flat_check:  # (not with other threads opening files meanwhile)
        flat = fd1 == fd0 and rss1 - rss0 < 8
        row(
            "PASS" if flat else "FAIL",
            f"{fw.name}: fds and RSS flat",
            f"fds {fd0} -> {fd1}, RSS {rss0:.1f} -> {rss1:.1f} MiB over the last "
            f"{frames - min(1000, frames // 2)} frames",
        )
    for b in bufs:
        b.release(fw.stream())  # balanced turns before teardown (no-op ordering)


def profiler_checks(dev: vkhip.Device, frames: int, broken_runs: int) -> None:
    import torch

    def run(n: int, skip_wait: bool) -> vkhip.Capture:
        k = 3
        prof = vkhip.Profiler(dev)
        track = prof.stream("torch", torch.cuda.current_stream())
        bufs = [dev.buffer((4096,), "float32", name=f"p{i}") for i in range(k)]
        for f in range(n):
            b = bufs[f % k]
            b.vulkan_fill(float(f))
            s = torch.cuda.current_stream()
            # The turn is taken (the wait enqueued) before the scope opens.
            t = torch.from_dlpack(b.__dlpack__(stream=-1)) if skip_wait else torch.from_dlpack(b)
            with track.scope("policy", reads=[b], writes=[b]):
                t.add_(1.0)
            b.release(s)
            prof.end_frame()
        torch.cuda.synchronize()
        del track
        cap = prof.finish()
        del bufs
        return cap

    cap = run(frames, skip_wait=False)
    row(
        "PASS" if cap.is_clean and cap.pairs_checked > 0 else "FAIL",
        "profiler: the correct torch loop has no hazard",
        f"{frames} frames: {cap.violation_count} violations in {cap.pairs_checked} access pairs"
        + (f"; first: {cap.violations[0]}" if cap.violations else ""),
    )
    caught = 0
    sentence = ""
    for _ in range(broken_runs):
        c = run(30, skip_wait=True)
        if not c.is_clean:
            caught += 1
            sentence = c.violations[0]
    row(
        "PASS" if caught == broken_runs else "FAIL",
        "profiler: a torch loop that skips the wait is caught",
        f"{caught} of {broken_runs} runs; e.g. {sentence}",
    )


def torch_sine(frame: int, t: float, heights: vkhip.Heights) -> None:
    """src/sim.rs's reference in torch on the lent stream: h = 0.25 sin(6u + p) cos(6v + p)."""
    import math

    import torch

    h = torch.from_dlpack(heights)
    rows, cols = h.shape
    p = (1.5 * t) % (2 * math.pi)
    u = torch.arange(cols, device=h.device, dtype=torch.float32) * (2.0 / (cols - 1)) - 1.0
    v = torch.arange(rows, device=h.device, dtype=torch.float32) * (2.0 / (rows - 1)) - 1.0
    torch.mul(torch.sin(6.0 * u + p)[None, :], torch.cos(6.0 * v + p)[:, None], out=h)
    h.mul_(0.25)


def viewer_and_frames_checks(vkhip_bin: str | None, out: str) -> None:
    import subprocess

    import torch

    # Frames: what torch sees in Vulkan's memory is what the host path reads.
    gpu = vkhip.Frames(size=(320, 180), grid=(64, 64), slots=3, api="cuda")
    host = vkhip.Frames(size=(320, 180), grid=(64, 64), slots=3, api="host")
    same = 0
    for _ in range(12):
        fg, fh = gpu.render(), host.render()
        with fg:
            t = torch.from_dlpack(fg)
            zero_copy = t.is_cuda
            a = t.cpu().numpy()
        with fh:
            b = np.from_dlpack(fh).copy()
        same += int(np.array_equal(a, b))
    ok = same == 12 and zero_copy
    row(
        "PASS" if ok else "FAIL",
        "frames: torch reads the frame Vulkan drew, on the GPU",
        f"{same} of 12 frames equal to the host path's, tensor on {t.device}",
    )
    if vkhip_bin is None:
        row("SKIP", "viewer", "no --vkhip binary given")
        return
    flags = ["--frames", "5", "--grid", "256x256", "--size", "320x180", "--slots", "3"]
    a_png, b_png = f"{out}/viewer-torch.png", f"{out}/viewer-cuda.png"
    result = vkhip.view(
        torch_sine,
        api="cuda",
        stream=torch.cuda.current_stream(),
        headless=True,
        capture=a_png,
        args=flags,
    )
    subprocess.run(
        [vkhip_bin, "--headless", "--backend", "cuda", *flags, "--capture", b_png],
        check=True,
        capture_output=True,
    )
    cmp = subprocess.run([vkhip_bin, "compare-png", a_png, b_png], capture_output=True, text=True)
    row(
        "PASS" if cmp.returncode == 0 and result.frames == 5 else "FAIL",
        "viewer: torch-written heights draw --backend cuda's picture",
        cmp.stdout.strip() or cmp.stderr.strip(),
    )


def views_checks(vkhip_bin: str | None, out: str, n: int) -> None:
    """N views (issue 43): torch reads ``(N, H, W, 4)`` equal, view by view, to the host path's
    frame of the same cameras (set from a CUDA tensor, copied to the host); and ``(N, rows, cols)``
    heights written by torch on the CUDA path draw the picture NumPy's on the host path draws."""
    import subprocess

    import torch

    size, grid = (160, 96), (64, 64)
    poses = torch.tensor(vkhip.Frames.default_poses(n), device="cuda")
    poses[:, 9] = 40.0 + torch.arange(n, device="cuda")  # each view its own field of view
    # N environments, written by CUDA's kernel in one launch (gridDim.z = N) on both sides (the
    # values against the CPU reference: scripts/views-gpu-check.sh's verify rows).
    common = {"size": size, "grid": grid, "views": n, "envs": n, "slots": 3}
    gpu = vkhip.Frames(api="cuda", args=["--backend", "cuda"], **common)  # type: ignore[arg-type]
    host = vkhip.Frames(api="host", args=["--backend", "cuda"], **common)  # type: ignore[arg-type]
    gpu.set_poses(poses)
    host.set_poses(poses.cpu().numpy())
    frames, equal, shapes, on_gpu = 8, 0, set(), True
    for _ in range(frames):
        fg, fh = gpu.render(), host.render()
        with fg:
            t = torch.from_dlpack(fg)
            shapes.add(tuple(t.shape))
            on_gpu &= t.is_cuda
            a = t.cpu().numpy()
        with fh:
            b = np.from_dlpack(fh)
            equal += sum(int(np.array_equal(a[v], b[v])) for v in range(n))
    distinct = len({a[v].tobytes() for v in range(n)})
    ok = equal == frames * n and shapes == {(n, size[1], size[0], 4)} and on_gpu and distinct == n
    row(
        "PASS" if ok else "FAIL",
        f"views: torch reads ({n}, H, W, 4), every view the host path's",
        f"{equal} of {frames * n} views equal over {frames} frames, shapes {sorted(shapes)}, "
        f"on the GPU: {on_gpu}, {distinct} distinct views in the last frame",
    )
    if vkhip_bin is None:
        row("SKIP", "views: torch-written heights", "no --vkhip binary given")
        return

    def pattern(rows: int, cols: int) -> np.ndarray:
        # Heights exact in float32 (k / 64), environment e its own pattern: torch and NumPy
        # write the very same bits.
        e, y, x = np.meshgrid(np.arange(n), np.arange(rows), np.arange(cols), indexing="ij")
        return (((x + 3 * y + 5 * e) % 16) / 64.0 - 0.125).astype(np.float32)

    def torch_write(frame: int, t: float, heights: vkhip.Heights) -> None:
        h = torch.from_dlpack(heights)
        h.copy_(torch.from_numpy(pattern(h.shape[1], h.shape[2])).roll(frame, 2))

    def numpy_write(frame: int, t: float, heights: vkhip.Heights) -> None:
        h = np.from_dlpack(heights)
        h[...] = np.roll(pattern(h.shape[1], h.shape[2]), frame, 2)

    flags = ["--frames", "4", "--grid", "48x32", "--size", "320x180", "--slots", "3"]
    a_png, b_png = f"{out}/views-torch.png", f"{out}/views-numpy.png"
    got = vkhip.view(
        torch_write,
        api="cuda",
        stream=torch.cuda.current_stream(),
        views=n,
        headless=True,
        capture=a_png,
        args=flags,
    )
    vkhip.view(numpy_write, api="host", views=n, headless=True, capture=b_png, args=flags)
    cmp = subprocess.run(
        [vkhip_bin, "compare-png", "--tolerance", "0", a_png, b_png],
        capture_output=True,
        text=True,
    )
    row(
        "PASS" if cmp.returncode == 0 and got.frames == 4 else "FAIL",
        f"views: ({n}, rows, cols) heights written by torch draw NumPy's picture, view by view",
        cmp.stdout.strip() or cmp.stderr.strip(),
    )


def foreign_context_check(dev: vkhip.Device) -> None:
    """A stream of another CUDA context (not the primary one torch, CuPy and vkhip share) is
    refused before anything is enqueued on it."""
    import ctypes

    cuda = ctypes.CDLL("libcuda.so.1")
    ctx, stream, device = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int()
    assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
    create = getattr(cuda, "cuCtxCreate_v4", None)
    if create is not None:  # CUDA 13: (ctx, params, flags, dev)
        rc = create(ctypes.byref(ctx), None, 0, device)
    else:
        rc = cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, device)
    assert rc == 0, f"cuCtxCreate: {rc}"
    assert cuda.cuStreamCreate(ctypes.byref(stream), 1) == 0
    buf = dev.buffer(16)
    try:
        buf.__dlpack__(stream=stream.value)
        row("FAIL", "a stream of another CUDA context is refused", "it was accepted")
    except vkhip.InvalidError as e:
        row("PASS", "a stream of another CUDA context is refused", str(e))
    finally:
        cuda.cuStreamDestroy_v2(stream)
        cuda.cuCtxDestroy_v2(ctx)
        import torch

        torch.cuda.synchronize()  # the primary context current again for what follows


NO_STREAMS = [123456789, 12345, -2, 4095, 1 << 60]


def stream_number_checks(dev: vkhip.Device) -> None:
    """Issue 45: an integer that is no stream ended the interpreter with SIGSEGV (the driver read
    it as a stream object). Now each is an InvalidError on every door that takes a stream, the
    buffer's turns untouched; and the streams frameworks really hand over (torch's current and a
    new one, CuPy's, the legacy and per-thread default streams) pass the check (8-aligned)."""
    import torch

    buf = dev.buffer(1024, name="streams")
    refused, accepted = [], []
    for n in NO_STREAMS:
        for what, call in (
            ("__dlpack__", lambda n=n: buf.__dlpack__(stream=n)),
            ("release", lambda n=n: buf.release(n)),
        ):
            try:
                call()
                accepted.append(f"{what}({n})")
            except vkhip.InvalidError:
                refused.append(f"{what}({n})")
    prof = vkhip.Profiler(dev)
    try:
        prof.stream("bad", 12345)
        accepted.append("Profiler.stream(12345)")
    except vkhip.InvalidError:
        refused.append("Profiler.stream")
    finally:
        prof.finish()
    frames = vkhip.Frames(size=(64, 36), grid=(16, 16), slots=2, api="cuda")
    frame = frames.render()
    try:
        frame.__dlpack__(stream=123456789)
        accepted.append("Frame.__dlpack__(123456789)")
    except vkhip.InvalidError:
        refused.append("Frame.__dlpack__")
    with frame:
        torch.from_dlpack(frame).float().mean()
    # The buffer still takes turns: nothing was counted by the refused calls.
    turns = buf.turns
    buf.vulkan_fill(3.0)
    with buf:
        torch.from_dlpack(buf).add_(1.0)
    values = np.frombuffer(buf.vulkan_read(), dtype=np.float32)
    works = bool((values == 4.0).all()) and buf.turns == (turns[0] + 2, turns[1] + 1)
    row(
        "PASS" if not accepted and works else "FAIL",
        "a number that is no stream is refused, not dereferenced",
        f"{len(refused)} calls refused with InvalidError"
        + (f"; ACCEPTED: {', '.join(accepted)}" if accepted else "")
        + f"; the buffer's next turn {'right' if works else 'WRONG'} (turns {buf.turns})",
    )

    side = torch.cuda.Stream()
    handles: list[tuple[str, Any]] = [
        ("torch current", torch.cuda.current_stream()),
        ("torch new", side),
        ("legacy 0", 0),
        ("legacy 1", 1),
        ("per-thread 2", 2),
    ]
    try:
        import cupy

        handles.append(("cupy new", cupy.cuda.Stream(non_blocking=True)))
    except ImportError:
        pass
    good, seen = 0, []
    for i, (name, stream) in enumerate(handles):
        number = vkhip.stream_number(stream)
        seen.append(f"{name} {number:#x}")
        try:
            buf.vulkan_fill(float(i))
            buf.__dlpack__(stream=number)
            buf.release(stream)
            got = np.frombuffer(buf.vulkan_read(), dtype=np.float32)
            good += int((got == float(i)).all())
        except vkhip.Error as e:
            seen[-1] += f" REFUSED ({e})"
    row(
        "PASS" if good == len(handles) else "FAIL",
        "real streams pass the check",
        f"{good} of {len(handles)} took and released a turn: {', '.join(seen)}",
    )


def come_and_go_check(vkhip_bin: str | None) -> None:
    """Frames and viewers made and dropped many times in one process: no failure, fds flat."""
    import torch

    def frames_once() -> None:
        frames = vkhip.Frames(size=(640, 360), slots=3, api="cuda")
        for _ in range(5):
            with frames.render() as f:
                torch.from_dlpack(f).float().mean()

    def view_once() -> None:
        vkhip.view(
            torch_sine,
            api="cuda",
            stream=torch.cuda.current_stream(),
            headless=True,
            args=["--frames", "5", "--grid", "64x64", "--size", "160x90"],
        )

    for make, name, n in ((frames_once, "Frames", 30), (view_once, "view", 15)):
        make()
        gc.collect()
        fd0, done = fds(), 0
        try:
            for _ in range(n):
                make()
                done += 1
            gc.collect()
            fd1 = fds()
            ok = fd1 == fd0
            detail = f"{done} of {n}, fds {fd0} -> {fd1}"
        except Exception as e:  # noqa: BLE001 - a row
            ok, detail = False, f"{done} of {n} then {type(e).__name__}: {e}"
        row("PASS" if ok else "FAIL", f"{name} made and dropped {n} times in one process", detail)


def torch_uuid(n: int) -> str | None:
    """torch's UUID of ``cuda:n`` as vkhip writes UUIDs (None where torch does not say)."""
    import torch

    uuid = getattr(torch.cuda.get_device_properties(n), "uuid", None)
    return None if uuid is None else str(uuid).lower().removeprefix("gpu-")


def device_choice_checks() -> None:
    """The same GPU four ways (issue 44), a GPU this process does not have, and, with two GPUs
    or more, a stream of another GPU refused naming both."""
    import torch

    gpus = torch.cuda.device_count()
    torch.cuda.set_device(0)
    ways = {
        "device=0": lambda: vkhip.Device(device=0),
        'device="cuda:0"': lambda: vkhip.Device(device="cuda:0"),
        'device=torch.device("cuda", 0)': lambda: vkhip.Device(device=torch.device("cuda", 0)),
        "Device() after torch.cuda.set_device(0)": lambda: vkhip.Device(),
    }
    seen = {}
    for way, make in ways.items():
        with make() as d:
            seen[way] = (d.uuid, d.dlpack_device)
    same = len(set(seen.values())) == 1
    first = next(iter(seen.values()))
    theirs = torch_uuid(0)
    ok = same and first[1] == (2, 0) and theirs in (None, first[0])
    row(
        "PASS" if ok else "FAIL",
        "the same GPU four ways",
        f"{', '.join(seen)}: UUID {first[0]}, DLPack {first[1]}; torch's UUID of cuda:0 {theirs}"
        if same
        else f"they differ: {seen}",
    )
    try:
        vkhip.Device(device=gpus).close()
        row("FAIL", f"device={gpus} on {gpus} GPU(s) is refused", "it opened")
    except vkhip.UnavailableError as e:
        want = f"CUDA device {gpus}: this process sees {gpus} CUDA device"
        row(
            "PASS" if want in str(e) else "FAIL",
            f"device={gpus} on {gpus} GPU(s): UnavailableError",
            str(e),
        )
    if gpus >= 2:
        with vkhip.Device(device=0) as d:
            buf = d.buffer(16)
            # A stream of its own (torch's default stream is the legacy one, which names the
            # current context, whichever device that is).
            other = torch.cuda.Stream(device=1)
            try:
                buf.__dlpack__(stream=other.cuda_stream)
                row(
                    "FAIL",
                    "a stream of cuda:1 for a buffer of cuda:0 is refused",
                    "it was accepted",
                )
            except vkhip.InvalidError as e:
                names = "CUDA device 1" in str(e) and "CUDA device 0" in str(e)
                row(
                    "PASS" if names else "FAIL",
                    "a stream of cuda:1 for a buffer of cuda:0 is refused",
                    str(e),
                )


def every_gpu_checks(frames: int, elements: int, script: str) -> None:
    """Every GPU n: torch on cuda:n reads and writes what Vulkan on GPU n wrote and reads, every
    value, the tensors on cuda:n; frames of GPU n on cuda:n. In one process (a Device per GPU,
    a thread per GPU, all at once) and in one process per GPU (all at once)."""
    import subprocess
    import threading

    import torch

    gpus = torch.cuda.device_count()
    devs = [vkhip.Device(device=n) for n in range(gpus)]
    pairs = [(d.dlpack_device, d.uuid, torch_uuid(n)) for n, d in enumerate(devs)]
    ok = all(p == (2, n) and t in (None, u) for n, (p, u, t) in enumerate(pairs))
    row("PASS" if ok else "FAIL", f"one process, a Device per GPU ({gpus})", f"{pairs}")

    def on(n: int) -> None:
        try:
            with torch.cuda.device(n):
                loop(TorchOn(n), devs[n], frames, elements, flat_check=False)
        except Exception as e:  # noqa: BLE001 - a row
            row("FAIL", f"torch on cuda:{n} (thread)", f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=on, args=(n,)) for n in range(gpus)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for d in devs:
        d.close()
    for n in range(gpus):
        frames_on(n)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-P",
                script,
                "--gpu-worker",
                str(n),
                "--frames",
                str(frames),
                "--elements",
                str(elements),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for n in range(gpus)
    ]
    for n, p in enumerate(procs):
        out, _ = p.communicate()
        rows = [line for line in out.splitlines() if line[:4] in ("PASS", "FAIL", "SKIP")]
        failed = sum(1 for line in rows if line.startswith("FAIL"))
        row(
            "PASS" if p.returncode == 0 and rows and failed == 0 else "FAIL",
            f"one process per GPU: the process on cuda:{n}",
            f"exit {p.returncode}, {len(rows) - failed} rows passed, {failed} failed"
            + ("".join(f"; {line}" for line in rows if line.startswith("FAIL"))),
        )


def frames_on(n: int) -> None:
    """Frames rendered on GPU n are CUDA memory of cuda:n."""
    import torch

    frames = vkhip.Frames(size=(128, 72), slots=2, device=n)
    with frames.render() as f:
        t = torch.from_dlpack(f)
        lit = float(t.float().mean())
        ok = frames.dlpack_device == (2, n) and t.device == torch.device("cuda", n) and lit > 0
    row(
        "PASS" if ok else "FAIL",
        f"Frames(device={n}) on cuda:{n}",
        f"dlpack_device {frames.dlpack_device}, tensor on {t.device}, mean pixel {lit:.1f}",
    )


def gpu_worker(n: int, frames: int, elements: int) -> int:
    """One process on GPU n, the way a torchrun rank opens it: set_device(n), then the default."""
    import torch

    torch.cuda.set_device(n)
    with vkhip.Device() as dev:
        ok = dev.dlpack_device == (2, n)
        row(
            "PASS" if ok else "FAIL",
            f"Device() after set_device({n})",
            f"{dev.name}; DLPack {dev.dlpack_device}",
        )
        loop(TorchOn(n), dev, frames, elements)
    frames_on(n)
    return sum(1 for r in ROWS if r[0] == "FAIL")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--frames", type=int, default=10_000)
    ap.add_argument("--elements", type=int, default=65_536)
    ap.add_argument("--frameworks", default="torch,cupy,jax")
    ap.add_argument("--broken-runs", type=int, default=10)
    ap.add_argument("--vkhip", default=None, help="the vkhip binary, for the viewer's picture")
    ap.add_argument("--out", default=".", help="where captures go")
    ap.add_argument("--gpu-worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--views", type=int, default=7, help="N for the views' rows")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)  # the captures' folder, made as a user would expect
    if args.gpu_worker is not None:
        return gpu_worker(args.gpu_worker, args.frames, args.elements)

    try:
        dev = vkhip.Device("cuda")
    except vkhip.UnavailableError as e:
        row("FAIL", "a CUDA device", str(e))
        return 1
    row("PASS", "a CUDA device", f"{dev.name}; DLPack device {dev.dlpack_device}")
    makers: dict[str, Callable[[], Framework]] = {"torch": Torch, "cupy": CuPy, "jax": Jax}
    for name in args.frameworks.split(","):
        try:
            fw = makers[name]()
        except ImportError as e:
            row("FAIL", name, f"not importable: {e}")
            continue
        try:
            loop(fw, dev, args.frames, args.elements)
        except Exception as e:  # noqa: BLE001 - a row, not a crash
            row("FAIL", f"{name} loop", f"{type(e).__name__}: {e}")
    try:
        profiler_checks(dev, args.frames, args.broken_runs)
    except Exception as e:  # noqa: BLE001
        row("FAIL", "profiler", f"{type(e).__name__}: {e}")
    try:
        foreign_context_check(dev)
    except Exception as e:  # noqa: BLE001
        row("FAIL", "a stream of another CUDA context", f"{type(e).__name__}: {e}")
    try:
        stream_number_checks(dev)
    except Exception as e:  # noqa: BLE001
        row("FAIL", "stream numbers", f"{type(e).__name__}: {e}")
    try:
        viewer_and_frames_checks(args.vkhip, args.out)
    except Exception as e:  # noqa: BLE001
        row("FAIL", "viewer and frames", f"{type(e).__name__}: {e}")
    try:
        views_checks(args.vkhip, args.out, args.views)
    except Exception as e:  # noqa: BLE001
        row("FAIL", "views", f"{type(e).__name__}: {e}")
    try:
        come_and_go_check(args.vkhip)
    except Exception as e:  # noqa: BLE001
        row("FAIL", "come and go", f"{type(e).__name__}: {e}")
    try:
        device_choice_checks()
    except Exception as e:  # noqa: BLE001
        row("FAIL", "device choice", f"{type(e).__name__}: {e}")
    try:
        import torch

        gpus = torch.cuda.device_count()
        if gpus >= 2:
            every_gpu_checks(min(args.frames, 2000), args.elements, os.path.abspath(__file__))
        else:
            frames_on(0)
            row(
                "SKIP",
                "every GPU of the machine",
                f"{gpus} GPU here: the multi-GPU rows need 2 or more",
            )
    except Exception as e:  # noqa: BLE001
        row("FAIL", "every GPU", f"{type(e).__name__}: {e}")
    dev.close()
    failed = sum(1 for r in ROWS if r[0] == "FAIL")
    print(f"{len(ROWS) - failed} passed, {failed} failed")
    return failed


if __name__ == "__main__":
    sys.exit(main())
