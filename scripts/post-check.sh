#!/usr/bin/env bash
# scripts/post-check.sh BIN OUTDIR — the post stage (`--post outline`, issue 24) on every backend
# the machine runs, on the GPU (or lavapipe: cpu and vulkan).
#
# For each backend:sync[:P] of POST_RUNS (default: cpu bridged, cpu none, vulkan external,
# cuda-in-vulkan external, cuda external, cuda external --post-batch 1, cuda bridged, cuda
# bridged --post-batch 1, cuda none, hip bridged, hip bridged --post-batch 1; without :P the
# run's default post batch, K for cuda/hip):
#   1. verify --post outline, 11 frames (not a multiple of P, so the last partial post batch is
#      flushed), at 333x77 (K = 3), 4097x3 (K = 2), 1x1 (K = 1), 61x33 (K = 8: the whole run is
#      one partial batch) and 37x23 (K = 5): every texel of every frame's output within 1/255 of
#      the CPU filter of its scene, and every frame checked (skipped for `none`);
#   2. a headless capture (30 frames; 29 where the default post batch applies, so the last
#      batch is partial; --time frame) under --validation: exit 0 and
#      "validation: 0 errors, 0 warnings"; the capture equals the cpu backend's (compare-png);
#   3. a trace (--trace) checked by `vkhip trace check`: clean, except with --sync none, whose
#      check must report violations.
# A backend the machine cannot run (exit 2 with "not available" / "no Vulkan device offers") is
# reported as unavailable, not failed. Prints one line per check; exit 0 when every available
# check passed, 1 when one failed, 2 for bad usage. Logs: OUTDIR/<backend>-<sync>-<check>.log.
set -u
set -o pipefail

BIN=${1:-}
OUT=${2:-}
if [ -z "$BIN" ] || [ -z "$OUT" ] || [ ! -x "$BIN" ]; then
  echo "usage: scripts/post-check.sh BIN OUTDIR (BIN: a built vkhip)" >&2
  exit 2
fi
mkdir -p "$OUT"
RUNS=${POST_RUNS:-"cpu:bridged cpu:none vulkan:external cuda-in-vulkan:external cuda:external cuda:external:1 cuda:bridged cuda:bridged:1 cuda:none hip:bridged hip:bridged:1"}
SHAPE=(--grid 256x256 --size 320x180)
failed=0

say() { printf '%-28s %-10s %s\n' "$1" "$2" "$3"; }
unavailable() { grep -qE "is not available|no Vulkan device offers|without HIP support" "$1"; }

# The reference capture: the cpu backend's.
"$BIN" --headless --frames 30 "${SHAPE[@]}" --backend cpu --post outline \
  --capture "$OUT/cpu-ref.png" >"$OUT/cpu-ref.log" 2>&1 || {
  echo "the cpu reference capture failed (see $OUT/cpu-ref.log)" >&2
  exit 1
}
# ...and of 29 frames, for the runs whose last post batch is partial.
"$BIN" --headless --frames 29 "${SHAPE[@]}" --backend cpu --post outline \
  --capture "$OUT/cpu-ref-29.png" >"$OUT/cpu-ref-29.log" 2>&1 || {
  echo "the cpu reference capture failed (see $OUT/cpu-ref-29.log)" >&2
  exit 1
}

for run in $RUNS; do
  IFS=: read -r backend sync pb <<<"$run"
  PB=()
  tag=$backend-$sync
  name="$backend --sync $sync"
  if [ -n "$pb" ]; then
    PB=(--post-batch "$pb")
    tag=$tag-p$pb
    name="$name --post-batch $pb"
  fi
  if [ "$sync" != none ]; then
    for case in 333x77:3 4097x3:2 1x1:1 61x33:8 37x23:5; do
      size=${case%%:*}
      k=${case#*:}
      log="$OUT/$tag-verify-$size.log"
      "$BIN" verify --post outline --backend "$backend" --sync "$sync" --size "$size" --slots "$k" \
        "${PB[@]}" --frames 11 --grid 64x48 >"$log" 2>&1
      rc=$?
      if [ $rc -eq 2 ] && unavailable "$log"; then
        say "$name" unavailable "$(grep -m1 'error' "$log")"
        continue 3
      fi
      line=$(grep -E '^(verify|vkhip): ' "$log" | tail -n1)
      if [ $rc -eq 0 ] && grep -q 'texels_over=0' <<<"$line" && grep -q 'post_frames=11$' <<<"$line"; then
        say "$name" PASS "verify $size K=$k: ${line##*post=}"
      else
        say "$name" FAIL "verify $size K=$k (exit $rc): $line (see $log)"
        failed=1
      fi
    done
  fi
  log="$OUT/$tag-capture.log"
  png="$OUT/$tag.png"
  trace="$OUT/$tag.json"
  # 30 frames; 29 where a post batch may apply (no :P given: cuda external defaults to P = K/2), so
  # the last batch is partial and flushed before the capture.
  frames=30
  [ "$pb" != 1 ] && [ "$sync" != none ] && frames=29
  "$BIN" --headless --frames $frames "${SHAPE[@]}" --backend "$backend" --sync "$sync" --post outline \
    "${PB[@]}" --validation --capture "$png" --trace "$trace" >"$log" 2>&1
  rc=$?
  if [ $rc -eq 2 ] && unavailable "$log"; then
    say "$name" unavailable "$(grep -m1 'error' "$log")"
    continue
  fi
  v=$(grep -E '^(validation|vkhip): ' "$log" | tail -n1)
  if [ $rc -eq 0 ] && [[ $v == "validation: 0 errors, 0 warnings"* ]]; then
    say "$name" PASS "capture under validation: $v"
  else
    say "$name" FAIL "capture (exit $rc): $v (see $log)"
    failed=1
    continue
  fi
  if [ "$sync" != none ]; then
    ref="$OUT/cpu-ref.png"
    [ $frames = 29 ] && ref="$OUT/cpu-ref-29.png"
    if "$BIN" compare-png "$png" "$ref" >"$OUT/$tag-compare.log" 2>&1; then
      say "$name" PASS "capture = cpu's: $(tail -n1 "$OUT/$tag-compare.log")"
    else
      say "$name" FAIL "capture differs from the cpu's: $(tail -n1 "$OUT/$tag-compare.log")"
      failed=1
    fi
  fi
  "$BIN" trace check "$trace" >"$OUT/$tag-check.log" 2>&1
  check_rc=$?
  violations=$(sed -n 's/.*, \([0-9][0-9]*\) violation(s).*/\1/p' "$OUT/$tag-check.log" | head -n1)
  violations=${violations:-0}
  if [ "$sync" = none ]; then
    if [ "$violations" -gt 0 ]; then
      say "$name" PASS "trace check reports $violations violation(s), as --sync none must"
    else
      say "$name" FAIL "trace check found no violation under --sync none"
      failed=1
    fi
  elif [ $check_rc -eq 0 ] && [ "$violations" -eq 0 ]; then
    say "$name" PASS "trace check: $(head -n1 "$OUT/$tag-check.log")"
  else
    say "$name" FAIL "trace check (exit $check_rc, $violations violation(s); see $OUT/$tag-check.log)"
    failed=1
  fi
done
exit $failed
