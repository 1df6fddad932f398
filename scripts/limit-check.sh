#!/usr/bin/env bash
# scripts/limit-check.sh BIN OUTDIR — frames against the GPU's own limit, and the report's and the
# bench's `GPU limit` (issue 27), on the GPU.
#
# 1. The matrix. For `vulkan` and `cuda-in-vulkan`, K = 1, at 256x256@320x180 and
#    1024x1024@1280x720, runs
#      --submit joined | split   (one submission per frame, or dispatch and draw apart)
#      --gpu-timing on | off     (the profiler's timestamps, or none)
#    headless with --time frame, LIMIT_FRAMES measured frames after LIMIT_WARMUP warm-up frames
#    (`--frames WARMUP+FRAMES --warmup-frames WARMUP`: the report's statistics start after the
#    warm-up), LIMIT_REPS interleaved repetitions (every cell once per repetition, the order
#    reversed every other repetition). Then prints, per cell, the median and spread (min–max) of
#    the frame time (the report's mean) and, from the gpu-timing-on runs, of draw + kernel (the
#    report's GPU draw p50 + compute p50), and the ratios issue 27 sets targets for:
#      frame(gpu-timing off) / (draw + kernel)   ≤ 1.03 at 256², ≤ 1.005 at 1024²   (joined)
#      frame(on) / frame(off)                    ≤ 1.02 at 256²                      (joined)
#    and joined / split (gpu-timing off), which should be ≤ 1. Every gpu-timing-on run's
#    `GPU limit` line must give a ratio equal to frame p50 / its GPU busy time per frame (the p50
#    of each frame's union of its GPU scopes: at least the draw's and the kernel's p50) within
#    the printing's rounding (a run whose line does not is failed).
# 2. The report's `GPU limit` line in other shapes, once per grid (LIMIT_LINE_SHAPES, default
#    "vulkan:3 cuda-in-vulkan:3 cuda:default": K = 3 with --sync external --run-ahead 0
#    --batch 1, and cuda's defaults; empty: none), checked as in 1.
# 3. `vkhip bench` of native, the reference and cuda-in-vulkan at the grids (LIMIT_REPS reps):
#    bench.md must have a `GPU limit` row per grid and a `vs GPU limit` column, bench.csv the
#    columns limit_ms and ratio_to_limit; then `vkhip bench --replot` of that CSV writes the
#    chart beside it (look at it, and at bench/bench.png). The preset's frame counts unless
#    LIMIT_FRAMES or LIMIT_WARMUP is set. LIMIT_BENCH=0 skips it.
#
# Environment: LIMIT_FRAMES (default 3000), LIMIT_WARMUP (300), LIMIT_REPS (3, at least 1),
# LIMIT_TIMEOUT (seconds per run, 120), LIMIT_GRIDS (default "256x256@320x180
# 1024x1024@1280x720"), LIMIT_BACKENDS (default "vulkan cuda-in-vulkan"), LIMIT_LINE_SHAPES,
# LIMIT_BENCH (1). On an H100 the default takes about 9 minutes. Needs bash, coreutils, awk,
# grep, sort; no cargo. A backend the machine cannot run (cuda-in-vulkan without
# VK_NVX_binary_import or NVRTC, cuda without a CUDA device: exit 2) is reported as unavailable,
# not failed. Exit 0 when every available run and check succeeded (targets met or not: the table
# says), 1 when one failed, 2 for bad usage.
#
# Logs: OUTDIR/runs/<cell>-r<rep>.log (each run's full output), OUTDIR/results.tsv (one line
# per run of 1), OUTDIR/summary.txt (what is printed), OUTDIR/bench/ (3).
set -u
set -o pipefail
. "$(dirname "$0")/lib/stats.sh"

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
LINE_SHAPES=${LIMIT_LINE_SHAPES-"vulkan:3 cuda-in-vulkan:3 cuda:default"}
BENCH=${LIMIT_BENCH:-1}
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

# `limit_line LOG`: "ok", or what is wrong with the report's `GPU limit` line: its ratio must be
# the frame time's p50 / the GPU busy time per frame (`busy X ms`) within the printing's
# rounding, and the busy time at least the longer of the draw's and the kernel's p50s it names.
limit_line() {
    local line p50
    line=$(grep -m 1 '^  GPU limit ' "$1")
    [ -n "$line" ] || { echo "no GPU limit line"; return; }
    p50=$(grep -m 1 '^  frame time' "$1" | awk '{for (i = 1; i < NF; i++) if ($i == "p50") { print $(i + 1); exit }}')
    echo "$line" | awk -v p50="$p50" '{
        for (i = 1; i < NF; i++) {
            if ($i == "at") r = $(i + 1); if ($i == "busy") b = $(i + 1)
            if ($i == "draw") d = $(i + 1); if ($i == "kernel") k = $(i + 1)
        }
        sub("×", "", r)
        if (b <= 0 || d <= 0 || k <= 0 || p50 == "") { print "no busy time, draw and kernel in: " $0; exit }
        longest = (d > k) ? d : k
        if (b + 0.0015 < longest) { print "busy " b " below the draw or the kernel: " $0; exit }
        want = p50 / b
        tol = 0.005 + r * (0.0005 / p50 + 0.0005 / b)
        diff = r - want; if (diff < 0) diff = -diff
        print (diff <= tol) ? "ok" : sprintf("ratio %s is not frame p50 %s / busy %s = %.4f: %s", r, p50, b, want, $0)
    }'
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
        elif [ "$timing" = on ] && [ "$(limit_line "$log")" != ok ]; then
            status="failed(GPU limit line)"
            echo "$log: $(limit_line "$log")" >&2
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
awk -F'\t' -v reps="$REPS" -v frames="$FRAMES" -v warmup="$WARMUP" -v secs="$elapsed" "$STATS_AWK"'
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

