#!/usr/bin/env bash
# scripts/gpu-clock-check.sh BIN OUTDIR — the profiler's GPU clock on a machine with an NVIDIA GPU.
#
# For every sync mode the CUDA backend runs (external, binary, bridged, blocking, and the
# defaults), two headless runs with --trace (256x256 at --size 320x180 and 1024x1024 at --size
# 1280x720, 10,000 frames each, all of them kept in the trace: 20,000 checked frames per mode):
#   - `BIN trace check` must pass: 0 violations, with comparisons between the stamped kernels
#     and the graphics queue on their one clock domain (the GPU clock line: each kernel against
#     the 'rendered' it waited on and the draw that reads its slot, tolerance the larger
#     accuracy, not the sum), at least one per frame;
#   - the report's `clock compute:` line must be the kernels' own GPU stamps (not an anchor
#     event's: no anchor of their own; the Vulkan mapping it names counts its own anchors),
#     accurate to at most 5 µs;
#   - the hand-offs in and out are shown: their exposed part and the latency, p50/p99.
# Then the stamping cost: 256x256, defaults, this build against GPU_CLOCK_CHECK_BASELINE_BIN (a
# build without GPU stamps), both --gpu-timing on, interleaved x5; the median frame-time ratio must
# be at most 1.02 (not measured without that build: an INFO row says so). And, reported only, what
# the whole GPU timeline costs: --gpu-timing on vs off.
# Logs go to OUTDIR/<run>.log; a table is printed last; exit 1 on any failure (2: bad usage).
# Needs bash, coreutils, awk, grep; no cargo. About 4 minutes on an H100.
set -u
. "$(dirname "$0")/lib/stats.sh"

