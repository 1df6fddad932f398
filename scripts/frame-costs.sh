#!/usr/bin/env bash
# scripts/frame-costs.sh BEFORE_BIN AFTER_BIN OUTDIR — issue 32 item 4's per-frame targets, two
# binaries side by side on the GPU machine (no cargo). Every configuration runs FC_REPS times per
# binary, interleaved (before/after alternate, their order swapped every repetition), after one
# untimed warm-up run of each (kernel caches, the driver's JIT cache). Then per target: the
# medians and spreads (min–max) of both binaries, after/before, and PASS/FAIL of the after binary:
#
#   render cpu   `render cpu` p50 of `--backend cuda --post outline`, 256²@320x180, gpu-timing
#                off and on                                                        ≤ 15 µs
#                (with `cpu phases` p50s: wait, hand-off, record+submit, rest — where a floor is;
#                and the same with 8 and with 4 frames in flight, whichever the binary's default,
#                and the means: a p50 met only with fewer wake-ups says the wake-ups set it)
#   gpu-timing   frame mean `--gpu-timing on` / `off`, vulkan and cuda-in-vulkan K=1, 256²@320x180
#                                                                                  ≤ 1.02
#   kernel       `bench-kernel --backend cuda --grid 4096x4096 --iterations 1000` ratio ≤ 1.05
#   start-up     the report's `start-up` (process start → first draw finished), `--headless
#                --frames 10`, vulkan, cuda, cuda-in-vulkan, with the start-up timeline's marks
#                (RUST_LOG=vkhip=debug)                                            ≤ 0.25 s
#
# and, so that nothing got slower, the frame mean of every frame configuration after/before
# (flagged when > 1.02). Frame runs: FC_FRAMES measured frames after FC_WARMUP (`--time frame`).
# Environment: FC_REPS (3), FC_START_REPS (5), FC_FRAMES (2000), FC_WARMUP (200), FC_TIMEOUT
# (seconds per run, 60). About 3 minutes on an H100 with the defaults.
# Output: OUTDIR/runs/*.log, OUTDIR/results.tsv (bin, config, rep, metric, value), OUTDIR/summary.txt.
# Exit 0 when every run succeeded (targets met or not: the summary says), 1 when a run failed,
# 2 for bad usage.
set -u
set -o pipefail
. "$(dirname "$0")/lib/stats.sh"

BEFORE=${1:-}
AFTER=${2:-}
OUT=${3:-}
if [ $# -ne 3 ] || [ ! -x "$BEFORE" ] || [ ! -x "$AFTER" ]; then
    echo "usage: $0 BEFORE_BIN AFTER_BIN OUTDIR (two executable vkhip binaries)" >&2
    exit 2
fi
REPS=${FC_REPS:-3}
SREPS=${FC_START_REPS:-5}
FRAMES=${FC_FRAMES:-2000}
WARMUP=${FC_WARMUP:-200}
TIMEOUT=${FC_TIMEOUT:-60}
for n in "$REPS" "$SREPS" "$FRAMES" "$WARMUP" "$TIMEOUT"; do
    case $n in
        '' | *[!0-9]*) echo "frame-costs: FC_* counts must be numbers" >&2; exit 2 ;;
    esac
done
if [ "$REPS" -lt 1 ] || [ "$SREPS" -lt 1 ]; then
    echo "frame-costs: FC_REPS and FC_START_REPS must be at least 1" >&2
    exit 2
fi
mkdir -p "$OUT/runs" || exit 2
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
BEFORE=$(abs "$BEFORE")
AFTER=$(abs "$AFTER")
RESULTS=$OUT/results.tsv
printf 'bin\tconfig\trep\tmetric\tvalue\n' >"$RESULTS"

