#!/usr/bin/env bash
# CI's Python stages (issues 38, 45), in two parts that share one virtual environment:
#
#   .ci/python.sh TMPDIR checks   beside the soaks, reusing the tests stage's debug build: the tools
#                                 from PyPI, ruff, mypy --strict over the stubs, and the HIP wheel
#                                 (Debian's HIP, no AMD GPU here) to its no-device exit.
#   .ci/python.sh TMPDIR wheel    after the release stage's `cargo build --release`, whose
#                                 dependencies it shares: the release wheel people install (the
#                                 artifact: stripped, tagged for the glibc it needs by maturin's
#                                 audit), in WHEELS (default target/wheels) with the sdist; pytest on
#                                 lavapipe against that wheel, under the validation layer.
#
# Prints each step's time. The wheel's path, size, installed size and tag are printed too.
set -euo pipefail
cd "$(dirname "$0")/../python"
tmp=${1:?usage: .ci/python.sh TMPDIR checks|wheel}
part=${2:?usage: .ci/python.sh TMPDIR checks|wheel}
step() { echo "   [$(($(date +%s) - T0)) s] $*"; }
T0=$(date +%s)
# The glibc floor the release wheel is tagged with; maturin's audit fails the build if the
# extension needs a newer glibc symbol (a native build on Debian 12 needs 2.34: see BENCHMARKS.md).
COMPAT=${VKHIP_WHEEL_COMPAT:-manylinux_2_34}

if [ "$part" = checks ]; then
  python3 -m venv "$tmp/venv"
  # shellcheck disable=SC1091
  . "$tmp/venv/bin/activate"
  pip install -q --disable-pip-version-check "maturin>=1.9,<2" "pytest>=7" "numpy>=1.22" "ruff>=0.6" "mypy>=1.10"
  step "tools: $(maturin --version), $(ruff --version), $(mypy --version | cut -d' ' -f1-2), numpy $(python -c 'import numpy; print(numpy.__version__)')"
  ruff format --check vkhip tests gpu_check.py bench.py multi_gpu_bench.py examples
  ruff check vkhip tests gpu_check.py bench.py multi_gpu_bench.py examples
  step "ruff: formatted and clean"
  mypy
  step "mypy --strict: the stubs and a typed use of them"
  # The HIP wheel links the machine's ROCm (libamdhip64): nothing of it is copied into the wheel.
  HIP_PATH=/usr maturin build --locked --profile dev --features hip --auditwheel skip --out "$tmp/hip-wheel" 2>&1 | grep -E "Built wheel|error" || true
  pip install -q --force-reinstall --no-deps "$tmp"/hip-wheel/vkhip-*.whl
  summary=$(VKHIP_EXPECT_HIP=1 pytest -q -p no:cacheprovider -rs tests/test_hip_build.py tests/test_errors.py 2>&1 | tail -n 4)
  echo "$summary"
  if grep -q skipped <<<"$summary"; then echo "pytest skipped a test in CI" >&2; exit 1; fi
  step "the HIP wheel: Device(\"hip\") ends in its no-device error (it never ran on AMD hardware)"
  rm -rf "$tmp/hip-wheel"
  exit 0
fi

[ "$part" = wheel ] || { echo "part $part: expected checks or wheel" >&2; exit 2; }
# shellcheck disable=SC1091
. "$tmp/venv/bin/activate"
wheels=${WHEELS:-$(cd .. && pwd)/target/wheels}
rm -rf "$wheels"
# --strip: no symbols or line tables in the extension (the release profile keeps line tables for
# the app's backtraces); built into target/release like the app, so only pyo3 and this crate
# compile here.
maturin build --locked --release --strip --compatibility "$COMPAT" --out "$wheels" 2>&1 | grep -E "Built wheel|error|warning: unused|⚠️" || true
wheel=$(ls "$wheels"/vkhip-*.whl)
installed_kib=$(python3 -c 'import sys, zipfile; print(sum(i.file_size for i in zipfile.ZipFile(sys.argv[1]).infolist()) // 1024)' "$wheel")
step "the release wheel: $wheel, $(du -k "$wheel" | cut -f1) KiB, $installed_kib KiB installed, tag ${wheel##*/vkhip-0.1.0-}"
if [ "$installed_kib" -gt 15360 ]; then echo "the wheel installs $installed_kib KiB: more than 15 MiB" >&2; exit 1; fi
maturin sdist --out "$wheels" 2>&1 | grep -E "Built source|error" || true
step "the sdist: $(ls "$wheels"/vkhip-*.tar.gz), $(du -k "$wheels"/vkhip-*.tar.gz | cut -f1) KiB"
pip install -q --force-reinstall --no-deps "$wheel"
# From inside python/: the installed package is imported (pytest puts tests/ on the path, not .).
# One run, under the Khronos validation layer: every test passes, and every Vulkan call the
# package makes (and the vkhip binary the viewer's test runs) draws no message. A skip is a
# failure here: CI has everything the tests need (the HIP wheel's test ran above).
. ../scripts/validation-layer.sh
vl_env "$tmp/pytest-vl"
summary=$(env "${VL_ENV[@]}" pytest -q -p no:cacheprovider -rs tests --ignore=tests/test_hip_build.py 2>&1 | tail -n 4)
echo "$summary"
if grep -q skipped <<<"$summary"; then echo "pytest skipped a test in CI" >&2; exit 1; fi
vl_check "$tmp/pytest-vl" || { echo "pytest under the validation layer: $VL_SUMMARY" >&2; cat "$tmp/pytest-vl.validation.log" >&2; exit 1; }
step "pytest (lavapipe) on the release wheel, under the validation layer: $VL_SUMMARY"
deactivate
