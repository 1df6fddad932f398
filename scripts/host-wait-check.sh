#!/usr/bin/env bash
# scripts/host-wait-check.sh BIN_DIR OUTDIR — a host wait on a semaphore CUDA signals (issue 34),
# on a machine with an NVIDIA GPU. Needs bash, coreutils, awk and grep; no cargo. BIN_DIR holds
# `vkhip` (cargo build --release) and the measuring program `semaphore_pingpong`, there or in
# BIN_DIR/examples (cargo build --release -p vkhip-measure: target/release/semaphore_pingpong).
#
#   1. semaphore_pingpong with its defaults (500 round trips after 100 warm-up, 3 interleaved
#      rounds, a 100 ms long wait): µs per round trip of tiny work through two shared timelines,
#      waited every way the host can (the crate's SharedSemaphore::wait, CUDA's stream sync,
#      spinning on the counter, plain vkWaitSemaphores), Vulkan alone and Vulkan ⇄ CUDA; the wall
#      and CPU time of the long wait. Fails unless it prints "semaphore_pingpong: OK" and exits 0
#      (it exits 1 when the crate's wait takes more than 2× CUDA's stream synchronisation).
#   2. the same example, short (10 round trips, 1 round, a 5 ms hold), under the Khronos
#      validation layer: INFORMATIONAL, it never fails the script. The example times plain
#      vkWaitSemaphores on values CUDA signalled on purpose, which the layer cannot see (the four
#      known foreign-signal VUIDs are counted apart; an older layer may also stall such a wait).
#   3. vkhip --headless --backend cuda --slots 1 --grid 256x256 --size 320x180 with --sync
#      host-wait against --sync binary, 1000 frames after 100 warm-up frames (--warmup-frames),
#      interleaved (the order alternates), HOST_WAIT_REPS repetitions each (default 3); the
#      report's mean frame time of each run (as gpu-check.sh reads it), the ratio of the medians
#      of the means; fails above 1.3. The p50 frame times and the render thread's CPU time per
#      frame (the report's "render cpu" p50) are shown beside it.
#
# Logs: OUTDIR/<row>.log (the command line first). Prints the summary last (also
# OUTDIR/summary.txt); exits 1 if a check failed, 2 for bad usage. Each run is limited to
# HOST_WAIT_TIMEOUT seconds (default 300). libnvrtc is looked for as gpu-check.sh does.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 BIN_DIR OUTDIR" >&2
    exit 2
fi
dir=$1
out=$2
bin=$dir/vkhip
bench=$dir/semaphore_pingpong
[ -x "$bench" ] || bench=$dir/examples/semaphore_pingpong
for exe in "$bin" "$bench"; do
    if [ ! -x "$exe" ]; then
        echo "host-wait-check: no executable at $exe (cargo build --release; cargo build --release -p vkhip-measure)" >&2
        exit 2
    fi
done
mkdir -p "$out" || exit 2
limit=${HOST_WAIT_TIMEOUT:-300}
reps=${HOST_WAIT_REPS:-3}
# shellcheck source=scripts/validation-layer.sh
. "$(dirname "$0")/validation-layer.sh"
. "$(dirname "$0")/lib/stats.sh"

# libnvrtc: the loader's, LD_LIBRARY_PATH's, or the first in the CUDA toolkit's and NVIDIA's pip
# wheels' usual directories.
# shellcheck source=scripts/lib/nvrtc.sh
. "$(dirname "$0")/lib/nvrtc.sh"
nvrtc_note=$NVRTC_NOTE

rows=() # "name|result|figure"
failures=0
rc=0
# run NAME CMD...: CMD under the time limit, stdout and stderr to OUTDIR/NAME.log (the command line
# first), stdout alone also to OUTDIR/NAME.stdout; sets $rc.
run() {
    local name=$1
    shift
    {
        printf '$'
        printf ' %q' "$@"
        printf '\n'
    } >"$out/$name.log"
    # shellcheck disable=SC2094
    timeout --kill-after=10 "$limit" "$@" 2>>"$out/$name.log" | tee -a "$out/$name.log" >"$out/$name.stdout"
    rc=${PIPESTATUS[0]}
    printf '[exit %s]\n' "$rc" >>"$out/$name.log"
    echo "host-wait-check: $name: exit $rc" >&2
}
record() {
    rows+=("$1|$2|$3")
    [ "$2" = PASS ] || [ "$2" = INFO ] || failures=$((failures + 1))
}
last_line() { grep -v '^[[:space:]]*$' "$out/$1.log" | grep -v '^\[exit ' | tail -n 1 | cut -c 1-120; }