# libnvrtc for cuda and cuda-in-vulkan (dlopened by name), as scripts/gpu-check.sh finds it.
if ! { ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so'; }; then
    for lib in /usr/local/cuda/lib64/libnvrtc.so.1[23] /usr/local/cuda-1[23]*/lib64/libnvrtc.so.1[23] \
        /usr/local/lib/python3*/dist-packages/nvidia/cu13/lib/libnvrtc.so.13 \
        /usr/local/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13 \
        /usr/local/lib/python3*/dist-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 \
        /usr/local/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12; do
        if [ -e "$lib" ]; then
            export LD_LIBRARY_PATH="${lib%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
            break
        fi
    done
fi

# Field `f` (awk numbering) of the first line of `file` starting with `prefix`.
field() { awk -v p="$1" -v f="$2" 'index($0, p) == 1 { print $f; exit }' "$3"; }
record() { [ -n "$5" ] && printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$RESULTS"; }

G256=(--grid 256x256 --size 320x180)
FR=(--time frame --frames $((FRAMES + WARMUP)) --warmup-frames "$WARMUP")
# name|kind|arguments. kind: frame (a headless frame run), start (start-up), kernel (bench-kernel).
CONFIGS=(
    "cuda post off|frame|--headless --backend cuda --post outline --gpu-timing off ${G256[*]} ${FR[*]}"
    "cuda post on|frame|--headless --backend cuda --post outline --gpu-timing on ${G256[*]} ${FR[*]}"
    "cuda off|frame|--headless --backend cuda --gpu-timing off ${G256[*]} ${FR[*]}"
    "cuda post off F=8|frame|--headless --backend cuda --post outline --gpu-timing off --frames-in-flight 8 ${G256[*]} ${FR[*]}"
    "cuda post on F=8|frame|--headless --backend cuda --post outline --gpu-timing on --frames-in-flight 8 ${G256[*]} ${FR[*]}"
    "cuda post off F=4|frame|--headless --backend cuda --post outline --gpu-timing off --frames-in-flight 4 ${G256[*]} ${FR[*]}"
    "vulkan K=1 on|frame|--headless --backend vulkan --slots 1 --gpu-timing on ${G256[*]} ${FR[*]}"
    "vulkan K=1 off|frame|--headless --backend vulkan --slots 1 --gpu-timing off ${G256[*]} ${FR[*]}"
    "cuda-in-vulkan K=1 on|frame|--headless --backend cuda-in-vulkan --slots 1 --gpu-timing on ${G256[*]} ${FR[*]}"
    "cuda-in-vulkan K=1 off|frame|--headless --backend cuda-in-vulkan --slots 1 --gpu-timing off ${G256[*]} ${FR[*]}"
    "kernel 4096x4096|kernel|bench-kernel --backend cuda --grid 4096x4096 --iterations 1000"
    "start-up vulkan|start|--headless --backend vulkan --frames 10"
    "start-up cuda|start|--headless --backend cuda --frames 10"
    "start-up cuda-in-vulkan|start|--headless --backend cuda-in-vulkan --frames 10"
)

failed=0
run_one() { # run_one WHICH BIN CONFIG REP
    local which=$1 bin=$2 cfg=$3 rep=$4
    local name=${cfg%%|*} rest=${cfg#*|}
    local kind=${rest%%|*} args=${rest#*|}
    local log
    log=$OUT/runs/$which-$(echo "$name" | tr ' /=' '__-')-r$rep.log
    local rc
    if [ "$kind" = start ]; then
        # shellcheck disable=SC2086
        RUST_LOG=vkhip=debug timeout "$TIMEOUT" "$bin" $args >"$log" 2>&1
        rc=$?
    else
        # shellcheck disable=SC2086
        timeout "$TIMEOUT" "$bin" $args >"$log" 2>&1
        rc=$?
    fi
    [ "$rep" = warm ] && return
    if [ "$rc" -ne 0 ]; then
        echo "frame-costs: $which '$name' rep $rep: exit $rc ($(tail -n 1 "$log"))" | tee -a "$OUT/failures.txt" >&2
        failed=1
        return
    fi
    case $kind in
        frame)
            # The mean from the fps figure (1000 / mean, five digits): the report's `mean` has
            # three decimals in ms, 1 µs at 0.14 ms frames, 0.7 % of the on/off ratio below.
            record "$which" "$name" "$rep" frame_mean_ms "$(sed -n 's/^  frame time .*(\([0-9.]*\) fps).*/\1/p' "$log" |
                awk '$1 > 0 { printf "%.5f", 1000 / $1 }')"
            record "$which" "$name" "$rep" cpu_p50_us "$(field '  render cpu ' 4 "$log")"
            record "$which" "$name" "$rep" cpu_mean_us "$(field '  render cpu ' 10 "$log")"
            record "$which" "$name" "$rep" wait_p50_us "$(field '  cpu phases ' 4 "$log")"
            record "$which" "$name" "$rep" handoff_p50_us "$(field '  cpu phases ' 6 "$log")"
            record "$which" "$name" "$rep" submit_p50_us "$(field '  cpu phases ' 8 "$log")"
            record "$which" "$name" "$rep" rest_p50_us "$(field '  cpu phases ' 10 "$log")"
            record "$which" "$name" "$rep" draw_p50_ms "$(field '  draw ' 3 "$log")"
            record "$which" "$name" "$rep" compute_p50_ms "$(field '  compute ' 3 "$log")"
            record "$which" "$name" "$rep" waited_share "$(grep -m1 '^  in flight ' "$log" |
                sed -n 's/.*host-waited in \([0-9]*\) of \([0-9]*\) frames.*/\1 \2/p' | awk '{ if ($2 > 0) printf "%.3f", $1 / $2 }')"
            ;;
        kernel)
            local line
            line=$(grep -m1 '^bench-kernel:' "$log")
            for k in kernel_median_us fill_median_us ratio; do
                record "$which" "$name" "$rep" "$k" "$(echo "$line" | tr ' ' '\n' | sed -n "s/^$k=//p")"
            done
            ;;
        start)
            record "$which" "$name" "$rep" startup_s "$(field '  start-up ' 2 "$log")"
            local m
            for m in 'Vulkan instance made' 'compute devices probed' 'Vulkan device created' \
                'compute backend ready' 'renderer and target ready' 'frame 0 submitted'; do
                record "$which" "$name" "$rep" "ms: $m" \
                    "$(grep -m1 "start-up: $m" "$log" | sed -n 's/.* at \([0-9.]*\) ms.*/\1/p')"
            done
            record "$which" "$name" "$rep" "ms: cuda prewarmed" \
                "$(grep -m1 'cuda: prewarmed' "$log" | sed -n 's/.* in \([0-9.]*\)ms.*/\1/p')"
            ;;
    esac
}

