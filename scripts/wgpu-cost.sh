#!/usr/bin/env bash
# scripts/wgpu-cost.sh EXAMPLES_DIR OUTDIR [GRID...] — what the interop crate's wgpu hand-off costs
# per frame against its plain-ash path (issue 25), on a machine with an NVIDIA GPU. Needs bash,
# coreutils, grep and sed; no cargo: EXAMPLES_DIR holds wgpu_handoff_cost, built by
#   cargo build --release -p vkhip-interop --features wgpu --examples
#
#   1. one short run (67x45, 2 rounds of 20 frames) under the Khronos validation layer, with
#      wgpu's validation on (WGPU_VALIDATION=1, RUST_LOG=warn): exit 0, "wgpu_handoff_cost: OK",
#      the layer loaded and reported nothing (scripts/validation-layer.sh), no warning or error
#      from wgpu;
#   2. per GRID (default 256x256 1000x777 1920x1080 4096x4096: the app's grids and 1080p),
#      without the layer: K = WGPU_COST_K (3), WGPU_COST_ROUNDS (5) interleaved rounds of
#      WGPU_COST_FRAMES (2000) frames after 200 warm-up frames, of each of ash, wgpu, cuda-only,
#      ash-only and wgpu-only; its table: µs per frame, median, p5, p95, the spread of the round
#      medians, the wgpu/ash ratio, and each hand-off loop over its copy alone.
#
# Logs: OUTDIR/validation.log (and .validation.log, the layer's), OUTDIR/grid-WxH.log. Prints the
# summary last (also OUTDIR/summary.txt); exits 1 if a run failed, 2 for bad usage. Each run
# is limited to WGPU_COST_TIMEOUT seconds (default 300).
set -u

if [ $# -lt 2 ]; then
    echo "usage: $0 EXAMPLES_DIR OUTDIR [GRID...]" >&2
    exit 2
fi
bench=$1/wgpu_handoff_cost
out=$2
shift 2
grids=("$@")
[ ${#grids[@]} -gt 0 ] || grids=(256x256 1000x777 1920x1080 4096x4096)
if [ ! -x "$bench" ]; then
    echo "wgpu-cost: no executable at $bench (cargo build --release -p vkhip-interop --features wgpu --examples)" >&2
    exit 2
fi
mkdir -p "$out" || exit 2
limit=${WGPU_COST_TIMEOUT:-300}
k=${WGPU_COST_K:-3}
frames=${WGPU_COST_FRAMES:-2000}
rounds=${WGPU_COST_ROUNDS:-5}
# shellcheck source=scripts/validation-layer.sh
. "$(dirname "$0")/validation-layer.sh"

failures=0
lines=()

# 1. validation
log=$out/validation.log
vl_env "$out/validation"
rc=0
env "${VL_ENV[@]}" WGPU_VALIDATION=1 RUST_LOG=warn timeout "$limit" "$bench" --grid 67x45 --k "$k" \
    --frames 20 --warmup 0 --rounds 2 >"$log" 2>&1 || rc=$?
wgpu_messages=$(grep -cE '(WARN|ERROR) +wgpu' "$log")
if VL_FOREIGN=1 vl_check "$out/validation" && [ "$rc" -eq 0 ] && grep -q '^wgpu_handoff_cost: OK' "$log" &&
    [ "$wgpu_messages" -eq 0 ]; then
    lines+=("validation (67x45, K = $k, 2 rounds of 20 frames): PASS: $VL_SUMMARY; 0 wgpu messages")
else
    lines+=("validation (67x45, K = $k, 2 rounds of 20 frames): FAIL: exit $rc; $VL_SUMMARY; $wgpu_messages wgpu messages; $(tail -n 1 "$log")")
    failures=$((failures + 1))
fi

# 2. the grids
for grid in "${grids[@]}"; do
    log=$out/grid-$grid.log
    rc=0
    RUST_LOG=warn timeout "$limit" "$bench" --grid "$grid" --k "$k" --frames "$frames" --warmup 200 \
        --rounds "$rounds" >"$log" 2>&1 || rc=$?
    if [ "$rc" -eq 0 ] && grep -q '^wgpu_handoff_cost: OK' "$log"; then
        lines+=("" "$(sed -n '/^grid /,/^over the copy alone/p' "$log")")
    else
        lines+=("" "grid $grid: FAIL: exit $rc: $(tail -n 1 "$log")")
        failures=$((failures + 1))
    fi
done

{
    echo
    printf '%s\n' "${lines[@]}"
    echo
    echo "GPU, driver: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
    echo "runs failed: $failures; logs in $out"
} | tee "$out/summary.txt"

[ "$failures" -eq 0 ]
