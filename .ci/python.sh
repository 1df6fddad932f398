#!/usr/bin/env bash
# CI's Python stage (issue 38): build the vkhip wheel (debug profile: it reuses the tests stage's
# build), install it into a fresh virtual environment with pytest and NumPy from PyPI, lint and
# type-check the package (ruff, mypy --strict over the stubs), run pytest on lavapipe; then the HIP
# wheel (Debian's HIP, no AMD GPU here) to its no-device exit. Prints each step's time.
#   .ci/python.sh TMPDIR
set -euo pipefail
cd "$(dirname "$0")/../python"
tmp=${1:?usage: .ci/python.sh TMPDIR}
step() { echo "   [$(( $(date +%s) - T0 )) s] $*"; }
T0=$(date +%s)
python3 -m venv "$tmp/venv"
# shellcheck disable=SC1091
. "$tmp/venv/bin/activate"
pip install -q --disable-pip-version-check "maturin>=1.9,<2" "pytest>=7" "numpy>=1.22" "ruff>=0.6" "mypy>=1.10"
step "tools: $(maturin --version), $(ruff --version), $(mypy --version | cut -d' ' -f1-2), numpy $(python -c 'import numpy; print(numpy.__version__)')"
ruff format --check vkhip tests gpu_check.py bench.py multi_gpu_bench.py examples
ruff check vkhip tests gpu_check.py bench.py multi_gpu_bench.py examples
step "ruff: formatted and clean"
maturin build --locked --profile dev --out "$tmp/wheel" 2>&1 | grep -E "Built wheel|error|warning: unused" || true
pip install -q --force-reinstall --no-deps "$tmp"/wheel/vkhip-*.whl
step "wheel built and installed: $(basename "$tmp"/wheel/vkhip-*.whl)"
mypy
step "mypy --strict: the stubs and a typed use of them"
# From inside python/: the installed package is imported (pytest puts tests/ on the path, not .).
# A skip is a failure here: CI has everything the tests need (the HIP wheel's test runs below).
summary=$(pytest -q -p no:cacheprovider -rs tests --ignore=tests/test_hip_build.py 2>&1 | tail -n 4)
echo "$summary"
if grep -q skipped <<<"$summary"; then echo "pytest skipped a test in CI" >&2; exit 1; fi
step "pytest (lavapipe)"
# The same tests under the Khronos validation layer: every Vulkan call the package makes (and the
# vkhip binary the viewer's test runs) draws no message.
. ../scripts/validation-layer.sh
vl_env "$tmp/pytest-vl"
env "${VL_ENV[@]}" pytest -q -p no:cacheprovider tests --ignore=tests/test_hip_build.py 2>&1 | tail -n 1
vl_check "$tmp/pytest-vl" || { echo "pytest under the validation layer: $VL_SUMMARY" >&2; cat "$tmp/pytest-vl.validation.log" >&2; exit 1; }
step "pytest under the validation layer: $VL_SUMMARY"
rm -rf "$tmp/wheel"
# The HIP wheel links the machine's ROCm (libamdhip64): nothing of it is copied into the wheel.
HIP_PATH=/usr maturin build --locked --profile dev --features hip --auditwheel skip --out "$tmp/wheel" 2>&1 | grep -E "Built wheel|error" || true
pip install -q --force-reinstall --no-deps "$tmp"/wheel/vkhip-*.whl
summary=$(VKHIP_EXPECT_HIP=1 pytest -q -p no:cacheprovider -rs tests/test_hip_build.py tests/test_errors.py 2>&1 | tail -n 4)
echo "$summary"
if grep -q skipped <<<"$summary"; then echo "pytest skipped a test in CI" >&2; exit 1; fi
step "the HIP wheel: Device(\"hip\") ends in its no-device error (it never ran on AMD hardware)"
deactivate
