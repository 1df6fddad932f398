# shellcheck shell=bash
# scripts/lib/nvrtc.sh — make libnvrtc findable for the CUDA checks, written once. Source it:
#     . "$(dirname "$0")/lib/nvrtc.sh"
# The crates dlopen libnvrtc.so(.13|.12) by name. If neither the loader cache nor LD_LIBRARY_PATH
# has it, the first found where the CUDA toolkit and NVIDIA's pip wheels put it has its directory
# added to LD_LIBRARY_PATH. NVRTC_NOTE says which, in one line.

# NVRTC_NOTE is read by the scripts that source this one.
# shellcheck disable=SC2034
NVRTC_NOTE="libnvrtc: found by the loader or LD_LIBRARY_PATH"
nvrtc_visible() {
    local d
    ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so' && return 0
    local IFS=:
    for d in ${LD_LIBRARY_PATH:-}; do
        [ -n "$d" ] && compgen -G "$d/libnvrtc.so*" >/dev/null && return 0
    done
    return 1
}
if ! nvrtc_visible; then
    NVRTC_NOTE="libnvrtc: NOT FOUND (the CUDA runs will report it)"
    for lib in /usr/local/cuda/lib64/libnvrtc.so.1[23] /usr/local/cuda-1[23]*/lib64/libnvrtc.so.1[23] \
        /usr/local/lib/python3*/{dist,site}-packages/nvidia/cu13/lib/libnvrtc.so.13 \
        "${HOME:-}"/.local/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13 \
        /usr/local/lib/python3*/{dist,site}-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 \
        "${HOME:-}"/.local/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12; do
        if [ -e "$lib" ]; then
            export LD_LIBRARY_PATH="${lib%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
            NVRTC_NOTE="libnvrtc: $lib (directory added to LD_LIBRARY_PATH)"
            break
        fi
    done
fi
