#!/usr/bin/env bash
# scripts/kernel-floor.sh OUTDIR [VKHIP_BIN] — the floors under two of issue 32's per-frame
# targets, on the GPU machine (nvcc there, no cargo): builds scripts/kernel-floor.cu for this GPU
# and runs, KF_REPS times each, interleaved with the app where VKHIP_BIN is given:
#
#   kernel     `kernel-floor kernel 4096x4096 KF_ITERATIONS`: the project's sinewave, the same
#              store pattern with no math, the plainest store kernel, and the driver's fill
#              (cuMemsetD32Async), each checked to write the whole buffer, then timed; with
#              VKHIP_BIN, `vkhip bench-kernel --backend cuda --grid 4096x4096` beside it (the
#              target is its ratio ≤ 1.05). A store-only kernel's ratio to the fill is the floor
#              of any kernel that writes the slot.
#   init       `kernel-floor init cuda|vulkan|both`, each in a fresh process: cuInit, the primary
#              context, a first allocation; a Vulkan instance and its devices; the two on two
#              threads at once, as the app overlaps them. With VKHIP_BIN, the report's `start-up`
#              of `--headless --backend cuda --frames 10` beside them (target ≤ 0.25 s). CUDA's own
#              start-up is a floor no program that uses CUDA goes under; `both` against the two
#              alone says how much of the Vulkan instance can hide behind it.
#
# Environment: KF_REPS (5), KF_ITERATIONS (1000), NVCC (nvcc on PATH, else /usr/local/cuda/bin/nvcc).
# Output: OUTDIR/kernel-floor (the binary), OUTDIR/runs/*.log, OUTDIR/summary.txt. Exit 0 when every
# run succeeded, 1 when one failed (a kernel that did not write the whole buffer included), 2 for
# bad usage or a missing tool.
set -u
set -o pipefail
. "$(dirname "$0")/lib/stats.sh"

OUTDIR=${1:-}
BIN=${2:-}
if [ -z "$OUTDIR" ] || [ $# -gt 2 ]; then
  echo "usage: scripts/kernel-floor.sh OUTDIR [VKHIP_BIN]" >&2
  exit 2
fi
if [ -n "$BIN" ] && [ ! -x "$BIN" ]; then
  echo "kernel-floor: $BIN is not an executable" >&2
  exit 2
fi
REPS=${KF_REPS:-5}
ITERATIONS=${KF_ITERATIONS:-1000}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$NVCC" ]; then
  echo "kernel-floor: nvcc not found (set NVCC; the GPU machine's CUDA image has it)" >&2
  exit 2
fi
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUTDIR/runs"
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d ' .')
if [ -z "$CC" ]; then
  echo "kernel-floor: nvidia-smi gave no compute capability" >&2
  exit 2
fi
# As NVRTC compiles sinewave for the app (src/compute/cuda/mod.rs: --fmad=false, this GPU's sm).
if ! "$NVCC" -O3 -std=c++17 -arch="sm_$CC" --fmad=false -o "$OUTDIR/kernel-floor" \
  "$HERE/kernel-floor.cu" -lcuda -ldl >"$OUTDIR/runs/nvcc.log" 2>&1; then
  cat "$OUTDIR/runs/nvcc.log" >&2
  echo "kernel-floor: nvcc failed" >&2
  exit 2
fi
FLOOR=$OUTDIR/kernel-floor
failed=0
run() { # LOG CMD...: run, keep the output, count a failure
  local log=$OUTDIR/runs/$1
  shift
  if ! "$@" >"$log" 2>&1; then
    echo "kernel-floor: failed ($*), see $log" >&2
    failed=1
  fi
}

echo "== kernel: $REPS repetitions, $ITERATIONS timed iterations each" >&2
"$FLOOR" kernel 4096x4096 10 >/dev/null 2>&1 # warm-up: module load, clocks
for rep in $(seq 1 "$REPS"); do
  if [ -n "$BIN" ] && [ $((rep % 2)) -eq 0 ]; then
    run "bench-$rep.log" "$BIN" bench-kernel --backend cuda --grid 4096x4096 --iterations "$ITERATIONS"
  fi
  run "kernel-$rep.log" "$FLOOR" kernel 4096x4096 "$ITERATIONS"
  if [ -n "$BIN" ] && [ $((rep % 2)) -eq 1 ]; then
    run "bench-$rep.log" "$BIN" bench-kernel --backend cuda --grid 4096x4096 --iterations "$ITERATIONS"
  fi
done
echo "== init: $REPS fresh processes each" >&2
for rep in $(seq 1 "$REPS"); do
  for which in cuda vulkan both; do
    run "init-$which-$rep.log" "$FLOOR" init "$which"
  done
  if [ -n "$BIN" ]; then
    run "start-$rep.log" "$BIN" --headless --backend cuda --frames 10
  fi
done

# The summary: medians over the repetitions, with min–max.
stats() { # values on stdin → "median (min–max), n"
  # shellcheck disable=SC2046 # one value a word
  set -- $(sort -g)
  [ $# -gt 0 ] || { echo none; return; }
  printf '%.3f (%.3f–%.3f), n=%d\n' "$(median "$@")" "$1" "${!#}" "$#"
}
field() { # FILE-GLOB LINE-PREFIX KEY: the KEY=value of each file's line starting with PREFIX
  local prefix=$2 key=$3
  # shellcheck disable=SC2086 # the glob is meant to expand
  cat $1 2>/dev/null | grep "^$prefix" | tr ' ' '\n' | sed -n "s/^$key=//p"
}
{
  echo "kernel-floor, $(date -u '+%F %H:%M UTC'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1)"
  grep -h '^device:' "$OUTDIR"/runs/kernel-1.log
  grep -h '^check:' "$OUTDIR"/runs/kernel-1.log
  echo "kernel at 4096x4096 (medians of the repetitions' medians, min–max):"
  for v in sinewave pattern flat fill; do
    echo "  $v: µs $(field "$OUTDIR/runs/kernel-*.log" "$v " median_us | stats)"
    [ "$v" = fill ] && continue
    echo "  $v / fill: $(field "$OUTDIR/runs/kernel-*.log" "$v " per_iteration_ratio_p50 | stats)"
  done
  if [ -n "$BIN" ]; then
    echo "  vkhip bench-kernel ratio (target ≤ 1.05): $(field "$OUTDIR/runs/bench-*.log" bench-kernel: ratio | stats)"
  fi
  echo "CUDA start-up in a fresh process (ms):"
  for k in cuInit_ms primary_context_ms first_alloc_ms total_ms; do
    echo "  $k: $(field "$OUTDIR/runs/init-cuda-*.log" init: "$k" | stats)"
  done
  echo "a Vulkan instance and its devices in a fresh process (ms):"
  echo "  vulkan_ms: $(field "$OUTDIR/runs/init-vulkan-*.log" init: vulkan_ms | stats)"
  echo "both on two threads started together (ms; each side's time beside its time alone above):"
  for k in cuInit_ms primary_context_ms cuda_ms vulkan_ms total_ms; do
    echo "  $k: $(field "$OUTDIR/runs/init-both-*.log" init: "$k" | stats)"
  done
  if [ -n "$BIN" ]; then
    echo "  vkhip --backend cuda start-up (s, target ≤ 0.25): $(cat "$OUTDIR"/runs/start-*.log 2>/dev/null | sed -n 's/^ *start-up *\([0-9.]*\) s.*/\1/p' | stats)"
  fi
} >"$OUTDIR/summary.txt"
cat "$OUTDIR/summary.txt"
exit "$failed"
