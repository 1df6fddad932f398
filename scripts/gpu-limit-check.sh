#!/usr/bin/env bash
# scripts/gpu-limit-check.sh BIN OUTDIR — the GPU limit (issue 27.3) on a machine with an NVIDIA GPU.
#
# 1. Headless runs of `vulkan` and `cuda-in-vulkan` (K=1 and K=3) and `cuda` (defaults) at
#    256x256@320x180 and 1024x1024@1280x720, GPU timing on, 3000 frames after 300 of warm-up:
#    the report's `GPU limit` line must give a ratio equal to frame p50 / the GPU's busy time per
#    frame (the p50 of each frame's union of its GPU scopes, at least the draw's and the
#    kernel's p50) within the printing's rounding; the row shows the line.
# 2. `vkhip bench` of native, the reference and cuda-in-vulkan at both grids (3 reps): bench.md
#    must have a `GPU limit` row per grid and a `vs GPU limit` column; bench.csv `limit_ms` and
#    `ratio_to_limit` on every ok row. The rows print the limit and each configuration's ratios.
# 3. `vkhip bench --replot` of that CSV writes the chart beside it (look at bench.png).
# Logs go to OUTDIR/<run>.log; a table is printed last; exit 1 on any failure (2: bad usage).
# Needs bash, coreutils, awk, grep; no cargo. About 5 minutes on an H100.
set -u

if [ $# -ne 2 ] || [ ! -f "$1" ] || [ ! -x "$1" ]; then
    echo "usage: $0 BIN OUTDIR (BIN: an executable vkhip)" >&2
    exit 2
fi
bin=$1 out=$2
mkdir -p "$out" || exit 2
rows=()
failures=0

record() {
    rows+=("$1|$2|$3")
    [ "$2" = PASS ] || failures=$((failures + 1))
}

# run NAME CMD...: stdout to OUTDIR/NAME.stdout, both streams to OUTDIR/NAME.log; sets rc.
run() {
    local name=$1
    shift
    { printf '$'; printf ' %q' "$@"; printf '\n'; } >"$out/$name.log"
    timeout 600 "$@" >"$out/$name.stdout" 2>>"$out/$name.log"
    rc=$?
    cat "$out/$name.stdout" >>"$out/$name.log"
}

for spec in "vulkan 1" "vulkan 3" "cuda-in-vulkan 1" "cuda-in-vulkan 3" "cuda default"; do
    read -r backend k <<<"$spec"
    shape=(--sync external --slots "$k" --run-ahead 0 --batch 1)
    [ "$k" = default ] && shape=()
    for at in 256x256:320x180 1024x1024:1280x720; do
        name="limit-$backend-k$k-${at%%:*}"
        run "$name" "$bin" --headless --time frame --backend "$backend" "${shape[@]}" \
            --grid "${at%%:*}" --size "${at#*:}" --frames 3300 --warmup-frames 300
        line=$(grep -m 1 '^  GPU limit ' "$out/$name.stdout")
        if [ "$rc" -ne 0 ] || [ -z "$line" ]; then
            record "$name" FAIL "exit $rc: ${line:-no GPU limit line}"
            continue
        fi
        # frame p50 from `frame time`; from `GPU limit` the ratio, the GPU busy time per frame
        # (the p50 of each frame's union of its GPU scopes) and the draw's and kernel's p50s: the
        # busy time is at least the longer of the two, and the ratio is frame p50 / busy.
        p50=$(grep -m 1 '^  frame time' "$out/$name.stdout" | awk '{for (i = 1; i < NF; i++) if ($i == "p50") { print $(i + 1); exit }}')
        verdict=$(echo "$line" | awk -v p50="$p50" '{
            for (i = 1; i < NF; i++) {
                if ($i == "at") r = $(i + 1); if ($i == "busy") b = $(i + 1)
                if ($i == "draw") d = $(i + 1); if ($i == "kernel") k = $(i + 1)
            }
            sub("×", "", r)
            if (b <= 0) { print "no busy time"; exit }
            want = p50 / b
            tol = 0.005 + r * (0.0005 / p50 + 0.0005 / b)
            diff = r - want; if (diff < 0) diff = -diff
            longest = (d > k) ? d : k
            print (d > 0 && k > 0 && b + 0.0015 >= longest && diff <= tol) ? "ok" : "bad " want
        }')
        if [ "$verdict" = ok ]; then
            record "$name" PASS "${line#  GPU limit    }"
        else
            record "$name" FAIL "ratio is not frame p50 $p50 / busy, or busy < draw or kernel ($verdict): $line"
        fi
    done
done

bench="$out/bench"
run bench "$bin" bench --only native --only reference --only cuda-in-vulkan \
    --grids 256x256@320x180,1024x1024@1280x720 --reps 3 --out "$bench"
md="$bench/bench.md"
if [ "$rc" -ne 0 ] || [ ! -f "$md" ]; then
    record bench FAIL "exit $rc"
elif [ "$(grep -c '^| GPU limit |' "$md")" -ne 2 ] || ! grep -q '| vs GPU limit |' "$md"; then
    record bench FAIL "bench.md lacks the GPU limit rows or column"
else
    record bench PASS "$(grep -c '^| ' "$md") table lines"
    # One row per configuration: frame time, vs native, vs GPU limit.
    while IFS='|' read -r _ label _ ms _ native limit _; do
        record "bench:$(echo "$label" | xargs)" PASS "$(echo "$ms" | xargs) ms, $(echo "$native" | xargs) native, $(echo "$limit" | xargs) limit"
    done < <(grep -E '^\| (GPU limit|vulkan|reference|cuda-in-vulkan)' "$md")
    cols=$(head -1 "$bench/bench.csv")
    case $cols in
        *limit_ms,ratio_to_limit*) record bench-csv PASS "limit_ms, ratio_to_limit" ;;
        *) record bench-csv FAIL "columns: $cols" ;;
    esac
    cp "$bench/bench.csv" "$out/replot.csv" && cp "$md" "$out/replot.md"
    run replot "$bin" bench --replot "$out/replot.csv"
    if [ "$rc" -eq 0 ] && [ -s "$out/replot.png" ]; then
        record replot PASS "$out/replot.png (look at it, and at $bench/bench.png)"
    else
        record replot FAIL "exit $rc"
    fi
fi

printf '%-40s %-6s %s\n' CHECK RESULT DETAIL
for r in "${rows[@]}"; do
    IFS='|' read -r n s d <<<"$r"
    printf '%-40s %-6s %s\n' "$n" "$s" "$d"
done
[ "$failures" -eq 0 ] || exit 1
