#!/usr/bin/env bash
# The Python door's benchmarks on the GPU machine (issue 38; BENCHMARKS.md): install the vkhip
# wheel from a folder (no network there) and run python/bench.py: Vulkan frames into torch (zero
# copy against the host path) at 256², 1280x720, 1920x1080, 3840x2160, and torch-written heights
# against `vkhip --backend cuda` at 256² and 1024², in interleaved rounds (`--only heights
# --breakdown`, ~2 minutes: also where each torch writer call's time goes). With `--only views`
# (issue 43): views into torch per second against N beside the GPU's raster limit, hand-offs per
# frame, 1920x1080 with N = 4 against the host round trip, memory and the largest N (~6 minutes
# on an H200 with the defaults; bench.py --help lists the knobs).
#
#   scripts/python-bench.sh CARRY [bench.py options]   (CARRY holds vkhip-*.whl and the release
#                                                      vkhip binary: --vkhip CARRY/vkhip)
set -euo pipefail
carry=${1:?usage: python-bench.sh CARRY_DIR [options]}
shift
site=$(mktemp -d /tmp/vkhip-site.XXXXXX)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$carry"/vkhip-*.whl
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
python3 -c 'import torch, vkhip; print("vkhip", vkhip.__version__, "torch", torch.__version__)'
# -P: the script's folder (python/, the package's sources) is not put on sys.path.
PYTHONUNBUFFERED=1 python3 -P "$(dirname "$0")/../python/bench.py" --vkhip "$carry/vkhip" "$@"
