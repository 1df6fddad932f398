#!/usr/bin/env bash
# scripts/wgpu-cost.sh BIN_DIR OUTDIR [GRID...] — what the interop crate's wgpu hand-off costs
# per frame against its plain-ash path, and where the difference goes (issues 25 and 32), on a
# machine with an NVIDIA GPU. Needs bash, coreutils, grep and sed; no cargo: BIN_DIR holds the
# measuring programs wgpu_handoff_cost and wgpu_submit_cost (crates/vkhip-measure), built by
#   cargo build --release -p vkhip-measure --features wgpu   (then target/release/)
#
#   1. validation: one short run (67x45, 2 rounds of 20 frames, 10 traced frames of each hand-off)
#      of every configuration but ash-ext under the Khronos validation layer, with wgpu's
#      validation on (WGPU_VALIDATION=1, RUST_LOG=warn): exit 0, "wgpu_handoff_cost: OK", the
#      layer loaded and reported nothing (scripts/validation-layer.sh, no VUID set apart), no
#      warning or error from wgpu;
#   2. the control: ash-ext alone (the ash loop as it was before issue 32: its throttle waits on
#      the exported timeline CUDA waits on) under the layer; the layer's false positives from
#      foreign semaphore signals are counted apart (VL_FOREIGN=1) and printed, not failed on —
#      the shape step 1 runs instead has none;
#   3. per GRID (default 256x256 1024x1024 1920x1080), without the layer: K = WGPU_COST_K (3),
#      WGPU_COST_ROUNDS (5) interleaved rounds of WGPU_COST_FRAMES (2000) frames after 200
#      warm-up frames of each configuration, then WGPU_COST_TRACE (500) traced frames of each
#      hand-off configuration (CSV in OUTDIR/traces); its tables: µs per frame (median, p5, p95,
#      the spread of the round medians) with the host time split (CUDA, record, submit, wait),
#      the ladder from ash to wgpu, the ratios, and the GPU spans on one clock;
#   4. wgpu_submit_cost: wgpu alone, one command buffer more per submit (7 interleaved rounds of
#      2000 frames per configuration).
#
# Logs: OUTDIR/validation.log, OUTDIR/control.log (and their .validation.log, the layer's),
# OUTDIR/grid-WxH.log, OUTDIR/submit-cost.log. Prints the summary last (also OUTDIR/summary.txt);
# exits 1 if a run failed, 2 for bad usage. Each run is limited to WGPU_COST_TIMEOUT seconds
# (default 300). About 2 minutes on an H100 with the defaults. WGPU_COST_EXTRA adds arguments to
# every wgpu_handoff_cost run (e.g. --no-cuda: the script's own smoke test on lavapipe).
set -u

if [ $# -lt 2 ]; then
    echo "usage: $0 BIN_DIR OUTDIR [GRID...]" >&2
    exit 2
fi
bench=$1/wgpu_handoff_cost
submit_cost=$1/wgpu_submit_cost
out=$2
shift 2
grids=("$@")
[ ${#grids[@]} -gt 0 ] || grids=(256x256 1024x1024 1920x1080)
if [ ! -x "$bench" ]; then
    echo "wgpu-cost: no executable at $bench (cargo build --release -p vkhip-measure --features wgpu)" >&2
    exit 2
fi
mkdir -p "$out" || exit 2
limit=${WGPU_COST_TIMEOUT:-300}
k=${WGPU_COST_K:-3}
frames=${WGPU_COST_FRAMES:-2000}
rounds=${WGPU_COST_ROUNDS:-5}
trace=${WGPU_COST_TRACE:-500}
read -r -a extra <<<"${WGPU_COST_EXTRA:-}"
# shellcheck source=scripts/validation-layer.sh
. "$(dirname "$0")/validation-layer.sh"

failures=0
lines=()
every_but_ext=ash,raw,raw+sem,raw+8cb,wgpu-4cb,wgpu,raw+8cb+pad,raw-3sub,wgpu-3sub,ash-spin,wgpu-spin,cuda-only,ash-only,wgpu-only

# 1. validation
log=$out/validation.log
vl_env "$out/validation"
rc=0
env "${VL_ENV[@]}" WGPU_VALIDATION=1 RUST_LOG=warn timeout "$limit" "$bench" --grid 67x45 --k "$k" \
    --frames 20 --warmup 0 --rounds 2 --trace 10 --configs "$every_but_ext" "${extra[@]}" >"$log" 2>&1 || rc=$?
wgpu_messages=$(grep -cE '(WARN|ERROR) +wgpu' "$log")
if vl_check "$out/validation" && [ "$rc" -eq 0 ] && grep -q '^wgpu_handoff_cost: OK' "$log" &&
    [ "$wgpu_messages" -eq 0 ]; then
    lines+=("validation (67x45, K = $k, 2 rounds of 20 frames, every configuration but ash-ext): PASS: $VL_SUMMARY; 0 wgpu messages")
else
    lines+=("validation (67x45, K = $k, 2 rounds of 20 frames, every configuration but ash-ext): FAIL: exit $rc; $VL_SUMMARY; $wgpu_messages wgpu messages; $(tail -n 1 "$log")")
    failures=$((failures + 1))
fi

# 2. the control: the throttle on the exported timeline
log=$out/control.log
vl_env "$out/control"
rc=0
env "${VL_ENV[@]}" RUST_LOG=warn timeout "$limit" "$bench" --grid 67x45 --k "$k" --frames 20 --warmup 0 \
    --rounds 1 --configs ash-ext "${extra[@]}" >"$log" 2>&1 || rc=$?
if VL_FOREIGN=1 vl_check "$out/control" && [ "$rc" -eq 0 ]; then
    lines+=("control, ash-ext alone (1 round of 20 frames): exit 0; $VL_SUMMARY")
else
    lines+=("control, ash-ext alone (1 round of 20 frames): exit $rc; $VL_SUMMARY (information, not failed on)")
fi

# 3. the grids
for grid in "${grids[@]}"; do
    log=$out/grid-$grid.log
    rc=0
    RUST_LOG=warn timeout "$limit" "$bench" --grid "$grid" --k "$k" --frames "$frames" --warmup 200 \
        --rounds "$rounds" --trace "$trace" --trace-out "$out/traces" "${extra[@]}" >"$log" 2>&1 || rc=$?
    if [ "$rc" -eq 0 ] && grep -q '^wgpu_handoff_cost: OK' "$log"; then
        lines+=("" "$(sed -n '/^grid /,/^wgpu_handoff_cost: OK/p' "$log")")
    else
        lines+=("" "grid $grid: FAIL: exit $rc: $(tail -n 1 "$log")")
        failures=$((failures + 1))
    fi
done

# 4. wgpu alone
if [ -x "$submit_cost" ]; then
    log=$out/submit-cost.log
    rc=0
    timeout "$limit" "$submit_cost" 2000 >"$log" 2>&1 || rc=$?
    if [ "$rc" -eq 0 ]; then
        lines+=("" "wgpu alone, one command buffer more per submit (wgpu_submit_cost):" "$(cat "$log")")
    else
        lines+=("" "wgpu_submit_cost: FAIL: exit $rc: $(tail -n 1 "$log")")
        failures=$((failures + 1))
    fi
fi

{
    echo
    printf '%s\n' "${lines[@]}"
    echo
    echo "GPU, driver: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
    echo "runs failed: $failures; logs in $out"
} | tee "$out/summary.txt"

[ "$failures" -eq 0 ]
