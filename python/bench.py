"""Benchmarks of the Python door (BENCHMARKS.md), run on the GPU machine by
``scripts/python-bench.sh``. Each round is a process of its own (as each `vkhip` run is), the
rounds of the two sides of a comparison interleaved; the script prints every round and the
medians with their ranges.

frames: Vulkan frame → torch tensor, K = 3 in flight, a mean per frame on the GPU —
  zero copy: ``torch.from_dlpack(frame)`` (the wait on torch's stream, no host copy), against
  host: Vulkan copies the frame into memory the host maps, the host waits for that copy, and
  ``torch.from_numpy(pixels).cuda()`` (what a user without vkhip writes).
  Two scenes: the app's default (a 512² grid whose heights CUDA writes: itself a Vulkan ⇄ CUDA
  hand-off every frame) and a light one (a 64² grid, heights from Vulkan's compute shader), where
  the frame's own cost is small and the hand-off's stands out.
heights: the app's viewer, headless, with the height field written by torch every frame
  (``vkhip.view``), against ``vkhip --backend cuda`` (the Rust sine kernel), same grid and image,
  same defaults (K = 8, batch 7: the render thread calls the writer 7 times back to back at each
  hand-off, once the GPU has at most one draw left). The torch writer's kernels are loaded
  before the run (``--no-prewarm``: in frame 0, as issue 45 measured), as ``vkhip`` loads its
  own; the writer is the lean one (5 launches, no temporaries; ``--writer plain``: issue 45's,
  8 launches and temporaries a frame).
  ``--torch-flags FLAGS`` (repeatable): a variant of the torch side with these vkhip flags too
  (e.g. ``--compute-wait gpu``: the CUDA stream waits for the slot's last draw, the render
  thread no longer settles that wait on the host first; ``--slots 8 --batch 8``), in the same
  rounds against the same Rust runs.
  ``--breakdown``: one instrumented run of each side (and variant) per size after its rounds: the
  reports' lines, each torch writer call's host time (``torch.from_dlpack``, the torch ops, the
  door between two calls, a whole hand-off) and its GPU span (CUDA events around its torch work).
views (``--only views``; issue 43): N cameras a frame (``Frames(views=N)``), one hand-off.
  - views into torch per second against N (1, 4, …, 1024) at 64², 128², 256², light and default
    scenes, beside the GPU's raster limit for the same N: N / (Vulkan's GPU time of the draw and
    the copy, ``Frames.gpu_times()``: the same frames with no hand-off); today's path (no
    ``views=``) in the same process for the N = 1 comparison; memory each Frames took
    (``torch.cuda.mem_get_info`` before and after it was made). One process per row and round
    (every N of one scene and size), rows interleaved round by round; each cell runs for
    ``--cell-seconds`` after ``--warmup`` frames, at least ``--min-frames``.
  - the 32x32 grid's row (light scene, 128²), beside the light scene's 64x64;
  - hand-offs per frame against N: the app's own frame report (``vkhip --backend cuda --views N
    --envs N``, one hand-off each way a frame: the hand-off lines' waits over the frames);
  - 1920x1080 with N = 4 (views/s) against the host round trip of one view (frames/s);
  - memory per slot and per view, and the largest N the GPU holds at each size.
  The consumer reads every byte of each frame in torch (``--consume sum``: one int64 sum on the
  GPU) before the release.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import vkhip

SCENES = {
    "default": {"grid": None, "args": []},
    "light": {"grid": (64, 64), "args": ["--backend", "vulkan"]},
}


def frames_round(size: tuple[int, int], n: int, zero_copy: bool, scene: str) -> float:
    """Frames per second of one round."""
    import numpy as np
    import torch

    s = SCENES[scene]
    frames = vkhip.Frames(
        size=size,
        slots=3,
        api="cuda" if zero_copy else "host",
        grid=s["grid"],  # type: ignore[arg-type]
        args=list(s["args"]),  # type: ignore[call-overload]
    )
    means = torch.zeros(n, device="cuda")

    def one(i: int) -> None:
        f = frames.render()
        with f:
            if zero_copy:
                means[i] = torch.from_dlpack(f).float().mean()
            else:
                # Vulkan copied the frame into memory the host maps; the host waits for that
                # copy (Vulkan's own timeline), then torch uploads the pixels and reduces them.
                means[i] = torch.from_numpy(np.from_dlpack(f)).cuda().float().mean()

    for _ in range(10):  # warm-up: kernels, allocator
        one(0)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(n):
        one(i)
    torch.cuda.synchronize()
    return n / (time.perf_counter() - t0)


def torch_writer(
    grid: tuple[int, int], stats: dict[str, list[Any]] | None = None, lean: bool = True
) -> tuple[Callable[[int, float, vkhip.Heights], None], Callable[[Any, float], None]]:
    """The writer ``vkhip.view`` calls, and its torch part (``fill(h, t)``) for the prewarm.
    ``lean``: the same values in 5 launches instead of 8 and no temporaries (6u and 6v computed
    once; the product and the 0.25, a power of two and so exact in any order, one ``addcmul``).
    With ``stats``, each call's host times (ns: start, after ``torch.from_dlpack``, end) and a
    pair of CUDA events around its torch work go there (``--breakdown``)."""
    import torch

    cols, rows = grid
    x = torch.linspace(-1.0, 1.0, cols, device="cuda").view(1, cols)
    y = torch.linspace(-1.0, 1.0, rows, device="cuda").view(rows, 1)
    x6, y6 = x * 6.0, y * 6.0
    sx, cy, zero = torch.empty_like(x), torch.empty_like(y), torch.zeros(1, 1, device="cuda")

    def fill(h: Any, t: float) -> None:
        # The sine wave's shape (src/sim.rs): 0.25 sin(6u + p) cos(6v + p).
        p = (1.5 * t) % 6.283185307179586
        if lean:
            torch.add(x6, p, out=sx).sin_()
            torch.add(y6, p, out=cy).cos_()
            torch.addcmul(zero, sx, cy, value=0.25, out=h)
            return
        torch.mul(torch.sin(x * 6.0 + p), torch.cos(y * 6.0 + p), out=h)
        h.mul_(0.25)

    def write(frame: int, t: float, heights: vkhip.Heights) -> None:
        fill(torch.from_dlpack(heights), t)

    if stats is None:
        return write, fill
    clock = time.perf_counter_ns

    def timed(frame: int, t: float, heights: vkhip.Heights) -> None:
        t0 = clock()
        h = torch.from_dlpack(heights)
        t1 = clock()
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        fill(h, t)
        e1.record()
        stats["calls"].append((frame, t0, t1, clock()))
        stats["events"].append((e0, e1))

    return timed, fill


FRAME_FPS = re.compile(r"frame time[^\n]*\(([0-9.]+) fps\)")


def frame_mean_ms(report: str) -> float:
    """The report's mean frame time, from its fps figure (more digits than its ms)."""
    m = FRAME_FPS.search(report)
    if not m:
        raise RuntimeError(f"no frame time in the report:\n{report}")
    return 1000.0 / float(m.group(1))


