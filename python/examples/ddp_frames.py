"""torch.distributed with vkhip: every rank renders its own frames on its own GPU and trains one
small CNN with DistributedDataParallel (NCCL) to read the surface's phase off the picture.

    torchrun --nproc-per-node=G python/examples/ddp_frames.py            # G GPUs of one machine
    torchrun --nnodes=N --node-rank=R --nproc-per-node=G --rdzv-endpoint=HOST:29500 \\
        python/examples/ddp_frames.py                                    # N machines

Each rank: ``LOCAL_RANK`` -> ``torch.cuda.set_device`` -> ``vkhip.Frames()`` and
``vkhip.Device()`` open that GPU by default (the device of the CUDA context current on the
thread). Vulkan renders the app's surface offscreen and hands each frame to torch on the same GPU
without a copy; only the gradients cross GPUs (NCCL), and nothing of vkhip crosses a node.

What is learnt, and checked: the app draws the height field ``sin(6u + φ)·cos(6v + φ)`` with
``φ = 1.5·t`` (rad; t = frame × ``--dt`` seconds, vkhip's ``--time frame``), so each frame's phase
is known exactly. The field is the same at φ and φ + π (both factors change sign), so what a
picture shows is 2φ: the CNN predicts ``(sin 2φ, cos 2φ)``; the mean squared error must fall (the
mean of the last tenth of the steps below ``--max-ratio`` × that of the first tenth) or the
script exits 1. Each rank also writes its predictions into a vkhip buffer that Vulkan reads back
(every ``--check-every`` steps, every value compared) under the vkhip Profiler, whose checker
says whether every access was ordered. Rank 0 prints steps/s, the loss and each rank's verdict,
and a ``RESULT`` line for scripts/multi-gpu-check.sh.

The frames come from ``vkhip.Frames`` one at a time (:class:`FrameSource`); a multi-view source
(several cameras per render) fits behind the same ``batch()``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Any

import numpy as np

import vkhip

WAVE_SPEED = 1.5
"""rad/s: the app's surface phase is 1.5 × its simulation time (src/sim.rs, ``SPEED``)."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    ap.add_argument("--batch", type=int, default=16, help="frames per step per rank (default 16)")
    ap.add_argument(
        "--size", type=int, default=64, help="frame width and height in pixels (default 64)"
    )
    ap.add_argument(
        "--dt",
        type=float,
        default=0.8,
        help="seconds between frames (default 0.8: 2φ steps 2.4 rad)",
    )
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument(
        "--max-ratio", type=float, default=0.8, help="last/first loss must be below this"
    )
    ap.add_argument(
        "--check-every",
        type=int,
        default=20,
        help="Vulkan reads the predictions back every N steps",
    )
    ap.add_argument("--warmup", type=int, default=10, help="steps left out of steps/s")
    args = ap.parse_args(argv)
    if args.steps < 20 or args.batch < 1 or args.size < 16 or args.dt <= 0:
        ap.error("--steps >= 20, --batch >= 1, --size >= 16 and --dt > 0")
    return args


def label(frame: int, dt: float) -> float:
    """What frame ``frame`` shows: twice the surface's phase, 2φ mod 2π (``--time frame``: t =
    frame × dt, φ = 1.5·t; the field at φ + π is the field at φ)."""
    return (2 * WAVE_SPEED * frame * dt) % (2 * math.pi)


class FrameSource:
    """This rank's frames: ``batch(n)`` renders n frames on the rank's GPU and returns them as
    a float tensor ``(n, 3, size, size)`` on that GPU, with their labels (sin 2φ, cos 2φ)."""

    def __init__(self, torch: Any, size: int, dt: float, device: Any) -> None:
        self.torch, self.dt, self.device = torch, dt, device
        # No device=: the GPU torch.cuda.set_device made current on this thread.
        self.frames = vkhip.Frames(
            size=(size, size), slots=3, api="cuda", grid=(64, 64), args=["--dt", repr(dt)]
        )
        if self.frames.dlpack_device != (2, device.index):
            raise SystemExit(
                f"vkhip renders on {self.frames.dlpack_device}, torch works on {device}"
            )

    def batch(self, n: int) -> tuple[Any, Any]:
        torch = self.torch
        s = self.frames.size
        x = torch.empty((n, 3, s[1], s[0]), device=self.device)
        phases = []
        for i in range(n):
            frame = self.frames.render()
            with frame:  # released on torch's stream once the copy below is enqueued
                rgba = torch.from_dlpack(frame)  # (h, w, 4) uint8, Vulkan's memory on this GPU
                x[i] = rgba[..., :3].permute(2, 0, 1).float().div_(255.0)
            phases.append(label(frame.index, self.dt))
        p = torch.tensor(phases, device=self.device)
        return x, torch.stack([p.sin(), p.cos()], dim=1)