if [ $# -ne 2 ]; then
    echo "usage: $0 BIN OUTDIR" >&2
    exit 2
fi
bin=$1
out=$2
[ -x "$bin" ] || { echo "gpu-clock-check: $bin is not an executable file" >&2; exit 2; }
mkdir -p "$out" || exit 2
limit=${GPU_CLOCK_CHECK_TIMEOUT:-180}
frames=${GPU_CLOCK_CHECK_FRAMES:-10000}
rows=()
failures=0
rc=0

# run NAME CMD...: stdout to OUTDIR/NAME.stdout, both streams to OUTDIR/NAME.log; sets rc.
run() {
    local name=$1
    shift
    { printf '$'; printf ' %q' "$@"; printf '\n'; } >"$out/$name.log"
    # Both writers append (O_APPEND): stderr and stdout interleave in the log without clobbering.
    # shellcheck disable=SC2094
    timeout --kill-after=10 "$limit" "$@" 2>>"$out/$name.log" | tee -a "$out/$name.log" >"$out/$name.stdout"
    rc=${PIPESTATUS[0]}
}

# record NAME RESULT FIGURE
record() {
    rows+=("$1|$2|$3")
    [ "$2" = PASS ] || failures=$((failures + 1))
}

# The value after "label" in a report line (two spaces, the label padded to 12).
line() { grep -m 1 "^  $1" "$2"; }

for sync in external binary bridged blocking default; do
    for shape in 256x256:320x180 1024x1024:1280x720; do
        grid=${shape%%:*}
        name="clock-$sync-$grid"
        mode=(--sync "$sync")
        [ "$sync" = default ] && mode=()
        run "$name" "$bin" --headless --backend cuda "${mode[@]}" --grid "$grid" --size "${shape#*:}" \
            --frames "$frames" --trace "$out/$name.json" --trace-frames "$frames"
        if [ "$rc" -ne 0 ]; then
            record "$name" FAIL "run exit $rc: $(tail -n 1 "$out/$name.log" | cut -c 1-70)"
            continue
        fi
        report="$out/$name.stdout"
        clock=$(line 'clock        compute:' "$report")
        acc=$(sed -n 's/.*±\([0-9.]*\) µs.*/\1/p' <<<"$clock")
        handoff() { line "$1" "$report" | sed -n 's/.*exposed p50 \([0-9.]*\) µs *p99 \([0-9.]*\) µs *(\([0-9.]*%\) of the frame.*latency p50 \([0-9.]*\) µs, p99 \([0-9.]*\) µs.*/exposed \1\/\2 µs (\3), latency \4\/\5 µs/p'; }
        hin=$(handoff 'hand-off in')
        hout=$(handoff 'hand-off out')
        overlap=$(line 'overlap' "$report" | awk '{print $2 "/" $4}')
        run "$name-check" "$bin" trace check "$out/$name.json"
        check_rc=$rc
        checked=$(grep -m 1 '^trace check' "$out/$name-check.stdout" | sed 's/.*: \([0-9]*\) frames.*, \([0-9]*\) violation.*/\1 frames, \2 violations/')
        # `kernels on the GPU clock: N comparisons between the kernels … : V violation(s)`
        gpu_line=$(grep -m 1 'kernels on the GPU clock' "$out/$name-check.stdout")
        gpu_checks=$(sed -n 's/.*GPU clock: \([0-9]*\) comparisons.*/\1/p' <<<"$gpu_line")
        gpu_violations=$(sed -n 's/.*: \([0-9]*\) violation(s)$/\1/p' <<<"$gpu_line")
        figure="$checked; GPU clock ${gpu_checks:-0} comparisons; ±${acc:-?} µs; in ${hin:-?}; out ${hout:-?}; overlapped ${overlap:-?}"
        why=""
        [ "$check_rc" -eq 0 ] || why="trace check exit $check_rc"
        [ "${gpu_checks:-0}" -ge "$frames" ] || why="${why:+$why, }fewer GPU-clock kernel comparisons than frames (${gpu_checks:-none})"
        [ "${gpu_violations:-1}" -eq 0 ] || why="${why:+$why, }GPU-clock violations: ${gpu_violations:-?}"
        grep -q '%globaltimer' <<<"$clock" || why="${why:+$why, }compute clock is not the GPU stamps: $clock"
        grep -q 'anchor event' <<<"$clock" && why="${why:+$why, }an event anchor line: $clock"
        awk -v a="${acc:-999}" 'BEGIN { exit !(a <= 5.0) }' || why="${why:+$why, }accuracy ±${acc:-?} µs > 5 µs"
        if [ -z "$why" ]; then
            record "$name" PASS "$figure"
        else
            record "$name" FAIL "$why ($figure)"
        fi
        rm -f "$out/$name.json" # tens of MB each; the report and the check's output stay
    done
done

# Costs at 256², defaults, 5000 frames after 500 of warm-up, interleaved. `median FILE...`.
# cost_row ROW MAX LABEL_A BIN_A TIMING_A LABEL_B BIN_B TIMING_B: the median frame-time ratio A/B
# over 5 interleaved pairs, at most MAX; MAX "info" records it without judging.
cost_row() {
    local row=$1 max=$2 a=() b=() rep side name mean
    for rep in 1 2 3 4 5; do
        for side in A B; do
            local label bin_ timing
            if [ "$side" = A ]; then label=$3 bin_=$4 timing=$5; else label=$6 bin_=$7 timing=$8; fi
            name="$row-$label-$rep"
            run "$name" "$bin_" --headless --backend cuda --grid 256x256 --size 320x180 --frames 5000 \
                --warmup-frames 500 --gpu-timing "$timing"
            mean=$(line 'frame time' "$out/$name.stdout" | awk '{print $4}')
            if [ "$rc" -ne 0 ] || [ -z "$mean" ]; then
                record "$row" FAIL "$name: exit $rc"
                return
            fi
            if [ "$side" = A ]; then a+=("$mean"); else b+=("$mean"); fi
        done
    done
    local ma mb ratio figure
    ma=$(median "${a[@]}") mb=$(median "${b[@]}")
    ratio=$(awk -v x="$ma" -v y="$mb" 'BEGIN { printf "%.3f", x / y }')
    figure="median frame $3 $ma ms vs $6 $mb ms (${a[*]} / ${b[*]}): ratio $ratio"
    if [ "$max" = info ]; then
        rows+=("$row|INFO|$figure")
    elif awk -v r="$ratio" -v l="$max" 'BEGIN { exit !(r <= l) }'; then
        record "$row" PASS "$figure"
    else
        record "$row" FAIL "$figure > $max"
    fi
}
# What stamping costs: this build against one without GPU stamps (the compute side then timed
# with events, as before), both with --gpu-timing on. It needs that second build.
if [ -n "${GPU_CLOCK_CHECK_BASELINE_BIN:-}" ]; then
    cost_row stamping-cost 1.02 stamps "$bin" on baseline "$GPU_CLOCK_CHECK_BASELINE_BIN" on
else
    rows+=("stamping-cost|INFO|not measured: set GPU_CLOCK_CHECK_BASELINE_BIN to a build without GPU stamps")
fi
# What the whole GPU timeline costs (Vulkan timestamps per draw, the compute side's stamps):
# --gpu-timing on vs off. Reported, not judged (BENCHMARKS.md has its history).
cost_row timeline-cost info on "$bin" on off "$bin" off

printf '\n%-26s %-6s %s\n' check result figure
for r in "${rows[@]}"; do
    IFS='|' read -r n res fig <<<"$r"
    printf '%-26s %-6s %s\n' "$n" "$res" "$fig"
done
printf '\n%d check(s) failed\n' "$failures"
[ "$failures" -eq 0 ]
