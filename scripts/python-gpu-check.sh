#!/usr/bin/env bash
# The Python door on the GPU machine (issues 38, 45): install the prebuilt vkhip wheel as a user
# would, into the machine's own Python (its python3: /opt/torch/.venv on the device) with no
# network and no Rust (`pip install --no-deps --no-index WHEEL`: pip refuses a wheel whose tag
# this Python or this glibc cannot run), then run python/gpu_check.py: torch, CuPy and JAX read
# what Vulkan wrote and write what Vulkan reads, every value checked, fds and RSS flat, the
# profiler's verdict on a correct and a broken torch loop, stream numbers, N views into torch
# and (N, rows, cols) heights from torch. One row per check;
# exit status = failed rows.
#
#   scripts/python-gpu-check.sh WHEEL [gpu_check.py options]
#   scripts/python-gpu-check.sh CARRY_DIR [gpu_check.py options]   (CARRY_DIR holds one vkhip-*.whl)
# e.g. scripts/python-gpu-check.sh target/wheels/vkhip-0.1.0-cp39-abi3-manylinux_2_28_x86_64.whl \
#        --vkhip target/release/vkhip --out "$OUT"
set -euo pipefail
given=${1:?usage: python-gpu-check.sh WHEEL|CARRY_DIR [options]}
shift
if [ -d "$given" ]; then
    wheels=("$given"/vkhip-*.whl)
    [ "${#wheels[@]}" -eq 1 ] && [ -f "${wheels[0]}" ] ||
        { echo "$given: expected one vkhip-*.whl, found: ${wheels[*]}" >&2; exit 2; }
    wheel=${wheels[0]}
else
    wheel=$given
fi
[ -f "$wheel" ] || { echo "$wheel: no such wheel" >&2; exit 2; }
echo "wheel: $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB; python3 is $(command -v python3)"
echo "Rust here: $(command -v cargo rustc maturin 2>/dev/null | tr '\n' ' ' || true)(none is needed)"
python3 -m pip install -q --no-deps --no-index --force-reinstall "$wheel"
# Run from outside the checkout: the installed package is imported, not python/'s sources.
cd /
python3 -c 'import vkhip, sys, os; d = os.path.dirname(vkhip.__file__); print("vkhip", vkhip.__version__, "from", d, "on Python", sys.version.split()[0], "installed", sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs) // 1024, "KiB")'
cd - >/dev/null
check="$(cd "$(dirname "$0")/.." && pwd)/python/gpu_check.py"
rc=0
# -P: the script's folder (python/, the package's sources) is not put on sys.path.
PYTHONUNBUFFERED=1 python3 -P "$check" "$@" || rc=$?
# PYCHECK_VALIDATION=1: a short torch run (300 frames, the profiler's loops, frames, the viewer)
# again under the Khronos validation layer: what the package submits draws no message (CUDA's
# signals of the shared timelines, which the layer cannot see, are counted apart).
if [ "${PYCHECK_VALIDATION:-0}" = 1 ]; then
    . "$(dirname "$0")/validation-layer.sh"
    base=$(mktemp -d /tmp/vkhip-vl.XXXXXX)/python
    vl_env "$base"
    env "${VL_ENV[@]}" PYTHONUNBUFFERED=1 python3 -P "$check" \
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
