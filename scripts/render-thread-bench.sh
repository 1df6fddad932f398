#!/usr/bin/env bash
# scripts/render-thread-bench.sh BEFORE_BIN AFTER_BIN OUTDIR — the render thread's CPU per frame
# at K = 1 (issue 45, item 2), two builds side by side, interleaved; no cargo needed.
#
# Configurations (RT_CONFIGS, default all four): vulkan, cuda-in-vulkan, cuda, cuda-outline
# (`--backend cuda --post outline`). Each run is
#   BIN --headless --grid 256x256 --size 320x180 --slots 1 --frames RT_FRAMES (3000) --backend …
# with the profiler on (the default). RT_ROUNDS rounds (3); in each, every configuration runs once
# per build, the builds' order swapped every round. From each run's report: `render cpu` p50 and
# mean, and the `cpu phases` line (wait, hand-off, record+submit, rest: p50 of each, µs).
# RT_BEFORE_ARGS and RT_AFTER_ARGS (default empty) are added to each build's runs, so one build
# can be compared with itself under two options (`RT_BEFORE_ARGS="--enqueue render"`, the same
# binary twice: the CUDA calls on the render thread, then on the submission thread).
# Output: OUTDIR/<round>-<build>-<config>.log, OUTDIR/summary.txt: every run (with the report's
# frame time p50, ms), then per configuration and build the median of the runs' figures with
# their range, and after/before.
# About 2 s a run on an H200 (start-up included): 24 runs, under a minute of GPU time.
# Exit 0 when every run succeeded, 1 when one failed (the summary says which), 2 for bad usage.
set -u
set -o pipefail

. "$(dirname "$0")/lib/before-after.sh"
before_after_args render-thread-bench "$@"
ROUNDS=${RT_ROUNDS:-3}
FRAMES=${RT_FRAMES:-3000}
CONFIGS=${RT_CONFIGS:-vulkan cuda-in-vulkan cuda cuda-outline}

args_of() {
  case "$1" in
    cuda-outline) echo "--backend cuda --post outline" ;;
    *) echo "--backend $1" ;;
  esac
}

failed=0
t0=$(date +%s)
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
  for config in $CONFIGS; do
    for which in $order; do
      bin=$BEFORE
      extra=${RT_BEFORE_ARGS:-}
      if [ "$which" = after ]; then bin=$AFTER; extra=${RT_AFTER_ARGS:-}; fi
      log=$OUTDIR/$round-$which-$config.log
      # shellcheck disable=SC2046,SC2086
      if ! timeout 120 "$bin" --headless --grid 256x256 --size 320x180 --slots 1 --frames "$FRAMES" \
        $(args_of "$config") $extra >"$log" 2>&1; then
        echo "render-thread-bench: failed: $bin $(args_of "$config") $extra (see $log)" >&2
        failed=1
      fi
    done
  done
  echo "   round $round of $ROUNDS done ($(($(date +%s) - t0)) s)" >&2
done

python3 - "$OUTDIR" "$ROUNDS" "$BEFORE ${RT_BEFORE_ARGS:-}" "$AFTER ${RT_AFTER_ARGS:-}" "$FRAMES" "$CONFIGS" \
  >"$OUTDIR/summary.txt" <<'EOF'
import os, re, statistics, sys
out, rounds, before_bin, after_bin, frames, configs = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
configs = configs.split()
cpu_re = re.compile(r"render cpu\s+p50 ([0-9.]+) µs.*?mean ([0-9.]+) µs")
phases_re = re.compile(r"cpu phases\s+wait ([0-9.]+)\s+hand-off ([0-9.]+)\s+record\+submit ([0-9.]+)\s+rest ([0-9.]+)")
frame_re = re.compile(r"frame time\s+mean [0-9.]+ ms\s+p50 ([0-9.]+) ms")
names = ("p50", "mean", "wait", "hand-off", "rec+sub", "rest", "frame ms")

def read(path):
    if not os.path.exists(path):
        return None
    text = open(path, encoding="utf-8", errors="replace").read()
    c, p, f = cpu_re.search(text), phases_re.search(text), frame_re.search(text)
    if not c or not p or not f:
        return None
    return [float(x) for x in c.groups() + p.groups() + f.groups()]

print(f"render thread at --slots 1, 256x256 @ 320x180, {frames} frames, {rounds} interleaved rounds")
print(f"before {before_bin}\nafter  {after_bin}")
print("µs; p50 and mean: the report's `render cpu`; wait, hand-off, rec+sub, rest: its `cpu phases`;")
print("frame ms: the report's frame time p50\n")
print(f"{'run':28s}" + "".join(f"{n:>10s}" for n in names))
runs = {}
for config in configs:
    for which in ("before", "after"):
        for r in range(1, rounds + 1):
            v = read(os.path.join(out, f"{r}-{which}-{config}.log"))
            label = f"{config} {which} {r}"
            if v is None:
                print(f"{label:28s}  (no report: see {r}-{which}-{config}.log)")
                continue
            runs.setdefault((config, which), []).append(v)
            print(f"{label:28s}" + "".join(f"{x:10.1f}" for x in v[:-1]) + f"{v[-1]:10.3f}")
print("\nmedian over runs (min–max)")
for config in configs:
    print(f"\n{config}")
    med = {}
    for which in ("before", "after"):
        vs = runs.get((config, which))
        if not vs:
            print(f"  {which:6s}  no run")
            continue
        cols = list(zip(*vs))
        med[which] = [statistics.median(c) for c in cols]
        print(f"  {which:6s}  " + "   ".join(
            f"{n} {statistics.median(c):.{3 if n == 'frame ms' else 1}f} ({min(c):.{3 if n == 'frame ms' else 1}f}–{max(c):.{3 if n == 'frame ms' else 1}f})"
            for n, c in zip(names, cols)))
    if len(med) == 2 and med["before"][0] > 0:
        print(f"  render cpu p50 after/before {med['after'][0] / med['before'][0]:.3f}"
              f"   frame p50 after/before {med['after'][-1] / med['before'][-1]:.3f}")
EOF
cat "$OUTDIR/summary.txt"
exit "$failed"
