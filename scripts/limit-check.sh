#!/usr/bin/env bash
# scripts/limit-check.sh BIN OUTDIR — frames against the GPU's own limit (issue 27), on the GPU.
#
# For `vulkan` and `cuda-in-vulkan`, K = 1, at 256x256@320x180 and 1024x1024@1280x720, runs
#   --submit joined | split   (one submission per frame, or dispatch and draw apart)
#   --gpu-timing on | off     (the profiler's timestamps, or none)
# headless with --time frame, LIMIT_FRAMES measured frames after LIMIT_WARMUP warm-up frames
# (`--frames WARMUP+FRAMES --warmup-frames WARMUP`: the report's statistics start after the
# warm-up), LIMIT_REPS interleaved repetitions (every cell once per repetition, the order
# reversed every other repetition). Then prints, per cell, the median and spread (min–max) of
# the frame time (the report's mean) and, from the gpu-timing-on runs, of draw + kernel (the
# report's GPU draw p50 + compute p50), and the ratios issue 27 sets targets for:
#   frame(gpu-timing off) / (draw + kernel)   ≤ 1.03 at 256², ≤ 1.005 at 1024²   (joined)
#   frame(on) / frame(off)                    ≤ 1.02 at 256²                      (joined)
# and joined / split (gpu-timing off), which should be ≤ 1.
#
# Environment: LIMIT_FRAMES (default 3000), LIMIT_WARMUP (300), LIMIT_REPS (3, at least 1),
# LIMIT_TIMEOUT (seconds per run, 120), LIMIT_GRIDS (default "256x256@320x180
# 1024x1024@1280x720"), LIMIT_BACKENDS (default "vulkan cuda-in-vulkan"). On an H100 the
# default takes about 4 minutes. Needs bash, coreutils, awk, grep, sort; no cargo. A backend
# the machine cannot run (cuda-in-vulkan without VK_NVX_binary_import or NVRTC: exit 2) is
# reported as unavailable, not failed. Exit 0 when every available run succeeded (targets met or
# not: the table says), 1 when a run failed, 2 for bad usage.
#
# Logs: OUTDIR/runs/<cell>-r<rep>.log (each run's full output), OUTDIR/results.tsv (one line
# per run), OUTDIR/summary.txt (what is printed).
set -u
set -o pipefail

BIN=${1:-}
OUT=${2:-}
if [ $# -ne 2 ] || [ ! -x "$BIN" ]; then
    echo "usage: $0 BIN OUTDIR (BIN: an executable vkhip)" >&2
    exit 2
fi
FRAMES=${LIMIT_FRAMES:-3000}
WARMUP=${LIMIT_WARMUP:-300}
REPS=${LIMIT_REPS:-3}
TIMEOUT=${LIMIT_TIMEOUT:-120}
GRIDS=${LIMIT_GRIDS:-"256x256@320x180 1024x1024@1280x720"}
BACKENDS=${LIMIT_BACKENDS:-"vulkan cuda-in-vulkan"}
for n in "$FRAMES" "$WARMUP" "$REPS" "$TIMEOUT"; do
    case $n in
        '' | *[!0-9]*) echo "limit-check: LIMIT_FRAMES/WARMUP/REPS/TIMEOUT must be numbers" >&2; exit 2 ;;
    esac
done
if [ "$REPS" -lt 1 ] || [ "$FRAMES" -lt 1 ]; then
    echo "limit-check: LIMIT_REPS and LIMIT_FRAMES must be at least 1" >&2
    exit 2
fi
mkdir -p "$OUT/runs" || exit 2
RESULTS=$OUT/results.tsv
printf 'rep\tbackend\tgrid\tsize\tsubmit\ttiming\tframe_mean_ms\tframe_p50_ms\tdraw_p50_ms\tcompute_p50_ms\tstatus\n' >"$RESULTS"

# cuda-in-vulkan compiles its kernel with NVRTC, which the backend dlopens by name: add the CUDA
# toolkit's directory when the loader does not know it.
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so'; then
    for dir in /usr/local/cuda/lib64 /usr/local/cuda-13*/lib64 /usr/local/cuda-12*/lib64; do
        if compgen -G "$dir/libnvrtc.so*" >/dev/null; then
            export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
            break
        fi
    done
fi

# The value after "<label>" in a report line: `value LINE_PREFIX FIELD` (awk field number).
value() {
    awk -v p="$1" -v f="$2" 'index($0, p) == 1 { print $f; exit }' "$3"
}

cells=()
for grid_size in $GRIDS; do
    for backend in $BACKENDS; do
        for submit in joined split; do
            for timing in on off; do
                cells+=("$backend|$grid_size|$submit|$timing")
            done
        done
    done
done

