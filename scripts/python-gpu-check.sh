#!/usr/bin/env bash
# The Python door on the GPU machine (issue 38): install the vkhip wheel from a folder (no
# network there) and run python/gpu_check.py: torch, CuPy and JAX read what Vulkan wrote and write
# what Vulkan reads, every value checked, fds and RSS flat, the profiler's verdict on a correct
# and a broken torch loop, N views into torch and (N, rows, cols) heights from torch. One row per
# check; exit status = failed rows.
#
#   scripts/python-gpu-check.sh CARRY [gpu_check.py options]   (CARRY holds vkhip-*.whl)
set -euo pipefail
carry=${1:?usage: python-gpu-check.sh CARRY_DIR [options]}
shift
site=$(mktemp -d /tmp/vkhip-site.XXXXXX)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$carry"/vkhip-*.whl
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
python3 -c 'import vkhip, sys; print("vkhip", vkhip.__version__, "from", vkhip.__file__, "on Python", sys.version.split()[0])'
# -P: the script's folder (python/, the package's sources) is not put on sys.path.
rc=0
PYTHONUNBUFFERED=1 python3 -P "$(dirname "$0")/../python/gpu_check.py" "$@" || rc=$?
# PYCHECK_VALIDATION=1: a short torch run (300 frames, the profiler's loops, frames, the viewer)
# again under the Khronos validation layer: what the package submits draws no message (CUDA's
# signals of the shared timelines, which the layer cannot see, are counted apart).
if [ "${PYCHECK_VALIDATION:-0}" = 1 ]; then
    . "$(dirname "$0")/validation-layer.sh"
    base=$(mktemp -d /tmp/vkhip-vl.XXXXXX)/python
    vl_env "$base"
    env "${VL_ENV[@]}" PYTHONUNBUFFERED=1 python3 -P "$(dirname "$0")/../python/gpu_check.py" \
        "$@" --frames 300 --frameworks torch --broken-runs 1 >"$base.log" 2>&1 || true
    if VL_FOREIGN=1 vl_check "$base"; then
        echo "PASS  under the Khronos validation layer (300 frames): $VL_SUMMARY"
    else
        echo "FAIL  under the Khronos validation layer (300 frames): $VL_SUMMARY"
        grep -oE '[A-Za-z0-9_.-]+\([A-Z]+ / [A-Z]+\): msgNum:[^|]*' "$base.validation.log" | sort | uniq -c | sort -rn | head -5
        rc=1
    fi
fi
exit "$rc"