def heights_round(
    vkhip_bin: str,
    grid: tuple[int, int],
    size: tuple[int, int],
    n: int,
    python: bool,
    prewarm: bool = True,
    stats: dict[str, list[Any]] | None = None,
    lean: bool = True,
    extra: list[str] | None = None,
) -> str:
    """The frame report of one headless run. The torch side runs its writer's torch work once
    on a scratch tensor first (``prewarm``): CUDA loads torch's kernels at their first launch,
    which would otherwise land in frame 0, as the Rust side's kernel is loaded before its first
    frame (``vkhip``'s prewarm)."""
    if python:
        import torch

        write, fill = torch_writer(grid, stats, lean)
        if prewarm:
            t0 = time.perf_counter_ns()
            fill(torch.empty(grid[1], grid[0], device="cuda"), 0.0)
            torch.cuda.synchronize()
            if stats is not None:
                stats["prewarm_ns"] = [time.perf_counter_ns() - t0]
        result = vkhip.view(
            write,
            api="cuda",
            stream=torch.cuda.current_stream(),
            grid=grid,
            size=size,
            frames=n,
            headless=True,
            args=list(extra or []),
        )
        return result.report
    return subprocess.run(
        [
            vkhip_bin,
            "--headless",
            "--backend",
            "cuda",
            "--grid",
            f"{grid[0]}x{grid[1]}",
            "--size",
            f"{size[0]}x{size[1]}",
            "--frames",
            str(n),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


REPORT_LINES = re.compile(
    r"^\s+(frames|frame time|sync|gpu draw|draw|compute|GPU limit|wait\+signal|hand-off \w+"
    r"|overlap|sync overhead|render cpu|cpu phases|checker)\b.*$",
    re.M,
)
FRAME_P50 = re.compile(r"frame time\s+mean ([0-9.]+) ms\s+p50 ([0-9.]+) ms")
BATCH = re.compile(r"^\s+sync\s.*batch (\d+)", re.M)


def q(xs: list[float], f: float) -> float:
    """The f-quantile of xs (nearest rank); nan when empty."""
    if not xs:
        return float("nan")
    ys = sorted(xs)
    return ys[min(len(ys) - 1, int(f * len(ys)))]


def breakdown_round(spec: list[str]) -> dict[str, Any]:
    """``--breakdown``: one instrumented run (``--round breakdown BIN GW GH W H N PY``): the
    report's lines, and on the torch side where each writer call's time goes."""
    vkhip_bin, gw, gh, w, h, n, python, warm, writer, flags = spec
    grid, size = (int(gw), int(gh)), (int(w), int(h))
    stats: dict[str, list[Any]] = {"calls": [], "events": []}
    py = python == "1"
    report = heights_round(
        vkhip_bin,
        grid,
        size,
        int(n),
        py,
        prewarm=warm != "0",
        stats=stats if py else None,
        lean=writer == "lean",
        extra=unpack_flags(flags),
    )
    out: dict[str, Any] = {
        "lines": [m.group(0).strip() for m in REPORT_LINES.finditer(report)],
        "frame_mean_ms": frame_mean_ms(report),
    }
    m = FRAME_P50.search(report)
    if m:
        out["frame_p50_ms"] = float(m.group(2))
    if not py:
        return out
    import torch

    torch.cuda.synchronize()
    b = BATCH.search(report)
    batch = int(b.group(1)) if b else 1
    calls = stats["calls"]
    us = 1e-3
    total = [(c[3] - c[1]) * us for c in calls[1:]]
    dlpack = [(c[2] - c[1]) * us for c in calls[1:]]
    ops = [(c[3] - c[2]) * us for c in calls[1:]]
    # Between two calls of one hand-off (frames s..s+B-1): the door's own time (back in Rust,
    # the GIL released and taken, the next Heights made) - nothing else runs there.
    gaps = [
        (c[1] - p[3]) * us
        for p, c in zip(calls, calls[1:])
        if p[0] // batch == c[0] // batch and c[0] == p[0] + 1
    ]
    bursts: dict[int, list[Any]] = {}
    for c in calls[1:]:
        bursts.setdefault(c[0] // batch, []).append(c)
    burst = [(v[-1][3] - v[0][1]) * us for v in bursts.values() if len(v) == batch]
    gpu = [e0.elapsed_time(e1) * 1e3 for e0, e1 in stats["events"][1:]]
    out.update(
        batch=batch,
        calls=len(calls),
        first_call_us=(calls[0][3] - calls[0][1]) * us if calls else None,
        call_us_p50=q(total, 0.5),
        call_us_p90=q(total, 0.9),
        from_dlpack_us_p50=q(dlpack, 0.5),
        torch_ops_us_p50=q(ops, 0.5),
        door_gap_us_p50=q(gaps, 0.5),
        handoff_host_us_p50=q(burst, 0.5),
        writer_gpu_span_us_p50=q(gpu, 0.5),
        writer_gpu_span_us_p90=q(gpu, 0.9),
        prewarm_ms=stats["prewarm_ns"][0] / 1e6 if "prewarm_ns" in stats else None,
    )
    return out


def pack_flags(flags: list[str]) -> str:
    """vkhip flags as one ``--round`` argument (one that starts with ``--`` would be an option)."""
    return "flags=" + "\x1f".join(flags)


def unpack_flags(packed: str) -> list[str]:
    body = packed.removeprefix("flags=")
    return body.split("\x1f") if body else []


def one_round(spec: list[str]) -> float:
    """Run one round in this process: what ``--round`` names."""
    kind, *rest = spec
    if kind == "frames":
        w, h, n, zero_copy, scene = rest
        return frames_round((int(w), int(h)), int(n), zero_copy == "1", scene)
    vkhip_bin, gw, gh, w, h, n, python, *opts = rest
    warm = opts[0] if opts else "1"
    writer = opts[1] if len(opts) > 1 else "lean"
    flags = opts[2] if len(opts) > 2 else "flags="
    report = heights_round(
        vkhip_bin,
        (int(gw), int(gh)),
        (int(w), int(h)),
        int(n),
        python == "1",
        prewarm=warm != "0",
        lean=writer == "lean",
        extra=unpack_flags(flags),
    )
    return frame_mean_ms(report)


def in_process(spec: list[str]) -> float:
    """One round in a fresh process (python3 -P bench.py --round …): its last line is the figure."""
    out = subprocess.run(
        [sys.executable, "-P", __file__, "--round", *spec],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return float(out.strip().splitlines()[-1])


def interleaved(
    label: str, rounds: int, a: Callable[[], float], b: Callable[[], float]
) -> tuple[list[float], list[float]]:
    """`rounds` rounds of a then b, each printed as it ends."""
    xs: list[float] = []
    ys: list[float] = []
    for r in range(rounds):
        xs.append(a())
        ys.append(b())
        print(f"{label} round {r}: {xs[-1]:.5g}, {ys[-1]:.5g}", flush=True)
    return xs, ys


def summary(
    bench: str, keys: dict[str, str], a: tuple[str, list[float]], b: tuple[str, list[float]]
) -> dict[str, Any]:
    """A row: the medians of both sides and their ranges."""
    row: dict[str, Any] = {"bench": bench, **keys}
    for name, xs in (a, b):
        row[name] = statistics.median(xs)
        row[name.rsplit("_", 1)[0] + "_range"] = [min(xs), max(xs)]
    return row


VIEW_COUNTS = "1,4,16,64,256,1024"
VIEW_SIZES = "64,128,256"


def consume_frame(t: Any, acc: Any, how: str) -> None:
    """What torch does with each frame before the release: read every byte (``sum``: an int64
    sum on the GPU), the float mean the frames rows use (``mean``), or nothing (``none``)."""
    import torch

    if how == "sum":
        acc.add_(t.sum(dtype=torch.int64))
    elif how == "mean":
        acc.add_(t.float().mean().to(torch.int64))


def views_cell(
    size: tuple[int, int],
    views: int | None,
    scene: str,
    grid: tuple[int, int] | None,
    opts: dict[str, Any],
    api: str = "cuda",
) -> dict[str, Any]:
    """One Frames: warm up, then render into torch for ``cell_seconds``; views/s, the raster
    limit from Vulkan's GPU times, the memory it took."""
    import numpy as np
    import torch

    s = SCENES[scene]
    torch.cuda.synchronize()
    free0 = torch.cuda.mem_get_info()[0]
    t_make = time.perf_counter()
    frames = vkhip.Frames(
        size=size,
        views=views,
        slots=opts["slots"],
        api=api,  # type: ignore[arg-type]
        grid=grid if grid is not None else s["grid"],  # type: ignore[arg-type]
        args=list(s["args"]),  # type: ignore[call-overload]
        # The raster limit: Vulkan timestamps around each frame's draw and copy (their own small
        # GPU cost is inside the views/s measured beside it, so the ratio is conservative).
        gpu_times=True,
    )
    make_s = time.perf_counter() - t_make
    mem = free0 - torch.cuda.mem_get_info()[0]
    acc = torch.zeros((), dtype=torch.int64, device="cuda")
    n = frames.views

    def one() -> None:
        f = frames.render()
        with f:
            if api == "cuda":
                t = torch.from_dlpack(f)
            else:
                # The host round trip: Vulkan copied the frame into memory the host maps, the
                # host waits for that copy, torch uploads it.
                t = torch.from_numpy(np.from_dlpack(f)).cuda()
            consume_frame(t, acc, opts["consume"])

    for _ in range(opts["warmup"]):
        one()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    done = 0
    while done < opts["min_frames"] or time.perf_counter() - t0 < opts["cell_seconds"]:
        one()
        done += 1
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    cell: dict[str, Any] = {
        "views": "today" if views is None else views,
        "frames": done,
        "fps": done / wall,
        "views_s": n * done / wall,
        "frame_ms": wall / done * 1e3,
        "mem_bytes": mem,
        "make_s": make_s,
    }
    g = frames.gpu_times()
    if g is not None and g.raster_ns_p50 > 0:
        cell.update(
            raster_views_s=n / (g.raster_ns_p50 * 1e-9),
            draw_ms=g.draw_ns_p50 / 1e6,
            copy_ms=g.copy_ns_p50 / 1e6,
            raster_ms=g.raster_ns_p50 / 1e6,
            of_limit=(n * done / wall) / (n / (g.raster_ns_p50 * 1e-9)),
        )
    return cell


def views_row_round(
    scene: str, size: int, grid: tuple[int, int] | None, counts: list[int], opts: dict[str, Any]
) -> list[dict[str, Any]]:
    """One round of one row: today's path, then every N, in this process."""
    import gc

    import torch

    torch.cuda.init()
    cells = []
    for views in [None, *counts]:
        try:
            cells.append(views_cell((size, size), views, scene, grid, opts))
        except Exception as e:  # noqa: BLE001 - a cell that fails is a row of its own
            cells.append({"views": "today" if views is None else views, "error": f"{e}"})
        gc.collect()
    return cells


def largest_round(size: int, opts: dict[str, Any]) -> dict[str, Any]:
    """Memory per slot and per view at ``size``², and the largest N the GPU holds: the limit the
    door names for an impossible N, then that N made and drawn (halved until it is)."""
    import gc

    import torch

    torch.cuda.init()
    out: dict[str, Any] = {"size": f"{size}x{size}"}
    one = dict(opts, warmup=2, min_frames=2, cell_seconds=0.0)
    mem = {}
    for views, slots in [(1, 3), (256, 1), (256, 3)]:
        cell = views_cell((size, size), views, "light", None, dict(one, slots=slots))
        mem[(views, slots)] = cell["mem_bytes"]
        gc.collect()
    out["slot_bytes_256_views"] = (mem[(256, 3)] - mem[(256, 1)]) / 2
    out["view_bytes_3_slots"] = (mem[(256, 3)] - mem[(1, 3)]) / 255
    out["frame_bytes_per_view"] = size * size * 4
    try:
        vkhip.Frames(size=(size, size), views=65536, api="cuda", grid=(64, 64))
        out["limit"] = "none named: 65536 views (the flag's most) were accepted"
        n = 65536
    except vkhip.LimitError as e:
        m = re.search(r"past this device's (\w+) \((\d+)\)", str(e))
        out["limit"] = str(e)
        # The limit's value when it counts layers; a byte limit (the heap) says nothing of N.
        n = min(int(m.group(2)), 65536) if m and "Layers" in m.group(1) else 2048
    while n >= 1:
        try:
            cell = views_cell((size, size), n, "light", None, dict(one, slots=opts["slots"]))
            out["largest_n"] = n
            out["largest_mem_bytes"] = cell["mem_bytes"]
            out["largest_views_s"] = cell["views_s"]
            break
        except Exception as e:  # noqa: BLE001 - too many: halve
            out.setdefault("refused", []).append(f"{n}: {type(e).__name__}: {e}")
            gc.collect()
            n //= 2
    return out


HANDOFF = re.compile(r"^\s+(hand-off \w+)\s.*?(\d+) waits\)", re.M)
FRAMES_LINE = re.compile(r"^\s+frames\s+(\d+)", re.M)


def handoffs_round(
    vkhip_bin: str, size: int, counts: list[int], frames: int
) -> list[dict[str, Any]]:
    """Hand-offs per frame against N, from the app's own frame report (its profiler sees both
    sides): ``vkhip --headless --backend cuda --views N --envs N`` with one hand-off each way per
    frame (K = 3, B = 1): CUDA writes the ``(N, rows, cols)`` heights, Vulkan draws the N views."""
    import subprocess

    cells = []
    for n in counts:
        cmd = [vkhip_bin, "--headless", "--backend", "cuda", "--sync", "external", "--slots", "3",
               "--batch", "1", "--views", str(n), "--envs", str(n), "--size", f"{size}x{size}",
               "--grid", "64x64", "--frames", str(frames)]  # fmt: skip
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            cells.append({"views": n, "error": (run.stderr or run.stdout).strip()[-300:]})
            continue
        report = run.stdout
        waits = {name: int(w) for name, w in HANDOFF.findall(report)}
        m = FRAMES_LINE.search(report)
        counted = int(m.group(1)) if m else frames
        cells.append(
            {
                "views": n,
                "frames": counted,
                "waits": waits,
                "handoffs_per_frame": sum(waits.values()) / max(counted, 1),
                "lines": [
                    ln.strip() for ln in report.splitlines() if ln.strip().startswith("hand-off")
                ],
                "frame_ms": frame_mean_ms(report),
            }
        )
    return cells


def median_cell(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians (and ranges) of one cell's rounds."""
    row: dict[str, Any] = {}
    for key in ["views_s", "raster_views_s", "of_limit", "frame_ms", "raster_ms"]:
        xs = [c[key] for c in cells if key in c]
        if xs:
            row[key] = statistics.median(xs)
            row[key + "_range"] = [min(xs), max(xs)]
    for key in ["draw_ms", "copy_ms", "mem_bytes", "frames"]:
        xs = [c[key] for c in cells if key in c]
        if xs:
            row[key] = statistics.median(xs)
    return row


def views_benchmarks(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    """``--only views`` (module note)."""
    global DEADLINE
    t_start = time.perf_counter()
    DEADLINE = t_start + args.stop_after

    def save() -> None:
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)

    counts = [int(c) for c in args.counts.split(",")]
    sizes = [int(c) for c in args.sizes.split(",")]
    opts = {
        "slots": 3,
        "warmup": args.warmup,
        "min_frames": args.min_frames,
        "cell_seconds": args.cell_seconds,
        "consume": args.consume,
    }
    spec_opts = json.dumps(opts)
    # (label, scene, size, grid): the matrix, then the 32x32 grid's row at 128².
    row_keys = [(sc, sc, z, "-") for sc in args.scenes.split(",") for z in sizes if args.matrix]
    if args.grid32:
        row_keys.append(("light 32x32", "light", 128, "32x32"))
    ccsv = ",".join(map(str, counts))
    cells_of: dict[tuple[str, int, Any], list[dict[str, Any]]] = {}
    for r in range(args.rounds):
        for label, scene, z, grid in row_keys:
            got = in_process_json(["views", scene, str(z), grid, ccsv, spec_opts])
            if isinstance(got, dict):  # the process failed: every cell of this round
                got = [{"views": v, **got} for v in ["today", *counts]]
            for c in got:
                cells_of.setdefault((label, z, c["views"]), []).append(c)
            brief = ", ".join(
                f"{c['views']}: {c['views_s']:.0f}" if "views_s" in c else f"{c['views']}: error"
                for c in got
            )
            print(f"views {label} {z}x{z} round {r} (views/s): {brief}", flush=True)
    table = []
    for (label, z, views), cells in cells_of.items():
        ok = [c for c in cells if "views_s" in c]
        row: dict[str, Any] = {"bench": "views", "scene": label, "size": f"{z}x{z}", "views": views}
        row.update(median_cell(ok) if ok else {"error": cells[0].get("error", "?")})
        row["rounds_ok"] = len(ok)
        rows.append(row)
        table.append(row)
    # The rows in full go to --json; here one line each: medians, the views/s range, MiB taken.
    print(
        "\nscene       size    N      views/s  min-max         raster limit  of it  "
        "frame ms  draw ms  copy ms   MiB"
    )
    nan = float("nan")
    for row in table:
        head = f"{row['scene']:11} {row['size']:7} {row['views']!s:6}"
        if "views_s" not in row:
            print(f"{head} error: {row['error']}")
            continue
        spread = "{:.0f}-{:.0f}".format(*row["views_s_range"])
        print(
            f"{head} {row['views_s']:8.0f}  {spread:15} {row.get('raster_views_s', nan):10.0f}  "
            f"{row.get('of_limit', nan):5.2f}  {row['frame_ms']:8.4f}  "
            f"{row.get('draw_ms', nan):7.4f}  {row.get('copy_ms', nan):7.4f}  "
            f"{row.get('mem_bytes', nan) / 2**20:5.0f}"
        )
    for label, _, z, _ in row_keys:
        today = cells_of.get((label, z, "today"), [])
        one = cells_of.get((label, z, 1), [])
        t = [c["frame_ms"] for c in today if "frame_ms" in c]
        o = [c["frame_ms"] for c in one if "frame_ms" in c]
        if t and o:
            ratio = statistics.median(o) / statistics.median(t)
            print(
                f"N = 1 against today ({label} {z}x{z}): {statistics.median(o):.4f} ms vs "
                f"{statistics.median(t):.4f} ms a frame = {ratio:.3f}x",
                flush=True,
            )
        passes = [
            v
            for v in counts
            if statistics.median(
                [c.get("of_limit", 0.0) for c in cells_of.get((label, z, v), [])] or [0.0]
            )
            >= 0.5
        ]
        if passes:
            print(f"first N at >= 0.5x the raster limit ({label} {z}x{z}): {passes[0]}")

    save()
    if args.handoffs:
        got = in_process_json(["handoffs", "128", ccsv, str(args.handoff_frames), args.vkhip])
        print(
            "\nhand-offs per frame (the app's report: --backend cuda --views N --envs N,"
            " K=3, B=1, 128x128):"
        )
        for c in got if isinstance(got, list) else [got]:
            rows.append({"bench": "views-handoffs", "size": "128x128", **c})
            if "error" in c:
                print(f"  error: {c['error']}")
                continue
            print(
                f"  N = {c['views']:5}: {len(c['waits'])} edges, {c['handoffs_per_frame']:.2f} "
                f"waits a frame ({c['waits']} over {c['frames']} frames; the first K - 1 frames "
                f"wait for no earlier one), frame {c['frame_ms']:.3f} ms",
                flush=True,
            )
            if c["views"] == 1 or not c["waits"]:
                for line in c["lines"]:
                    print(f"      {line}")

    save()
    if args.hd:
        zc, host = interleaved(
            "views 1920x1080 (views/s: N = 4 zero copy; frames/s: one view, host round trip)",
            args.rounds,
            lambda: float(in_process_json(["hd", "cuda", "4", spec_opts]).get("views_s", "nan")),
            lambda: float(in_process_json(["hd", "host", "0", spec_opts]).get("views_s", "nan")),
        )
        row = summary("views-hd", {"size": "1920x1080"}, ("n4_views_s", zc), ("host_one_s", host))
        row["speedup_per_view"] = row["n4_views_s"] / row["host_one_s"]
        rows.append(row)
        print(f"ROW {json.dumps(row)}", flush=True)

    save()
    if args.largest:
        for z in sizes:
            out = in_process_json(["largest", str(z), spec_opts])
            rows.append({"bench": "views-memory", "size": f"{z}x{z}", **out})
            if "error" in out:
                print(f"memory {z}x{z}: error: {out['error']}")
                continue
            print(
                f"memory {z}x{z}: a slot of 256 views "
                f"{out['slot_bytes_256_views'] / 2**20:.1f} MiB, "
                f"a view (3 slots and the target) {out['view_bytes_3_slots'] / 2**10:.0f} KiB "
                f"(its pixels {out['frame_bytes_per_view'] / 2**10:.0f} KiB); largest N "
                f"{out.get('largest_n')} ({out.get('largest_mem_bytes', 0) / 2**20:.0f} MiB, "
                f"{out.get('largest_views_s', 0):.0f} views/s); limit: {out['limit']}",
                flush=True,
            )
            for refused in out.get("refused", []):
                print(f"    refused {refused}")
    print(f"views benchmarks: {time.perf_counter() - t_start:.0f} s", flush=True)


def views_round(spec: list[str]) -> Any:
    """One views round in this process (``--round views|handoffs|hd|largest …``)."""
    kind, *rest = spec
    if kind == "views":
        scene, z, grid, ccsv, spec_opts = rest
        g = None if grid == "-" else tuple(int(v) for v in grid.split("x"))
        counts = [int(c) for c in ccsv.split(",")]
        return views_row_round(scene, int(z), g, counts, json.loads(spec_opts))  # type: ignore[arg-type]
    if kind == "handoffs":
        z, ccsv, frames, vkhip_bin = rest
        return handoffs_round(vkhip_bin, int(z), [int(c) for c in ccsv.split(",")], int(frames))
    if kind == "hd":
        api, n, spec_opts = rest
        views = int(n) or None
        return views_cell((1920, 1080), views, "light", None, json.loads(spec_opts), api=api)
    z, spec_opts = rest
    return largest_round(int(z), json.loads(spec_opts))


# Past this time.perf_counter() value no views round starts (``--stop-after``).
DEADLINE = float("inf")


def in_process_json(spec: list[str]) -> Any:
    """One views round in a fresh process: its last line is the JSON of what it measured; a
    process that fails is ``{"error": …}`` (its last lines printed), not the end of the run; past
    ``--stop-after`` none starts (``{"error": "skipped: …"}``)."""
    if time.perf_counter() > DEADLINE:
        return {"error": "skipped: past --stop-after"}
    done = subprocess.run(
        [sys.executable, "-P", __file__, "--round", *spec], capture_output=True, text=True
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        print(f"  round {' '.join(spec[:3])} failed ({done.returncode}): {' | '.join(tail)}")
        return {"error": tail[-1] if tail else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_breakdown(label: str, b: dict[str, Any]) -> None:
    """``--breakdown``'s lines for one side (module note of ``breakdown_round``)."""
    if "error" in b:
        print(f"breakdown {label}: error: {b['error']}", flush=True)
        return
    print(
        f"breakdown {label}: frame mean {b['frame_mean_ms']:.4f} ms, "
        f"p50 {b.get('frame_p50_ms', float('nan')):.4f} ms",
        flush=True,
    )
    for line in b["lines"]:
        print(f"    {line}")
    if "call_us_p50" not in b:
        return
    print(
        f"    writer (host, µs p50 over {b['calls'] - 1} calls after the first): call "
        f"{b['call_us_p50']:.1f} (p90 {b['call_us_p90']:.1f}) = torch.from_dlpack "
        f"{b['from_dlpack_us_p50']:.1f} + torch ops {b['torch_ops_us_p50']:.1f}; the door "
        f"between two calls of a hand-off {b['door_gap_us_p50']:.1f}; one hand-off of "
        f"{b['batch']} calls {b['handoff_host_us_p50']:.1f}; the first call "
        f"{b['first_call_us'] or float('nan'):.0f}; the prewarm (before the run) "
        f"{b['prewarm_ms'] or float('nan'):.1f} ms",
        flush=True,
    )
    print(
        f"    writer (GPU, µs): its torch work from the first op's start to the last's end "
        f"p50 {b['writer_gpu_span_us_p50']:.1f}, p90 {b['writer_gpu_span_us_p90']:.1f} "
        "(CUDA events; longer than the kernels when the GPU waits for the host's launches)",
        flush=True,
    )


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--vkhip", default="vkhip", help="the vkhip binary (release)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--frames", type=int, default=600)
    ap.add_argument(
        "--only",
        choices=["frames", "heights", "views"],
        default=None,
        help="one benchmark (default: frames and heights; views runs only when named)",
    )
    ap.add_argument("--scenes", default="light,default", help="frames, views: which scenes")
    views = ap.add_argument_group("views (--only views)")
    views.add_argument("--counts", default=VIEW_COUNTS, help="N, the views a frame")
    views.add_argument("--sizes", default=VIEW_SIZES, help="square sizes (pixels a side)")
    views.add_argument("--cell-seconds", type=float, default=0.25, help="measured time a cell")
    views.add_argument("--min-frames", type=int, default=4, help="measured frames a cell, at least")
    views.add_argument("--warmup", type=int, default=3, help="frames before a cell's clock")
    views.add_argument("--consume", choices=["sum", "mean", "none"], default="sum")
    views.add_argument("--handoff-frames", type=int, default=120)
    views.add_argument(
        "--stop-after",
        type=float,
        default=540.0,
        help="seconds after which no round starts (the device's calls end at 600 s)",
    )
    for name, what in [
        ("matrix", "the rows of every scene and size (views/s against N)"),
        ("grid32", "the 32x32 grid's row at 128²"),
        ("handoffs", "hand-offs per frame against N"),
        ("hd", "1920x1080, N = 4, against the host round trip"),
        ("largest", "memory per slot and view, the largest N"),
    ]:
        views.add_argument(
            f"--no-{name}", dest=name, action="store_false", help=f"leave out {what}"
        )
    heights = ap.add_argument_group("heights")
    heights.add_argument(
        "--no-prewarm",
        dest="prewarm",
        action="store_false",
        help="torch side: leave out the writer's warm-up on a scratch tensor before the run "
        "(torch's kernels then load in frame 0; the Rust side's kernel loads before its first)",
    )
    heights.add_argument(
        "--writer",
        choices=["lean", "plain"],
        default="lean",
        help="the torch writer: lean (5 launches, no temporaries) or plain (issue 45's: 8 "
        "launches, temporaries each frame); the same values",
    )
    heights.add_argument(
        "--torch-flags",
        action="append",
        default=[],
        metavar="FLAGS",
        help="a variant of the torch side: these vkhip flags too (e.g. '--compute-wait gpu'), "
        "measured in the same rounds against the same Rust runs; repeatable",
    )
    heights.add_argument(
        "--breakdown",
        action="store_true",
        help="after each size's rounds, one instrumented run of each side: the report's lines "
        "and, for torch, each writer call's host time (torch.from_dlpack, the torch ops, the "
        "door between calls, a hand-off) and its GPU span (CUDA events)",
    )
    ap.add_argument("--json", default=None, help="write the rows here")
    ap.add_argument("--round", nargs="+", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.round:
        if args.round[0] in ("views", "handoffs", "hd", "largest"):
            print(json.dumps(views_round(args.round)), flush=True)
        elif args.round[0] == "breakdown":
            print(json.dumps(breakdown_round(args.round[1:])), flush=True)
        else:
            print(one_round(args.round), flush=True)
        return 0
    rows: list[dict[str, Any]] = []

    if args.only in (None, "frames"):
        for scene in args.scenes.split(","):
            for w, h in [(256, 256), (1280, 720), (1920, 1080), (3840, 2160)]:
                spec = ["frames", str(w), str(h), str(args.frames)]
                zc, host = interleaved(
                    f"frames {scene} {w}x{h} (fps: zero copy, host)",
                    args.rounds,
                    lambda spec=spec, scene=scene: in_process([*spec, "1", scene]),
                    lambda spec=spec, scene=scene: in_process([*spec, "0", scene]),
                )
                keys = {"scene": scene, "size": f"{w}x{h}"}
                row = summary("frames", keys, ("zero_copy_fps", zc), ("host_fps", host))
                row["speedup"] = row["zero_copy_fps"] / row["host_fps"]
                rows.append(row)
                print(f"ROW {json.dumps(row)}", flush=True)

    if args.only == "views":
        views_benchmarks(args, rows)

    if args.only in (None, "heights"):
        w, h = 1280, 720
        warm = "1" if args.prewarm else "0"
        # The torch side with vkhip's defaults, then each --torch-flags variant.
        variants = [[], *[shlex.split(v) for v in args.torch_flags]]
        for g in [256, 1024]:
            spec = ["heights", args.vkhip, str(g), str(g), str(w), str(h), str(args.frames)]
            rust: list[float] = []
            py: list[list[float]] = [[] for _ in variants]
            for r in range(args.rounds):
                rust.append(in_process([*spec, "0"]))
                for i, v in enumerate(variants):
                    py[i].append(in_process([*spec, "1", warm, args.writer, pack_flags(v)]))
                figures = ", ".join(f"{xs[-1]:.5g}" for xs in py)
                names = "".join(", torch " + " ".join(v) for v in variants[1:])
                print(
                    f"heights {g}x{g} round {r} (frame ms: rust, torch{names}): "
                    f"{rust[-1]:.5g}, {figures}",
                    flush=True,
                )
            for v, xs in zip(variants, py):
                keys = {
                    "grid": f"{g}x{g}",
                    "size": f"{w}x{h}",
                    "prewarm": args.prewarm,
                    "writer": args.writer,
                    "torch_flags": " ".join(v),
                }
                row = summary("heights", keys, ("rust_ms", rust), ("torch_ms", xs))
                row["ratio"] = row["torch_ms"] / row["rust_ms"]
                rows.append(row)
                print(f"ROW {json.dumps(row)}", flush=True)
            if args.breakdown:
                got = {}
                for side, flag, v in [("rust", "0", []), *[("torch", "1", v) for v in variants]]:
                    label = f"{g}x{g} {side}" + (f" {' '.join(v)}" if v else "")
                    b = in_process_json(
                        ["breakdown", *spec[1:], flag, warm, args.writer, pack_flags(v)]
                    )
                    rows.append({"bench": "heights-breakdown", "side": label, **b})
                    print_breakdown(label, b)
                    got.setdefault(side, b)
                r, t = got["rust"], got["torch"]
                if "frame_mean_ms" in r and "handoff_host_us_p50" in t:
                    print(
                        f"breakdown {g}x{g}: torch - rust frame mean "
                        f"{(t['frame_mean_ms'] - r['frame_mean_ms']) * 1e3:.1f} µs; the torch "
                        "hand-off's host time per frame "
                        f"{t['handoff_host_us_p50'] / t['batch']:.1f}"
                        " µs (the render thread runs the B calls of a hand-off back to back once "
                        "the GPU has at most one draw left: what they take past it, the GPU idles)",
                        flush=True,
                    )

    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
