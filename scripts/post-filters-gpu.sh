#!/usr/bin/env bash
# scripts/post-filters-gpu.sh TESTBIN — the post filters (`--post outline`) of every NVIDIA
# backend against the CPU reference, byte for byte, on a machine with an NVIDIA GPU and no cargo.
#
# TESTBIN is the test binary of tests/post_filters.rs, built elsewhere with
#     cargo test --release --test post_filters --no-run
# (cargo prints its path: target/release/deps/post_filters-<hash>). It runs every test of that
# binary, one at a time: the vulkan shader on the first usable Vulkan device, NVRTC compiling
# kernels/outline.hip, `cuda` (imported images: the GPU-side path waiting `rendered` and
# signalling `posted`, and the host-synchronous path) and `cuda-in-vulkan` (the kernel in
# Vulkan's queue on VK_NVX_image_view_handle handles, under the validation layer when installed)
# on 1x1, 333x77 and 4097x3. Prints one line per backend and size, then OK or FAIL; exits 0 only
# if every test passed and none skipped. Needs bash and grep; finds libnvrtc as gpu-check.sh does.
set -u
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 TESTBIN (the post_filters test binary)" >&2
    exit 2
fi
if ! { ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so'; }; then
    for lib in /usr/local/cuda/lib64/libnvrtc.so.1[23] /usr/local/cuda-1[23]*/lib64/libnvrtc.so.1[23] \
        /usr/local/lib/python3*/dist-packages/nvidia/cu13/lib/libnvrtc.so.13 \
        /usr/local/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13 \
        /usr/local/lib/python3*/dist-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 \
        /usr/local/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12; do
        if [ -e "$lib" ]; then
            export LD_LIBRARY_PATH="${lib%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
            echo "libnvrtc: $lib"
            break
        fi
    done
fi
log=$(mktemp)
RUST_LOG=${RUST_LOG:-warn} timeout 300 "$1" --test-threads=1 --nocapture >"$log" 2>&1
rc=$?
grep -E '^(cuda|cuda-in-vulkan|vulkan): OK|^skipped:|panicked|^test result|validation layer:' "$log"
if [ $rc -eq 0 ] && ! grep -q '^skipped:' "$log" \
    && grep -q '^cuda: OK 4097x3' "$log" && grep -q '^cuda-in-vulkan: OK 4097x3' "$log"; then
    echo "post-filters-gpu: OK"
    rm -f "$log"
    exit 0
fi
echo "post-filters-gpu: FAIL (exit $rc; full output: $log)"
exit 1
