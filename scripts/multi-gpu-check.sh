#!/usr/bin/env bash
# Every GPU of the machine (issue 44; BENCHMARKS.md), in one command on the GPU machine: install
# the vkhip wheel from a folder (no network there), then
#   1. python/gpu_check.py's device rows (--frameworks torch): the same GPU four ways, device=G
#      refused, and with 2+ GPUs every GPU n read and written by torch on cuda:n, from one
#      process (a Device and a thread per GPU) and from one process per GPU;
#   2. python/multi_gpu_bench.py: frames into torch per second per GPU alone and with every GPU
#      busy at once (one process per GPU), and the DDP example (python/examples/ddp_frames.py)
#      under torchrun at 1, 2, 4, 8 GPUs; the tables for BENCHMARKS.md;
#   3. the DDP example once under the Khronos validation layer (0 messages expected).
# On one GPU it runs the one-GPU rows (and says the multi-GPU ones need more).
#
#   scripts/multi-gpu-check.sh CARRY [multi_gpu_bench.py options]   (CARRY holds vkhip-*.whl)
# Exit status: the failed rows of step 1, plus 1 for each of steps 2 and 3 that failed.
set -euo pipefail
carry=${1:?usage: multi-gpu-check.sh CARRY_DIR [multi_gpu_bench.py options]}
shift
here=$(cd "$(dirname "$0")/.." && pwd)
site=$(mktemp -d /tmp/vkhip-site.XXXXXX)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$carry"/vkhip-*.whl
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader || true
python3 -c 'import torch, vkhip; print("vkhip", vkhip.__version__, "torch", torch.__version__, "GPUs", torch.cuda.device_count())'
rc=0
echo "== 1. device rows (python/gpu_check.py --frameworks torch --frames 2000)"
PYTHONUNBUFFERED=1 python3 -P "$here/python/gpu_check.py" --frameworks torch --frames 2000 \
    --broken-runs 1 --out "$(mktemp -d /tmp/vkhip-out.XXXXXX)" || rc=$?
echo "== 2. frames per GPU alone and all at once; the DDP example at 1..G GPUs"
PYTHONUNBUFFERED=1 python3 -P "$here/python/multi_gpu_bench.py" "$@" || rc=$((rc + 1))
# 3. The example people copy, once more under the Khronos validation layer (one rank, 40 steps:
# this run counts the layer's messages; learning is checked in step 2, so --max-ratio 10).
echo "== 3. the DDP example under the Khronos validation layer (1 GPU, 40 steps)"
. "$here/scripts/validation-layer.sh"
base=$(mktemp -d /tmp/vkhip-vl.XXXXXX)/ddp
vl_env "$base"
env "${VL_ENV[@]}" CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 python3 -m torch.distributed.run \
    --standalone --nproc-per-node=1 "$here/python/examples/ddp_frames.py" --steps 40 \
    --max-ratio 10 >"$base.log" 2>&1 || { echo "FAIL  the example under the layer: exit $?"; tail -5 "$base.log"; rc=$((rc + 1)); }
if VL_FOREIGN=1 vl_check "$base"; then
    echo "PASS  the DDP example under the Khronos validation layer: $VL_SUMMARY"
else
    echo "FAIL  the DDP example under the Khronos validation layer: $VL_SUMMARY"
    rc=$((rc + 1))
fi
exit "$rc"