# 2 and 3: one row per check.
rows=()
check() { # NAME PASS|FAIL|UNAVAILABLE DETAIL
    rows+=("$1|$2|$3")
    [ "$2" != FAIL ] || failed=1
}

for shape in $LINE_SHAPES; do
    backend=${shape%%:*} k=${shape#*:}
    flags=(--sync external --slots "$k" --run-ahead 0 --batch 1)
    [ "$k" = default ] && flags=()
    for grid_size in $GRIDS; do
        grid=${grid_size%@*} size=${grid_size#*@}
        name="line-$backend-k$k-$grid-$size"
        log="$OUT/runs/$name.log"
        timeout "$TIMEOUT" "$BIN" --headless --time frame --backend "$backend" "${flags[@]}" \
            --grid "$grid" --size "$size" --frames $((WARMUP + FRAMES)) --warmup-frames "$WARMUP" >"$log" 2>&1
        rc=$?
        verdict=$(limit_line "$log")
        if [ "$rc" -eq 2 ]; then
            check "$name" UNAVAILABLE "$(tail -n 1 "$log")"
        elif [ "$rc" -ne 0 ]; then
            check "$name" FAIL "exit $rc (see $log)"
        elif [ "$verdict" = ok ]; then
            check "$name" PASS "$(grep -m 1 '^  GPU limit ' "$log" | sed 's/^  GPU limit *//')"
        else
            check "$name" FAIL "$verdict"
        fi
    done
done

if [ "$BENCH" != 0 ]; then
    bench="$OUT/bench"
    grids=$(echo $GRIDS | tr ' ' ,)
    # The preset's frames unless LIMIT_FRAMES / LIMIT_WARMUP say otherwise.
    counts=()
    [ -n "${LIMIT_FRAMES:-}" ] && counts+=(--frames "$FRAMES")
    [ -n "${LIMIT_WARMUP:-}" ] && counts+=(--warmup "$WARMUP")
    timeout 600 "$BIN" bench --only native --only reference --only cuda-in-vulkan \
        --grids "$grids" --reps "$REPS" "${counts[@]}" --out "$bench" >"$OUT/bench.log" 2>&1
    rc=$?
    md="$bench/bench.md"
    ngrids=$(echo "$GRIDS" | wc -w)
    if [ "$rc" -ne 0 ] || [ ! -f "$md" ]; then
        check bench FAIL "exit $rc (see $OUT/bench.log)"
    elif [ "$(grep -c '^| GPU limit |' "$md")" -ne "$ngrids" ] || ! grep -q '| vs GPU limit |' "$md"; then
        check bench FAIL "$md lacks a GPU limit row per grid or the vs GPU limit column"
    else
        check bench PASS "$(grep -c '^| ' "$md") table lines"
        # One row per configuration: frame time, vs native, vs GPU limit.
        while IFS='|' read -r _ label _ ms _ native limit _; do
            check "bench:$(echo "$label" | xargs)" PASS "$(echo "$ms" | xargs) ms, $(echo "$native" | xargs) native, $(echo "$limit" | xargs) limit"
        done < <(grep -E '^\| (GPU limit|vulkan|reference|cuda-in-vulkan)' "$md")
        cols=$(head -1 "$bench/bench.csv")
        case $cols in
            *limit_ms,ratio_to_limit*) check bench-csv PASS "limit_ms, ratio_to_limit" ;;
            *) check bench-csv FAIL "columns: $cols" ;;
        esac
        cp "$bench/bench.csv" "$OUT/replot.csv"
        "$BIN" bench --replot "$OUT/replot.csv" >"$OUT/replot.log" 2>&1
        rc=$?
        if [ "$rc" -eq 0 ] && [ -s "$OUT/replot.png" ]; then
            check replot PASS "$OUT/replot.png (look at it, and at $bench/bench.png)"
        else
            check replot FAIL "exit $rc (see $OUT/replot.log)"
        fi
    fi
fi

if [ "${#rows[@]}" -gt 0 ]; then
    {
        echo
        printf '%-40s %-11s %s\n' CHECK RESULT DETAIL
        for r in "${rows[@]}"; do
            IFS='|' read -r n s d <<<"$r"
            printf '%-40s %-11s %s\n' "$n" "$s" "$d"
        done
    } | tee -a "$OUT/summary.txt"
fi

if [ "$failed" -ne 0 ]; then
    echo "limit-check: a run or check failed; see $OUT/runs/, $RESULTS and $OUT/summary.txt" >&2
    exit 1
fi
exit 0
