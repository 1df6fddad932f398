#!/usr/bin/env bash
# scripts/profile-cost.sh BIN_DIR [OUTDIR] — what the vkhip-profile crate costs, measured where the
# cost is made (issue 39, item 4), and its per-frame figures checked on an engine's loop, on a
# machine with an NVIDIA GPU. Needs bash, coreutils, grep, sed, awk; no cargo. BIN_DIR holds the
# release binaries (each looked for in BIN_DIR, then BIN_DIR/examples):
#   cargo build --release -p vkhip-measure                 # profile_scope_cost, engine_loop
#   cargo build --release -p vkhip-profile --examples      # ash_cuda (examples/)
#   cargo build --release                                  # vkhip (for row 4)
# then copy target/release/{profile_scope_cost,engine_loop,vkhip} and target/release/examples/ash_cuda
# into BIN_DIR. Results go to OUTDIR (default $OUT, else ./profile-cost-out): logs, results.tsv,
# summary.txt; the summary is printed last.
#
#   1. host ns per scope on each track (host thread, Vulkan queue, CUDA stream with kernel stamps
#      and with events) against the same calls on a disabled profiler, and what an empty scope
#      spans on its track's own clock (on the GPU: what its two marks cost the GPU, from the marks'
#      own times): profile_scope_cost, COST_ROUNDS (7) rounds;
#   2. the frame-time ratio, profiling on (kernel stamps, the default) against off (--no-profile),
#      ash_cuda at COST_SIZES (256 1024), COST_PAIRS (30) interleaved pairs of COST_FRAMES (3000)
#      frames (the order swapped every pair): per pair the ratio of the two runs' median frame
#      times; the mean ratio and its 95% confidence interval (Student's t), and whether that
#      interval lies below 1.01 (the cost is under 1%) or above it;
#   3. engine_loop (Vulkan render → CUDA filter → Vulkan copy, results read K frames later) at
#      K = 1, 2, 4, 8: the report's GPU busy per frame against the union of each frame's GPU scopes
#      (must be equal, with no scope late, the checker clean and every value right);
#   4. the render thread's CPU per frame (render cpu p50, and record+submit p50) of
#      `vkhip --headless --grid 256x256 --size 320x180 --slots 1` for vulkan, cuda-in-vulkan, cuda
#      and cuda --post outline, COST_RENDER_REPS (3) interleaved runs of COST_RENDER_FRAMES (3000).
# Each run is limited to COST_TIMEOUT seconds (default 300). Exits 1 if a row failed (a run that
# failed, figures that disagree), 2 for bad usage.
set -u

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 BIN_DIR [OUTDIR]" >&2
    exit 2
fi
. "$(dirname "$0")/lib/stats.sh"
dir=$1
out=${2:-${OUT:-./profile-cost-out}}
find_bin() { # NAME → its path in BIN_DIR or BIN_DIR/examples, or nothing
    local p
    for p in "$dir/$1" "$dir/examples/$1"; do
        [ -x "$p" ] && { echo "$p"; return; }
    done
}
scope_cost=$(find_bin profile_scope_cost)
engine=$(find_bin engine_loop)
ash_cuda=$(find_bin ash_cuda)
vkhip=$(find_bin vkhip)
for pair in "profile_scope_cost:$scope_cost" "engine_loop:$engine" "ash_cuda:$ash_cuda"; do
    if [ -z "${pair#*:}" ]; then
        echo "profile-cost: no executable ${pair%%:*} in $dir or $dir/examples (see the header)" >&2
        exit 2
    fi
done
mkdir -p "$out/runs" || exit 2
limit=${COST_TIMEOUT:-300}
rounds=${COST_ROUNDS:-7}
pairs=${COST_PAIRS:-30}
frames=${COST_FRAMES:-3000}
read -r -a sizes <<<"${COST_SIZES:-256 1024}"
render_reps=${COST_RENDER_REPS:-3}
render_frames=${COST_RENDER_FRAMES:-3000}
for v in "$rounds" "$pairs" "$frames" "$render_reps" "$render_frames" "$limit"; do
    case "$v" in '' | *[!0-9]*) echo "profile-cost: COST_* settings must be whole numbers" >&2; exit 2 ;; esac
done
[ "$pairs" -ge 2 ] || { echo "profile-cost: COST_PAIRS must be at least 2 (an interval needs two)" >&2; exit 2; }

failed=0
lines=()
row() { # STATUS TEXT
    lines+=("$(printf '%-5s %s' "$1" "$2")")
    [ "$1" = FAIL ] && failed=1
    return 0
}
run() { # LOG CMD...: the command's exit status; its output in LOG
    local log=$1
    shift
    timeout "$limit" "$@" >"$log" 2>&1
}

# --- 1. host ns per scope, and an empty scope's span ------------------------------------------
log=$out/runs/scope-cost.log
if run "$log" "$scope_cost" --rounds "$rounds"; then
    row INFO "profile_scope_cost ($rounds rounds):"
    while IFS= read -r l; do lines+=("        $l"); done < <(grep -E '^(host|vulkan|cuda-kernel|cuda-events) ' "$log")
