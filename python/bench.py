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
  (``vkhip.view``), against ``vkhip --backend cuda`` (the Rust sine kernel), same grid and image.
"""

from __future__ import annotations

import argparse
import json
import re
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


def torch_writer(grid: tuple[int, int]) -> Callable[[int, float, vkhip.Heights], None]:
    import torch

    cols, rows = grid
    x = torch.linspace(-1.0, 1.0, cols, device="cuda").view(1, cols)
    y = torch.linspace(-1.0, 1.0, rows, device="cuda").view(rows, 1)

    def write(frame: int, t: float, heights: vkhip.Heights) -> None:
        h = torch.from_dlpack(heights)
        # The sine wave's shape (src/sim.rs): 0.25 sin(6u + p) cos(6v + p).
        p = (1.5 * t) % 6.283185307179586
        torch.mul(torch.sin(x * 6.0 + p), torch.cos(y * 6.0 + p), out=h)
        h.mul_(0.25)

    return write


FRAME_FPS = re.compile(r"frame time[^\n]*\(([0-9.]+) fps\)")


def frame_mean_ms(report: str) -> float:
    """The report's mean frame time, from its fps figure (more digits than its ms)."""
    m = FRAME_FPS.search(report)
    if not m:
        raise RuntimeError(f"no frame time in the report:\n{report}")
    return 1000.0 / float(m.group(1))


def heights_round(
    vkhip_bin: str, grid: tuple[int, int], size: tuple[int, int], n: int, python: bool
) -> float:
    """The frame mean (ms) of one headless run."""
    g, s = f"{grid[0]}x{grid[1]}", f"{size[0]}x{size[1]}"
    if python:
        import torch

        result = vkhip.view(
            torch_writer(grid),
            api="cuda",
            stream=torch.cuda.current_stream(),
            grid=grid,
            size=size,
            frames=n,
            headless=True,
        )
        return frame_mean_ms(result.report)
    out = subprocess.run(
        [
            vkhip_bin,
            "--headless",
            "--backend",
            "cuda",
            "--grid",
            g,
            "--size",
            s,
            "--frames",
            str(n),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return frame_mean_ms(out)


def one_round(spec: list[str]) -> float:
    """Run one round in this process: what ``--round`` names."""
    kind, *rest = spec
    if kind == "frames":
        w, h, n, zero_copy, scene = rest
        return frames_round((int(w), int(h)), int(n), zero_copy == "1", scene)
    vkhip_bin, gw, gh, w, h, n, python = rest
    return heights_round(vkhip_bin, (int(gw), int(gh)), (int(w), int(h)), int(n), python == "1")


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


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--vkhip", default="vkhip", help="the vkhip binary (release)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--frames", type=int, default=600)
    ap.add_argument("--only", choices=["frames", "heights"], default=None)
    ap.add_argument("--scenes", default="light,default", help="frames: which scenes")
    ap.add_argument("--json", default=None, help="write the rows here")
    ap.add_argument("--round", nargs="+", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.round:
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

    if args.only in (None, "heights"):
        w, h = 1280, 720
        for g in [256, 1024]:
            spec = ["heights", args.vkhip, str(g), str(g), str(w), str(h), str(args.frames)]
            rust, py = interleaved(
                f"heights {g}x{g} (frame ms: rust, torch)",
                args.rounds,
                lambda spec=spec: in_process([*spec, "0"]),
                lambda spec=spec: in_process([*spec, "1"]),
            )
            keys = {"grid": f"{g}x{g}", "size": f"{w}x{h}"}
            row = summary("heights", keys, ("rust_ms", rust), ("torch_ms", py))
            row["ratio"] = row["torch_ms"] / row["rust_ms"]
            rows.append(row)
            print(f"ROW {json.dumps(row)}", flush=True)

    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
