#!/usr/bin/env python3
"""scripts/trace-gaps.py TRACE.json [...] — where a frame's time goes between the two GPU APIs.

Reads traces written by `vkhip --trace` (the vkhip-profile trace format: the tracks are named in
otherData.tracks, the run's configuration is otherData.extra) and prints, per trace (medians over
all traced frames):
  draw         the draw from heights readable to its end (graphics queue)
  queue gap    from the end of draw f to the start of draw f+1 (the moment its heights were
               readable, after its wait for `computed`): time the graphics queue ran nothing of
               vkhip's draws
  kernel       the compute side's write (CUDA kernel / Vulkan dispatch)
  inside       how many draws had a kernel (of another frame) start and end inside them, and where
               in the draw it started (0 = at its start, 1 = at its end)
  draw->kernel from the end of draw f to the start of the next kernel that follows it
  kernel->draw from the end of a kernel to the start of the next draw after it
Needs only Python 3's standard library.
"""
import json
import statistics
import sys


def spans(path):
    doc = json.load(open(path))
    other = doc["otherData"]
    # A thread per track: tid = the track's index + 1.
    names = {i + 1: t["name"] for i, t in enumerate(other.get("tracks", []))}
    out = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "X":
            track = names.get(e["tid"], str(e["tid"]))
            out.setdefault((track, e["name"]), {})[e["args"]["frame"]] = (e["ts"], e["ts"] + e["dur"])
    return other.get("extra", {}), out


def compute_track(s):
    return next((t for (t, n) in s if n == "write slot" and t.startswith("compute")), None)


def med(values):
    return statistics.median(values) if values else float("nan")


def main(paths):
    for path in paths:
        meta, s = spans(path)
        draw = s.get(("graphics", "draw"), {})
        kernel = s.get((compute_track(s), "write slot"), {})
        frames = sorted(draw)
        gaps = [draw[f + 1][0] - draw[f][1] for f in frames if f + 1 in draw]
        inside, where = 0, []
        for f in frames:
            a, b = draw[f]
            hits = [k for g, k in kernel.items() if g != f and a <= k[0] and k[1] <= b]
            inside += bool(hits)
            where += [(k[0] - a) / (b - a) for k in hits if b > a]
        kstarts = sorted(k[0] for k in kernel.values())
        dstarts = sorted(v[0] for v in draw.values())

        def next_after(t, starts):
            return next((x for x in starts if x >= t), None)

        d2k = [n - draw[f][1] for f in frames if (n := next_after(draw[f][1], kstarts)) is not None]
        k2d = [n - k[1] for k in kernel.values() if (n := next_after(k[1], dstarts)) is not None]
        print(f"{path}: {meta.get('backend')} {meta.get('sync')} K={meta.get('slots')} grid {meta.get('grid')}, "
              f"{len(frames)} frames")
        print(f"  draw {med([b - a for a, b in draw.values()]):.1f} µs; queue gap {med(gaps):.1f} µs; "
              f"kernel {med([b - a for a, b in kernel.values()]):.1f} µs")
        print(f"  draws with a kernel inside: {inside} of {len(frames)}"
              + (f" (kernel starts at {med(where):.2f} of the draw)" if where else ""))
        print(f"  draw end -> next kernel start {med(d2k):.1f} µs; kernel end -> next draw start {med(k2d):.1f} µs")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