failed=0
start=$(date +%s)
for rep in $(seq 1 "$REPS"); do
    order=("${cells[@]}")
    if [ $((rep % 2)) -eq 0 ]; then
        order=()
        for ((i = ${#cells[@]} - 1; i >= 0; i--)); do order+=("${cells[i]}"); done
    fi
    for cell in "${order[@]}"; do
        IFS='|' read -r backend grid_size submit timing <<<"$cell"
        grid=${grid_size%@*}
        size=${grid_size#*@}
        log="$OUT/runs/$backend-$grid-$size-$submit-$timing-r$rep.log"
        timeout "$TIMEOUT" "$BIN" --headless --backend "$backend" --slots 1 --grid "$grid" --size "$size" \
            --time frame --frames $((WARMUP + FRAMES)) --warmup-frames "$WARMUP" \
            --submit "$submit" --gpu-timing "$timing" >"$log" 2>&1
        rc=$?
        status=ok
        if [ "$rc" -eq 2 ]; then
            status=unavailable
        elif [ "$rc" -ne 0 ]; then
            status="failed(exit $rc)"
            failed=1
        elif [ "$submit" = joined ] && ! grep -q 'one submission per frame' "$log"; then
            status="failed(not joined)"
            failed=1
        fi
        mean=$(value '  frame time ' 4 "$log")
        p50=$(value '  frame time ' 7 "$log")
        draw=$(value '  draw ' 3 "$log")
        compute=$(value '  compute ' 3 "$log")
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$backend" "$grid" "$size" "$submit" \
            "$timing" "${mean:--}" "${p50:--}" "${draw:--}" "${compute:--}" "$status" >>"$RESULTS"
        echo "rep $rep  $backend $grid@$size $submit gpu-timing $timing: frame ${mean:--} ms, draw ${draw:--}, compute ${compute:--} [$status]" >&2
    done
done
elapsed=$(($(date +%s) - start))

# Medians, spreads and ratios, from results.tsv.
awk -F'\t' -v reps="$REPS" -v frames="$FRAMES" -v warmup="$WARMUP" -v secs="$elapsed" '
function median(list,    n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
    if (n == 0) return ""
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function spread(list,    n, a, i, lo, hi) {
    n = split(list, a, " ")
    if (n == 0) return "-"
    lo = hi = a[1]
    for (i = 2; i <= n; i++) { if (a[i] + 0 < lo + 0) lo = a[i]; if (a[i] + 0 > hi + 0) hi = a[i] }
    return sprintf("%.4f–%.4f", lo, hi)
}
function verdict(r, limit) { return (r == "") ? "n/a" : (r <= limit ? "met" : "NOT met") }
function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "" : a / b }
function fmt(r) { return (r == "") ? "-" : sprintf("%.4f", r) }
NR > 1 {
    key = $2 "|" $3 "@" $4 "|" $5 "|" $6
    if (!(key in seen)) { seen[key] = 1; keys[++nkeys] = key }
    if ($11 == "ok" && $7 != "-") frame[key] = frame[key] " " $7
    if ($11 == "ok" && $9 != "-" && $10 != "-") dk[key] = dk[key] " " ($9 + $10)
    if ($11 != "ok") status[key] = $11
}
END {
    printf "limit-check: %d repetition(s), %d frames after %d warm-up, --time frame, K=1 (%d s)\n", reps, frames, warmup, secs
    printf "frame = the report'"'"'s frame-time mean; draw+kernel = GPU draw p50 + compute p50 (gpu-timing on)\n\n"
    printf "%-15s %-20s %-7s %-6s %-10s %-17s %-11s %-17s %s\n", "backend", "grid@image", "submit", "timing", "frame ms", "frame spread", "draw+kern", "d+k spread", "status"
    for (i = 1; i <= nkeys; i++) {
        k = keys[i]; split(k, p, "|")
        m[k] = median(frame[k]); d[k] = median(dk[k])
        printf "%-15s %-20s %-7s %-6s %-10s %-17s %-11s %-17s %s\n", p[1], p[2], p[3], p[4], fmt(m[k]), spread(frame[k]), (p[4] == "on") ? fmt(d[k]) : "", (p[4] == "on") ? spread(dk[k]) : "", (k in status) ? status[k] : "ok"
    }
    printf "\nratios (medians; targets from issue 27)\n"
    printf "%-15s %-20s %-7s %-26s %-22s %s\n", "backend", "grid@image", "submit", "frame(off)/(draw+kernel)", "frame(on)/frame(off)", "joined/split (off)"
    for (i = 1; i <= nkeys; i++) {
        k = keys[i]; split(k, p, "|")
        if (p[4] != "off") continue
        base = p[1] "|" p[2] "|" p[3]
        lim = ratio(m[k], d[base "|on"])
        cost = ratio(m[base "|on"], m[k])
        js = (p[3] == "joined") ? ratio(m[k], m[p[1] "|" p[2] "|split|off"]) : ""
        small = (p[2] ~ /^256x256@/)
        limtxt = fmt(lim); costtxt = fmt(cost)
        if (p[3] == "joined") {
            limtxt = limtxt " (" verdict(lim, small ? 1.03 : 1.005) ")"
            if (small) costtxt = costtxt " (" verdict(cost, 1.02) ")"
        }
        printf "%-15s %-20s %-7s %-26s %-22s %s\n", p[1], p[2], p[3], limtxt, costtxt, fmt(js)
    }
}' "$RESULTS" | tee "$OUT/summary.txt"

if [ "$failed" -ne 0 ]; then
    echo "limit-check: a run failed; see $OUT/runs/ and $RESULTS" >&2
    exit 1
fi
exit 0