def model(torch: Any, size: int) -> Any:
    nn = torch.nn
    side = size // 8
    return nn.Sequential(
        nn.Conv2d(3, 16, 5, stride=2, padding=2),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 32, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(32 * side * side, 64),
        nn.ReLU(),
        nn.Linear(64, 2),
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    if not torch.cuda.is_available():
        print("ddp_frames: needs CUDA GPUs (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    for k, v in (
        ("RANK", "0"),
        ("WORLD_SIZE", "1"),
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", "29517"),
    ):
        os.environ.setdefault(k, v)  # also runs as a plain `python ddp_frames.py` (one rank)
    torch.cuda.set_device(local_rank)
    gpu = torch.device("cuda", local_rank)
    dist.init_process_group(backend="nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)

    # Each rank its own frames: a different time step, so no two ranks see the same phases.
    source = FrameSource(torch, args.size, args.dt * (1 + 0.0137 * rank), gpu)
    net = DistributedDataParallel(model(torch, args.size).to(gpu), device_ids=[local_rank])
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)

    # The predictions' hand-off to Vulkan, under the profiler: torch writes them on its stream,
    # Vulkan reads them back, and the checker says whether every access was ordered.
    dev = vkhip.Device()  # the same GPU: the default after set_device
    prof = vkhip.Profiler(dev)
    track = prof.stream("train", torch.cuda.current_stream())
    preds = dev.buffer((args.batch, 2), "float32", name="predictions")
    checks = equal = 0

    losses = torch.zeros(args.steps, device=gpu)
    t0 = 0.0
    for step in range(args.steps):
        if step == args.warmup:
            torch.cuda.synchronize()
            dist.barrier(device_ids=[local_rank])
            t0 = time.perf_counter()
        x, y = source.batch(args.batch)
        out = net(x)
        loss = torch.nn.functional.mse_loss(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses[step] = loss.detach()
        p = torch.from_dlpack(preds)  # the turn, taken on torch's stream before the scope
        with track.scope("predictions", writes=[preds]):
            p.copy_(out.detach())
        del p
        preds.release(torch.cuda.current_stream())
        if step % args.check_every == 0:
            got = np.frombuffer(preds.vulkan_read(), dtype=np.float32).reshape(args.batch, 2)
            checks += 1
            equal += int(np.array_equal(got, out.detach().cpu().numpy()))
        prof.end_frame()
    torch.cuda.synchronize()
    dist.barrier(device_ids=[local_rank])
    elapsed = time.perf_counter() - t0
    del track
    capture = prof.finish()
    del preds
    dev.close()

    dist.all_reduce(losses)
    losses /= world
    tenth = max(1, args.steps // 10)
    first, last = float(losses[:tenth].mean()), float(losses[-tenth:].mean())
    verdict = {
        "rank": rank,
        "gpu": f"cuda:{local_rank} {torch.cuda.get_device_name(gpu)}",
        "frames": str(source.frames.dlpack_device),
        "clean": capture.is_clean,
        "violations": capture.violation_count,
        "pairs": capture.pairs_checked,
        "equal": f"{equal} of {checks}",
        "ok": capture.is_clean and capture.pairs_checked > 0 and equal == checks,
        "first": capture.violations[0] if capture.violations else "",
    }
    verdicts: list[Any] = [None] * world
    dist.all_gather_object(verdicts, verdict)
    falls = last < args.max_ratio * first
    all_ok = all(v["ok"] for v in verdicts)
    if rank == 0:
        sps = (args.steps - args.warmup) / elapsed
        fps = sps * args.batch
        side = f"{args.size}x{args.size}"
        print(f"ddp_frames: {world} rank(s), {args.steps} steps of {args.batch} frames of {side}")
        print(f"steps/s {sps:.2f} (after {args.warmup} warm-up steps); {fps:.0f} frames/s per rank")
        trend = "falls" if falls else f"DOES NOT FALL below {args.max_ratio} x"
        print(f"loss {first:.4f} -> {last:.4f} (first/last tenth, mean over ranks): {trend}")
        for v in verdicts:
            state = "clean" if v["clean"] else "NOT CLEAN"
            print(
                f"rank {v['rank']} ({v['gpu']}, frames on DLPack {v['frames']}): profiler {state}: "
                f"{v['violations']} violations in {v['pairs']} access pairs; "
                f"Vulkan read the predictions back {v['equal']} times equal"
                + (f"; first violation: {v['first']}" if v["first"] else "")
            )
        print(
            f"RESULT gpus={world} steps_per_s={sps:.3f} frames_per_s_per_rank={fps:.1f} "
            f"loss_first={first:.5f} loss_last={last:.5f} falls={int(falls)} ok={int(all_ok)}"
        )
    dist.destroy_process_group()
    return 0 if falls and all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
