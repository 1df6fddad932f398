#!/usr/bin/env python3
"""scripts/trace-frame.py TRACE.json OUT.png [FRAME] — draw one frame of a vkhip trace.

Every scope of frames FRAME-1 .. FRAME+1 (default: the middle frame of the trace), one row per
track of the trace (render thread, bridge thread, graphics queue, compute), on the trace's one
clock, FRAME's own scopes solid and its neighbours' faded. The hand-offs between them are the
trace's flows (Perfetto draws them as arrows; the report gives their latency and exposed part).
Needs matplotlib (pip install matplotlib); what Perfetto shows of the same file, as a picture
for docs.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.strip().splitlines()[0])
    trace = json.load(open(sys.argv[1]))
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    spans = [e for e in events if e.get("ph") == "X" and "frame" in e.get("args", {})]
    frames = sorted({e["args"]["frame"] for e in spans})
    if not frames:
        sys.exit(f"{sys.argv[1]}: no frame spans")
    frame = int(sys.argv[3]) if len(sys.argv) == 4 else frames[len(frames) // 2]
    shown = [e for e in spans if abs(e["args"]["frame"] - frame) <= 1]
    if not any(e["args"]["frame"] == frame for e in shown):
        sys.exit(f"{sys.argv[1]}: no spans of frame {frame}")
    tids = sorted({e["tid"] for e in shown})
    t0 = min(e["ts"] for e in shown if e["args"]["frame"] == frame)
    colours = plt.get_cmap("tab10")
    kinds = sorted({e["name"] for e in shown})
    fig, ax = plt.subplots(figsize=(12, 0.9 + 0.75 * len(tids)), dpi=110)
    for row, tid in enumerate(reversed(tids)):
        for e in (e for e in shown if e["tid"] == tid):
            own = e["args"]["frame"] == frame
            start, width = e["ts"] - t0, max(e["dur"], 0.3)
            colour = colours(kinds.index(e["name"]) % 10)
            ax.barh(row, width, left=start, height=0.6, color=colour, alpha=1.0 if own else 0.3,
                    edgecolor="black" if own else "none", linewidth=0.5)
            if own and width > 25:
                ax.text(start + width / 2, row, f"{e['name']} {e['dur']:.0f} µs", ha="center",
                        va="center", fontsize=7)
    ax.set_yticks(range(len(tids)), [names.get(t, str(t)) for t in reversed(tids)], fontsize=8)
    ax.set_xlabel(f"µs from frame {frame}'s first span (frames {frame - 1} and {frame + 1} faded)")
    meta = trace.get("otherData", {}).get("extra", {})
    ax.set_title(f"vkhip trace, frame {frame}: {meta.get('backend', '?')}, {meta.get('sync', '?')}, "
                 f"K={meta.get('slots', '?')}, grid {meta.get('grid', '?')}, {meta.get('device', '')}",
                 fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours(i % 10)) for i in range(len(kinds))]
    ax.legend(handles, kinds, fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.25))
    fig.tight_layout()
    fig.savefig(sys.argv[2])


if __name__ == "__main__":
    main()