start=$(date +%s)
echo "frame-costs: warm-up (one untimed run of each configuration and binary)" >&2
for cfg in "${CONFIGS[@]}"; do
    run_one before "$BEFORE" "$cfg" warm
    run_one after "$AFTER" "$cfg" warm
done
maxreps=$((REPS > SREPS ? REPS : SREPS))
for rep in $(seq 1 "$maxreps"); do
    echo "frame-costs: repetition $rep of $maxreps" >&2
    for cfg in "${CONFIGS[@]}"; do
        rest=${cfg#*|}
        if [ "${rest%%|*}" = start ]; then
            [ "$rep" -gt "$SREPS" ] && continue
        else
            [ "$rep" -gt "$REPS" ] && continue
        fi
        if [ $((rep % 2)) -eq 1 ]; then
            run_one before "$BEFORE" "$cfg" "$rep"
            run_one after "$AFTER" "$cfg" "$rep"
        else
            run_one after "$AFTER" "$cfg" "$rep"
            run_one before "$BEFORE" "$cfg" "$rep"
        fi
    done
done
elapsed=$(($(date +%s) - start))

{
    echo "frame-costs: before $BEFORE"
    echo "             after  $AFTER"
    echo "             $REPS repetition(s) of the frame and kernel runs ($FRAMES frames after $WARMUP), $SREPS of start-up, interleaved; $elapsed s"
    if command -v nvidia-smi >/dev/null 2>&1; then
        echo "             $(nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader 2>&1 | head -n 1)"
    fi
    echo
} >"$OUT/summary.txt"

awk -F'\t' "$STATS_AWK"'
function med(bin, cfg, metric) { return median(v[bin "|" cfg "|" metric]) }
function cell(bin, cfg, metric,    m) {
    m = med(bin, cfg, metric)
    return (m == "") ? "-" : sprintf("%s (%s)", m, range(v[bin "|" cfg "|" metric]))
}
function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "" : a / b }
function verdict(x, limit) { return (x == "") ? "n/a" : ((x + 0 <= limit) ? "PASS" : "FAIL") }
function row(label, cfg, metric, limit, unit,    b, a) {
    b = med("before", cfg, metric); a = med("after", cfg, metric)
    printf "  %-34s before %-24s after %-24s after/before %-7s%s\n", label, cell("before", cfg, metric), cell("after", cfg, metric), (ratio(a, b) == "") ? "-" : sprintf("%.3f", ratio(a, b)), (limit == "") ? "" : sprintf("  target ≤ %s%s: %s", limit, (unit == "") ? "" : " " unit, verdict(a, limit))
}
NR > 1 {
    k = $1 "|" $2 "|" $4
    v[k] = v[k] " " $5
    if (!($2 in seen)) { seen[$2] = 1; cfgs[++nc] = $2 }
    if (!(($2 "|" $4) in mseen)) { mseen[$2 "|" $4] = 1; metrics[$2] = metrics[$2] "\t" $4 }
}
END {
    print "TARGETS (medians, range in brackets; PASS/FAIL judges the after binary)"
    print ""
    print "render-thread CPU, cuda --post outline, 256²@320x180"
    row("render cpu p50 (µs), timing off", "cuda post off", "cpu_p50_us", 15, "µs")
    row("render cpu p50 (µs), timing on", "cuda post on", "cpu_p50_us", 15, "µs")
    row("  no post, timing off (the floor)", "cuda off", "cpu_p50_us", "", "")
    row("  post, timing off, 8 in flight", "cuda post off F=8", "cpu_p50_us", "", "")
    row("  post, timing on, 8 in flight", "cuda post on F=8", "cpu_p50_us", "", "")
    row("  post, timing off, 4 in flight", "cuda post off F=4", "cpu_p50_us", "", "")
    split("wait_p50_us handoff_p50_us submit_p50_us rest_p50_us cpu_mean_us waited_share", ph, " ")
    for (i = 1; i <= 6; i++) {
        row("  post off: " ph[i], "cuda post off", ph[i], "", "")
    }
    row("  post on: cpu_mean_us", "cuda post on", "cpu_mean_us", "", "")
    row("  post off F=8: cpu_mean_us", "cuda post off F=8", "cpu_mean_us", "", "")
    row("  post off F=4: cpu_mean_us", "cuda post off F=4", "cpu_mean_us", "", "")
    row("  no post: cpu_mean_us", "cuda off", "cpu_mean_us", "", "")
    print ""
    print "--gpu-timing on / off, frame mean, K=1, 256²@320x180"
    split("vulkan cuda-in-vulkan", bk, " ")
    for (i = 1; i <= 2; i++) {
        for (w = 1; w <= 2; w++) {
            bin = (w == 1) ? "before" : "after"
            on[bin] = med(bin, bk[i] " K=1 on", "frame_mean_ms"); off[bin] = med(bin, bk[i] " K=1 off", "frame_mean_ms")
            r[bin] = ratio(on[bin], off[bin])
        }
        printf "  %-34s before %-24s after %-24s target ≤ 1.02: %s\n", bk[i] " K=1 on/off", (r["before"] == "") ? "-" : sprintf("%.4f (%s/%s ms)", r["before"], on["before"], off["before"]), (r["after"] == "") ? "-" : sprintf("%.4f (%s/%s ms)", r["after"], on["after"], off["after"]), verdict(r["after"], 1.02)
        row("  " bk[i] " on: draw p50 (ms)", bk[i] " K=1 on", "draw_p50_ms", "", "")
        row("  " bk[i] " on: compute p50 (ms)", bk[i] " K=1 on", "compute_p50_ms", "", "")
    }
    print ""
    print "kernel against memset, bench-kernel --backend cuda, 4096x4096, 1000 launches"
    row("ratio", "kernel 4096x4096", "ratio", 1.05, "")
    row("  kernel median (µs)", "kernel 4096x4096", "kernel_median_us", "", "")
    row("  memset median (µs)", "kernel 4096x4096", "fill_median_us", "", "")
    print ""
    print "start to first frame (s), --headless --frames 10"
    split("vulkan cuda cuda-in-vulkan", sb, " ")
    for (i = 1; i <= 3; i++) {
        c = "start-up " sb[i]
        row(sb[i], c, "startup_s", 0.25, "s")
        n = split(metrics[c], ms, "\t")
        for (j = 1; j <= n; j++) if (ms[j] ~ /^ms: /) row("  " substr(ms[j], 5) " (ms)", c, ms[j], "", "")
    }
    print ""
    print "NOTHING SLOWER: frame mean (ms) after/before (flagged above 1.02)"
    for (i = 1; i <= nc; i++) {
        c = cfgs[i]
        b = med("before", c, "frame_mean_ms"); a = med("after", c, "frame_mean_ms")
        if (b == "") continue
        rr = ratio(a, b)
        printf "  %-28s before %-24s after %-24s after/before %s%s\n", c, cell("before", c, "frame_mean_ms"), cell("after", c, "frame_mean_ms"), (rr == "") ? "-" : sprintf("%.4f", rr), (rr != "" && rr > 1.02) ? "  SLOWER?" : ""
    }
}' "$RESULTS" >>"$OUT/summary.txt"
cat "$OUT/summary.txt"

if [ "$failed" -ne 0 ]; then
    echo "frame-costs: a run failed; see $OUT/failures.txt and $OUT/runs/" >&2
    exit 1
fi
exit 0
