#!/usr/bin/env bash
# scripts/bench-before-after.sh BEFORE_BIN AFTER_BIN OUTDIR — "no configuration slower": every
# preset of `vkhip bench` (quick, gpu, post) at one grid, two builds side by side, interleaved.
# Made for lavapipe (the CI machine; no cargo needed), where the GPU presets' CUDA rows end
# `unsupported` and their Vulkan and CPU rows run; it runs on a GPU machine too.
#
# BB_ROUNDS rounds (5); in each, every preset runs once per build, the builds' order swapped every
# round. Each run is `vkhip bench --preset P --grids BB_GRID --out …` (BB_GRID 64x64@160x90) with
# the preset's own repetitions and frames. Then per preset and configuration (label): the median
# over rounds of each build's `mean_ms` (a run's mean over its repetitions), after/before, flagged
# when above BB_FLAG (1.05: lavapipe shares two cores with everything else). Only configurations
# both builds ran with status ok are compared; the others are listed.
# Output: OUTDIR/<round>-<build>-<preset>/bench.csv and .md, OUTDIR/summary.txt.
# Exit 0 when every run succeeded (flags or not: the summary says), 1 when a run failed, 2 for bad usage.
set -u
set -o pipefail

. "$(dirname "$0")/lib/before-after.sh"
before_after_args bench-before-after "$@"
ROUNDS=${BB_ROUNDS:-5}
GRID=${BB_GRID:-64x64@160x90}
FLAG=${BB_FLAG:-1.05}
failed=0
t0=$(date +%s)
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
  for preset in quick gpu post; do
    for which in $order; do
      bin=$BEFORE
      [ "$which" = after ] && bin=$AFTER
      dir=$OUTDIR/$round-$which-$preset
      if ! "$bin" bench --preset "$preset" --grids "$GRID" --out "$dir" >"$dir.log" 2>&1; then
        echo "bench-before-after: failed: $bin bench --preset $preset (see $dir.log)" >&2
        failed=1
      fi
    done
  done
  echo "   round $round of $ROUNDS done ($(($(date +%s) - t0)) s)" >&2
done

python3 - "$OUTDIR" "$ROUNDS" "$FLAG" "$BEFORE" "$AFTER" "$GRID" >"$OUTDIR/summary.txt" <<'EOF'
import csv, os, statistics, sys
out, rounds, flag, before_bin, after_bin, grid = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), *sys.argv[4:]
print(f"bench before/after at {grid}, {rounds} interleaved rounds: before {before_bin}, after {after_bin}")
print(f"median over rounds of each run's mean frame time (ms); flagged (SLOWER) above {flag}")
worst = 0.0
for preset in ("quick", "gpu", "post"):
    runs = {"before": {}, "after": {}}
    skipped = set()
    for which in runs:
        for r in range(1, rounds + 1):
            path = os.path.join(out, f"{r}-{which}-{preset}", "bench.csv")
            if not os.path.exists(path):
                continue
            per_label = {}
            with open(path, newline="") as f:
                for row in csv.DictReader(f):
                    if row["status"] != "ok" or not row["mean_ms"]:
                        skipped.add(row["label"])
                        continue
                    per_label.setdefault(row["label"], []).append(float(row["mean_ms"]))
            for label, v in per_label.items():
                runs[which].setdefault(label, []).append(statistics.mean(v))
    print(f"\n--preset {preset}")
    common = sorted(set(runs["before"]) & set(runs["after"]))
    for label in common:
        b, a = statistics.median(runs["before"][label]), statistics.median(runs["after"][label])
        ratio = a / b if b > 0 else float("nan")
        worst = max(worst, ratio)
        spread = lambda v: f"{min(v):.3f}–{max(v):.3f}"
        mark = "  SLOWER" if ratio > flag else ""
        print(f"  {label:40s} before {b:8.3f} ({spread(runs['before'][label])})  after {a:8.3f} "
              f"({spread(runs['after'][label])})  after/before {ratio:.3f}{mark}")
    only = sorted((set(runs["before"]) ^ set(runs["after"])))
    if only:
        print("  in one build only: " + "; ".join(only))
    not_ok = sorted(skipped - set(common))
    if not_ok:
        print("  not run here (unsupported or failed): " + "; ".join(not_ok))
print(f"\nlargest after/before: {worst:.3f}")
EOF
cat "$OUTDIR/summary.txt"
exit "$failed"
