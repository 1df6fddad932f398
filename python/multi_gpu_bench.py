"""Every GPU of the machine (issue 44; BENCHMARKS.md), run by ``scripts/multi-gpu-check.sh``:

frames: Vulkan frames into torch (zero copy, ``torch.from_dlpack(frame)``, a mean per frame on
  the GPU, K = 3 in flight) per second on each GPU **alone** (one process, the others idle), then
  on **every GPU at once** (one process per GPU, started together once all are set up); scaling =
  the sum at once / the sum alone (1.0: linear). Each process opens its GPU the way a torchrun
  rank does: ``torch.cuda.set_device(n)``, then vkhip's default.
ddp: ``python/examples/ddp_frames.py`` under ``torchrun --standalone --nproc-per-node=g`` on the
  first g GPUs for g = 1, 2, 4, 8 (those the machine has): steps/s, the loss and the verdicts.

Prints every measurement, then the tables for BENCHMARKS.md. Exit status: 1 if a run failed (a
worker, or the example: loss not falling or a verdict not clean).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

SCENES = {
    # The app's default scene: a 512² grid whose heights CUDA writes every frame.
    "default": {"grid": None, "args": []},
    # A light scene: a 64² grid, heights from Vulkan's compute shader.
    "light": {"grid": (64, 64), "args": ["--backend", "vulkan"]},
}


def worker(n: int, scene: str, size: tuple[int, int], frames: int) -> int:
    """One GPU: set up, say READY, wait for GO on stdin, run, print FPS."""
    import torch

    import vkhip

    torch.cuda.set_device(n)
    s = SCENES[scene]
    source = vkhip.Frames(size=size, slots=3, api="cuda", grid=s["grid"], args=list(s["args"]))
    if source.dlpack_device != (2, n):
        print(f"FAIL frames on {source.dlpack_device}, not (2, {n})", flush=True)
        return 1
    means = torch.zeros(frames, device="cuda")

    def one(i: int) -> None:
        f = source.render()
        with f:
            means[i] = torch.from_dlpack(f).float().mean()

    for _ in range(30):  # warm-up: kernels, allocator
        one(0)
    torch.cuda.synchronize()
    print("READY", flush=True)
    sys.stdin.readline()
    t0 = time.perf_counter()
    for i in range(frames):
        one(i)
    torch.cuda.synchronize()
    fps = frames / (time.perf_counter() - t0)
    lit = float(means.min())
    ok = lit > 0
    print(f"{'FPS' if ok else 'FAIL'} gpu={n} fps={fps:.1f} min_mean_pixel={lit:.1f}", flush=True)
    return 0 if ok else 1


def run_together(gpus: list[int], scene: str, size: tuple[int, int], frames: int) -> list[float]:
    """One process per GPU in ``gpus``, started together: each one's frames per second."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-P", __file__, "--worker", str(n), "--scene", scene]
            + ["--size", f"{size[0]}x{size[1]}", "--frames", str(frames)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in gpus
    ]
    for n, p in zip(gpus, procs):
        assert p.stdout is not None
        line = p.stdout.readline()
        if not line.startswith("READY"):
            raise RuntimeError(f"GPU {n}: {line.strip() or 'no READY'}")
    for p in procs:  # all set up: go
        assert p.stdin is not None
        p.stdin.write("GO\n")
        p.stdin.flush()
    out = []
    for n, p in zip(gpus, procs):
        text, _ = p.communicate()
        m = re.search(r"^FPS gpu=\d+ fps=([0-9.]+)", text, re.M)
        if p.returncode != 0 or m is None:
            raise RuntimeError(f"GPU {n}: exit {p.returncode}: {text.strip()}")
        out.append(float(m.group(1)))
    return out


def ddp(g: int, steps: int, script: str) -> dict[str, str]:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=",".join(str(i) for i in range(g)))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={g}"]
    cmd += [script, "--steps", str(steps)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    print(p.stdout, end="", flush=True)
    m = re.search(r"^RESULT (.*)$", p.stdout, re.M)
    if p.returncode != 0 or m is None:
        print(p.stderr[-3000:], file=sys.stderr)
        return {"gpus": str(g), "failed": f"exit {p.returncode}"}
    return dict(kv.split("=", 1) for kv in m.group(1).split())


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--frames", type=int, default=3000, help="frames per measurement")
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--scenes", default="light,default")
    ap.add_argument("--steps", type=int, default=300, help="DDP example steps")
    ap.add_argument("--only", choices=["frames", "ddp"], default=None)
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--scene", default="light", help=argparse.SUPPRESS)
    args = ap.parse_args()
    w, h = (int(v) for v in args.size.split("x"))
    if args.worker is not None:
        return worker(args.worker, args.scene, (w, h), args.frames)

    import torch

    count = torch.cuda.device_count()
    names = [torch.cuda.get_device_name(i) for i in range(count)]
    print(f"{count} GPU(s): {', '.join(names)}", flush=True)
    failed = 0
    frame_rows = []
    if args.only in (None, "frames"):
        for scene in args.scenes.split(","):
            try:
                alone = [run_together([n], scene, (w, h), args.frames)[0] for n in range(count)]
                print(f"frames {scene} alone: {alone}", flush=True)
                together = run_together(list(range(count)), scene, (w, h), args.frames)
                print(f"frames {scene} every GPU at once: {together}", flush=True)
                frame_rows.append((scene, alone, together))
            except RuntimeError as e:
                print(f"FAIL frames {scene}: {e}", flush=True)
                failed += 1
    ddp_rows = []
    if args.only in (None, "ddp"):
        script = os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "examples", "ddp_frames.py"
        )
        for g in [g for g in (1, 2, 4, 8) if g <= count] + (
            [count] if count not in (1, 2, 4, 8) else []
        ):
            r = ddp(g, args.steps, script)
            ddp_rows.append(r)
            failed += int("failed" in r or r.get("falls") != "1" or r.get("ok") != "1")

    gpu = names[0] if names else "?"
    print(f"\n### Frames into torch per GPU ({w}x{h}, zero copy, K = 3; {count}x {gpu})\n")
    print("| scene | GPU | alone (frames/s) | every GPU at once (frames/s) | at once / alone |")
    print("|---|---|---|---|---|")
    for scene, alone, together in frame_rows:
        for n, (a, t) in enumerate(zip(alone, together)):
            print(f"| {scene} | {n} | {a:.0f} | {t:.0f} | {t / a:.3f} |")
        print(
            f"| {scene} | all {count} | {sum(alone):.0f} (sum) | {sum(together):.0f} (sum) | "
            f"**{sum(together) / sum(alone):.3f}** (scaling) |"
        )
    if ddp_rows:
        print(f"\n### DDP example (python/examples/ddp_frames.py, {args.steps} steps)\n")
        print("| GPUs | steps/s | frames/s per rank | loss first -> last | verdicts |")
        print("|---|---|---|---|---|")
        for r in ddp_rows:
            if "failed" in r:
                print(f"| {r['gpus']} | FAILED ({r['failed']}) | | | |")
                continue
            sps, fps = float(r["steps_per_s"]), float(r["frames_per_s_per_rank"])
            print(
                f"| {r['gpus']} | {sps:.2f} | {fps:.0f} | "
                f"{float(r['loss_first']):.4f} -> {float(r['loss_last']):.4f} | "
                f"{'all clean' if r['ok'] == '1' else 'NOT CLEAN'} |"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
