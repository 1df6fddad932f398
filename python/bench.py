"""Benchmarks of the Python door (BENCHMARKS.md), run on the GPU machine by
``scripts/python-bench.sh``. Timings are wall clock over many frames, in rounds interleaved
between the two sides of each comparison; the script prints every round and the medians.

frames: Vulkan frame → torch tensor, K = 3 in flight, a mean per frame on the GPU —
  zero copy: ``torch.from_dlpack(frame)`` (the wait on torch's stream, no host copy), against
  today: Vulkan copies the frame into host-visible memory, the host waits for the fence, and
  ``torch.from_numpy(pixels).cuda()`` (what a user without vkhip writes).
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
from typing import Any, Callable

import vkhip


def frames_round(size: tuple[int, int], n: int, zero_copy: bool) -> float:
    """Frames per second of one round."""
    import numpy as np
    import torch

    frames = vkhip.Frames(size=size, slots=3, api="cuda" if zero_copy else "host")
    means = torch.zeros(n, device="cuda")
    for _ in range(5):  # warm-up: kernels, allocator
        f = frames.render()
        with f:
            means[0] = (
                (torch.from_dlpack(f) if zero_copy else torch.from_numpy(np.from_dlpack(f)).cuda())
                .float()
                .mean()
            )
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(n):
        f = frames.render()
        if zero_copy:
            with f:
                means[i] = torch.from_dlpack(f).float().mean()
        else:
            # Vulkan copied the frame into memory the host maps; the host waits for that copy
            # (Vulkan's own timeline), then torch uploads the pixels and reduces them.
            with f:
                means[i] = torch.from_numpy(np.from_dlpack(f)).cuda().float().mean()
    torch.cuda.synchronize()
    fps = n / (time.perf_counter() - t0)
    del frames
    return fps


def torch_writer(grid: tuple[int, int]) -> Any:
    import torch

    cols, rows = grid
    x = torch.linspace(0.0, 1.0, cols, device="cuda").view(1, cols)
    y = torch.linspace(0.0, 1.0, rows, device="cuda").view(rows, 1)

    def write(frame: int, t: float, heights: vkhip.Heights) -> None:
        h = torch.from_dlpack(heights)
        # The sine wave's shape (vkhip's kernel: a product of two travelling waves).
        torch.mul(torch.sin(x * 12.0 + t * 2.0), torch.cos(y * 9.0 - t * 1.3), out=h)
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
    import torch

    g, s = f"{grid[0]}x{grid[1]}", f"{size[0]}x{size[1]}"
    if python:
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
    ap.add_argument("--json", default=None, help="write the rows here")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []

    if args.only in (None, "frames"):
        for size in [(256, 256), (1280, 720), (1920, 1080), (3840, 2160)]:
            zc, host = interleaved(
                f"frames {size[0]}x{size[1]} (fps: zero copy, host)",
                args.rounds,
                lambda size=size: frames_round(size, args.frames, True),
                lambda size=size: frames_round(size, args.frames, False),
            )
            row = summary(
                "frames",
                {"size": f"{size[0]}x{size[1]}"},
                ("zero_copy_fps", zc),
                ("host_fps", host),
            )
            row["speedup"] = row["zero_copy_fps"] / row["host_fps"]
            rows.append(row)
            print(f"ROW {json.dumps(row)}", flush=True)

    if args.only in (None, "heights"):
        size = (1280, 720)
        for grid in [(256, 256), (1024, 1024)]:
            rust, py = interleaved(
                f"heights {grid[0]}x{grid[1]} (frame ms: rust, torch)",
                args.rounds,
                lambda grid=grid: heights_round(args.vkhip, grid, size, args.frames, False),
                lambda grid=grid: heights_round(args.vkhip, grid, size, args.frames, True),
            )
            grid_s, size_s = f"{grid[0]}x{grid[1]}", f"{size[0]}x{size[1]}"
            row = summary(
                "heights", {"grid": grid_s, "size": size_s}, ("rust_ms", rust), ("torch_ms", py)
            )
            row["ratio"] = row["torch_ms"] / row["rust_ms"]
            rows.append(row)
            print(f"ROW {json.dumps(row)}", flush=True)

    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
