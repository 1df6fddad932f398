#!/usr/bin/env bash
# scripts/capi-gpu-check.sh — the C door (capi/, issue 40) on a machine with an NVIDIA GPU, where
# there is no cargo: the C programs are built there with the system's cc against a prebuilt
# libvkhip.so. Two steps:
#
#   Here (with cargo):   cargo build --release -p vkhip-capi
#                        scripts/capi-gpu-check.sh pack DIR
#       copies into DIR: target/release/libvkhip.so ($CARGO_TARGET_DIR honoured), capi/include/vkhip.h,
#       the C sources (capi/examples/engine.c, engine_broken.c; capi/tests/c/expect.h,
#       cuda_stream.c), Vulkan's headers (/usr/include/vulkan, /usr/include/vk_video; Debian's
#       libvulkan-dev) and the loader it links against (libvulkan.so.1).
#   There:               scripts/capi-gpu-check.sh DIR OUTDIR
#       1. build engine, engine_broken and cuda_stream: cc -std=c99 -Wall -Wextra -Werror -pedantic
#          (one row for the three);
#       2. engine, CAPI_FRAMES (600) frames: exit 0, "verdict: 0 violations", "values: 0 of N
#          frames wrong" (every value of every frame checked on the host), a trace written;
#       3. engine under the Khronos validation layer (300 frames): the layer loaded and reported
#          nothing but the VUIDs it reports because it cannot see CUDA's signals of the shared
#          timelines (counted apart: VL_FOREIGN=1, scripts/validation-layer.sh), exit 0;
#       4. engine_broken, 10 runs of 300 frames: each exits 1 with a "hazard: unordered:
#          heights[…]" line naming CUDA's "sim" scope: caught N of 10;
#       5. cuda_stream: CUDA's legacy and per-thread default streams lent to vkhip
#          (vkhip_cuda_with_stream), a kernel through each, every value read back, the profiler's
#          stream track on the lent stream, 0 violations: exit 0, "N passed, 0 failed".
#
# Prints one row per check last (also OUTDIR/summary.txt); logs and traces in OUTDIR. Exits 1 if
# a row failed, 2 for bad usage. Each run is limited to CAPI_TIMEOUT seconds (default 180). Needs
# bash, coreutils, grep, cc; the Vulkan loader and the validation layer where the loader finds them;
# libnvrtc where the loader finds it, or in the CUDA toolkit's or NVIDIA's pip wheels' directories
# (scripts/lib/nvrtc.sh).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)

