#!/usr/bin/env bash
# The Python door on the GPU machine (issue 38): install the vkhip wheel from a folder (no
# network there) and run python/gpu_check.py: torch, CuPy and JAX read what Vulkan wrote and write
# what Vulkan reads, every value checked, fds and RSS flat, the profiler's verdict on a correct
# and a broken torch loop. One row per check; exit status = failed rows.
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
PYTHONUNBUFFERED=1 python3 -P "$(dirname "$0")/../python/gpu_check.py" "$@"