# --- 1. the ping-pong benchmark ------------------------------------------------------------------
run pingpong "$bench"
summary=$(grep -m 1 '^semaphore_pingpong: \(OK\|FAIL\)' "$out/pingpong.stdout")
if [ "$rc" -eq 0 ] && [ "${summary#semaphore_pingpong: OK}" != "$summary" ]; then
    record pingpong PASS "${summary#semaphore_pingpong: }"
else
    record pingpong FAIL "exit $rc: ${summary:-$(last_line pingpong)}"
fi

# --- 2. the same, short, under the validation layer (informational) ------------------------------
vl_env "$out/pingpong-validation"
run pingpong-validation env "${VL_ENV[@]}" "$bench" --round-trips 10 --warmup 0 --rounds 1 --hold-ms 5
VL_FOREIGN=1 vl_check "$out/pingpong-validation"
record pingpong-validation INFO "exit $rc; $VL_SUMMARY"

# --- 3. the app: host-wait against binary, K = 1, 256² ---------------------------------------------
# field N of the report line starting with LABEL, spaces squeezed (" frame time mean X ms p50 Y ms":
# the mean is field 5, the p50 field 8; " render cpu p50 X µs": field 5).
pick() { grep -m 1 "^  $2" "$out/$1.stdout" | tr -s ' ' | cut -d ' ' -f "$3"; }
declare -A means p50s cpus
for rep in $(seq 1 "$reps"); do
    order=(host-wait binary)
    [ $((rep % 2)) -eq 0 ] && order=(binary host-wait)
    for sync in "${order[@]}"; do
        name="app-$sync-$rep"
        run "$name" "$bin" --headless --backend cuda --sync "$sync" --slots 1 --grid 256x256 --size 320x180 \
            --frames 1100 --warmup-frames 100
        mean=$(pick "$name" 'frame time' 5)
        if [ "$rc" -ne 0 ] || [ -z "$mean" ]; then
            record "$name" FAIL "exit $rc: $(last_line "$name")"
            continue
        fi
        means[$sync]+="$mean "
        p50s[$sync]+="$(pick "$name" 'frame time' 8) "
        cpus[$sync]+="$(pick "$name" 'render cpu' 5) "
    done
done
# shellcheck disable=SC2086
{
    hw=$(median ${means[host-wait]:-})
    bi=$(median ${means[binary]:-})
    hw50=$(median ${p50s[host-wait]:-})
    bi50=$(median ${p50s[binary]:-})
    hwcpu=$(median ${cpus[host-wait]:-})
    bicpu=$(median ${cpus[binary]:-})
}
ratio=$(awk -v a="${hw:-0}" -v b="${bi:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.3f", a / b }')
figure="mean frame ${hw:-?} ms host-wait vs ${bi:-?} ms binary (runs: ${means[host-wait]:-}/ ${means[binary]:-}), ratio ${ratio:-n/a} (limit 1.3); p50 ${hw50:-?} vs ${bi50:-?} ms; render cpu p50 ${hwcpu:-?} vs ${bicpu:-?} us"
if [ -n "$ratio" ] && awk -v r="$ratio" 'BEGIN { exit !(r <= 1.3) }'; then
    record app-host-wait-vs-binary PASS "$figure"
else
    record app-host-wait-vs-binary FAIL "$figure"
fi

# --- summary -------------------------------------------------------------------------------------------
{
    echo
    sed -n '/ rounds x /,/^semaphore_pingpong: /p' "$out/pingpong.stdout"
    echo
    printf '%-26s %-7s %s\n' CHECK RESULT "KEY FIGURE"
    for row in "${rows[@]}"; do
        IFS='|' read -r name result figure <<<"$row"
        printf '%-26s %-7s %s\n' "$name" "$result" "$figure"
    done
    echo
    echo "GPU, driver: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
    echo "$nvrtc_note"
    echo "checks failed: $failures; logs in $out"
} | tee "$out/summary.txt"

[ "$failures" -eq 0 ]