if [ "${1:-}" = pack ] && [ $# -eq 2 ]; then
    set -e
    dir=$2
    lib=${CARGO_TARGET_DIR:-$here/target}/release/libvkhip.so
    [ -f "$lib" ] || { echo "capi-gpu-check: no $lib (cargo build --release -p vkhip-capi)" >&2; exit 2; }
    mkdir -p "$dir/lib" "$dir/include"
    cp "$lib" "$dir/lib/"
    cp "$(readlink -f /usr/lib/x86_64-linux-gnu/libvulkan.so.1)" "$dir/lib/libvulkan.so.1"
    cp "$here/capi/include/vkhip.h" "$here/capi/examples/engine.c" "$here/capi/examples/engine_broken.c" \
        "$here/capi/tests/c/expect.h" "$here/capi/tests/c/cuda_stream.c" "$dir/include/"
    cp -r /usr/include/vulkan /usr/include/vk_video "$dir/include/"
    echo "capi-gpu-check: packed into $dir ($(du -sh "$dir" | cut -f1)): run scripts/capi-gpu-check.sh $dir OUTDIR there"
    exit 0
fi
if [ $# -ne 2 ]; then
    echo "usage: $0 pack DIR   (here, after cargo build --release -p vkhip-capi)" >&2
    echo "       $0 DIR OUTDIR (on the GPU machine)" >&2
    exit 2
fi
dir=$(cd "$1" && pwd) || exit 2
out=$2
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
limit=${CAPI_TIMEOUT:-180}
frames=${CAPI_FRAMES:-600}
# shellcheck source=scripts/validation-layer.sh
. "$here/scripts/validation-layer.sh"
# shellcheck source=scripts/lib/nvrtc.sh
. "$here/scripts/lib/nvrtc.sh"

failures=0
lines=()
row() { # row PASS|FAIL TEXT
    lines+=("$1  $2")
    [ "$1" = PASS ] || failures=$((failures + 1))
}

# 1. Build, as an engine developer would (capi/README.md): the header, -lvkhip, -lvulkan. The
# loader found at run time is the machine's (LD_LIBRARY_PATH, ldconfig) before the packed copy.
built=0
for name in engine engine_broken cuda_stream; do
    if cc -std=c99 -Wall -Wextra -Werror -pedantic -I"$dir/include" "$dir/include/$name.c" -o "$out/$name" \
        -L"$dir/lib" -Wl,-rpath,"$dir/lib" -lvkhip -l:libvulkan.so.1 -pthread >"$out/build-$name.log" 2>&1; then
        built=$((built + 1))
    fi
done
if [ "$built" -eq 3 ]; then
    row PASS "build: engine, engine_broken, cuda_stream with cc -std=c99 -Wall -Wextra -Werror -pedantic ($(cc --version | head -n 1))"
else
    row FAIL "build: $built of 3 built (see $out/build-*.log)"
fi

# 2. engine to completion
rc=0
timeout "$limit" "$out/engine" "$frames" "$out/engine.json" >"$out/engine.log" 2>&1 || rc=$?
verdict=$(grep -m1 '^verdict:' "$out/engine.log")
values=$(grep -m1 '^values:' "$out/engine.log")
if [ "$rc" -eq 0 ] && [[ "$verdict" == "verdict: 0 violations"* ]] && [ "$values" = "values: 0 of $frames frames wrong" ] &&
    [ -s "$out/engine.json" ]; then
    row PASS "engine, $frames frames: exit 0, $verdict, $values, trace $(du -h "$out/engine.json" | cut -f1)"
else
    row FAIL "engine, $frames frames: exit $rc, ${verdict:-no verdict}, ${values:-no values line} (see $out/engine.log)"
fi

# 3. engine under the validation layer
vl_env "$out/engine-validation"
rc=0
env "${VL_ENV[@]}" timeout "$limit" "$out/engine" 300 "$out/engine-validation.json" >"$out/engine-validation.log" 2>&1 || rc=$?
if VL_FOREIGN=1 vl_check "$out/engine-validation" && [ "$rc" -eq 0 ]; then
    row PASS "engine under the Khronos layer, 300 frames: exit 0, $VL_SUMMARY"
else
    row FAIL "engine under the Khronos layer, 300 frames: exit $rc, $VL_SUMMARY (see $out/engine-validation.validation.log)"
fi

# 4. engine_broken, caught in every run
caught=0
for i in $(seq 1 10); do
    log=$out/engine_broken-$i.log
    rc=0
    timeout "$limit" "$out/engine_broken" 300 "$out/engine_broken-$i.json" >"$log" 2>&1 || rc=$?
    if [ "$rc" -eq 1 ] && grep -qE '^hazard: unordered: heights\[[01]\]: .*"sim"' "$log"; then
        caught=$((caught + 1))
    fi
done
example=$(grep -m1 -E '^hazard: unordered: heights\[[01]\]: .*"sim"' "$out/engine_broken-1.log" | cut -c 9-)
if [ "$caught" -eq 10 ]; then
    row PASS "engine_broken, 10 runs of 300 frames: caught 10 of 10 (exit 1, e.g. \"$example\")"
else
    row FAIL "engine_broken, 10 runs of 300 frames: caught $caught of 10 (see $out/engine_broken-*.log)"
fi

# 5. the engine's own stream
rc=0
timeout "$limit" "$out/cuda_stream" >"$out/cuda_stream.log" 2>&1 || rc=$?
last=$(grep -E '^cuda_stream: [0-9]+ passed' "$out/cuda_stream.log" | tail -n 1)
if [ "$rc" -eq 0 ] && [[ "$last" == *" passed, 0 failed" ]]; then
    row PASS "cuda_stream (CU_STREAM_LEGACY and CU_STREAM_PER_THREAD lent): $last; $(grep -m1 'verdict' "$out/cuda_stream.log" | cut -c 14-)"
else
    row FAIL "cuda_stream: exit $rc, ${last:-no summary} (see $out/cuda_stream.log)"
fi

{
    echo "== capi-gpu-check: $(date -u +%FT%TZ), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
    echo "$NVRTC_NOTE"
    printf '%s\n' "${lines[@]}"
    echo "$((${#lines[@]} - failures)) passed, $failures failed"
} | tee "$out/summary.txt"
[ "$failures" -eq 0 ]