else
    row FAIL "profile_scope_cost: exit $? ($(tail -n 1 "$log"))"
fi

# --- 2. frame-time ratio on/off, interleaved pairs --------------------------------------------
median_us() { grep -oE 'frame time median [0-9.]+ µs' "$1" | grep -oE '[0-9.]+' | head -n 1; }
for size in "${sizes[@]}"; do
    ratios=""
    ons="" offs=""
    for p in $(seq 1 "$pairs"); do
        order=(on off)
        [ $((p % 2)) -eq 0 ] && order=(off on)
        declare -A got=()
        for mode in "${order[@]}"; do
            log=$out/runs/ash_cuda-$size-$mode-$p.log
            flag=()
            [ "$mode" = off ] && flag=(--no-profile)
            if run "$log" "$ash_cuda" --frames "$frames" --size "$size" --trace "$out/runs/trace-$size.json" "${flag[@]}"; then
                got[$mode]=$(median_us "$log")
            else
                got[$mode]=""
                echo "profile-cost: ash_cuda $size $mode pair $p failed: $(tail -n 1 "$log")" >&2
            fi
        done
        if [ -n "${got[on]}" ] && [ -n "${got[off]}" ]; then
            ratios="$ratios $(awk -v a="${got[on]}" -v b="${got[off]}" 'BEGIN { printf "%.6f", a / b }')"
            ons="$ons ${got[on]}" offs="$offs ${got[off]}"
            printf '%s\t%s\t%s\t%s\n' "$size" "$p" "${got[on]}" "${got[off]}" >>"$out/results.tsv"
        fi
        unset got
    done
    verdict=$(awk -v r="$ratios" -v on="$ons" -v off="$offs" "$STATS_AWK"'BEGIN {
        split(mean_ci95(r), c, " ")
        if (c[1] == "") { print "FAIL fewer than 2 pairs ran"; exit }
        where = (c[3] < 1.01) ? "below 1.01: the cost is under 1%" : (c[2] > 1.01 ? "above 1.01: the cost is over 1%" : "includes 1.01: more pairs needed to say")
        printf "INFO on/off %.4f, 95%% CI [%.4f, %.4f] over %d pairs (%s); median frame on %s µs, off %s µs\n", c[1], c[2], c[3], split(r, x, " "), where, median(on), median(off)
    }')
    row "${verdict%% *}" "ash_cuda ${size}², $frames frames a run: ${verdict#* }"
done

# --- 3. engine loop: the report's GPU busy against the union of its scopes --------------------
for k in 1 2 4 8; do
    log=$out/runs/engine-k$k.log
    if run "$log" "$engine" --k "$k" --frames 600; then
        row PASS "$(grep -m 1 '^engine_loop: K = ' "$log")"
    else
        rc=$?
        row FAIL "engine_loop K = $k: exit $rc: $(grep -m 1 '^engine_loop: K = ' "$log" || tail -n 1 "$log")"
    fi
done

# --- 4. the render thread's CPU per frame ------------------------------------------------------
if [ -n "$vkhip" ]; then
    configs=("vulkan" "cuda-in-vulkan" "cuda" "cuda --post outline")
    declare -A cpu=() submit=()
    for rep in $(seq 1 "$render_reps"); do
        for c in "${configs[@]}"; do
            # shellcheck disable=SC2206 # the configuration's words are its arguments
            extra=($c)
            log=$out/runs/render-${c// /_}-$rep.log
            if run "$log" "$vkhip" --headless --grid 256x256 --size 320x180 --slots 1 --frames "$render_frames" --backend "${extra[@]}"; then
                cpu[$c]="${cpu[$c]:-} $(grep -m 1 '^  render cpu ' "$log" | grep -oE 'p50 [0-9.]+' | head -n 1 | cut -d' ' -f2)"
                submit[$c]="${submit[$c]:-} $(grep -m 1 '^  cpu phases ' "$log" | grep -oE 'record\+submit [0-9.]+' | cut -d' ' -f2)"
            else
                row FAIL "vkhip --backend $c: exit $? ($(tail -n 1 "$log"))"
            fi
        done
    done
    for c in "${configs[@]}"; do
        # shellcheck disable=SC2086 # one value a word
        [ -n "${cpu[$c]:-}" ] && row INFO "render cpu p50 --backend $c --slots 1: median $(median ${cpu[$c]}) µs (runs:${cpu[$c]}), record+submit $(median ${submit[$c]}) µs"
    done
else
    row INFO "render thread: no vkhip in $dir (cargo build --release), row 4 skipped"
fi

{
    echo "profile-cost, $(date -u '+%F %H:%M UTC'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
    printf '%s\n' "${lines[@]}"
} | tee "$out/summary.txt"
exit "$failed"
