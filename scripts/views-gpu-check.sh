#!/usr/bin/env bash
# scripts/views-gpu-check.sh BIN OUTDIR — `--views N` (issue 43) on a machine with an NVIDIA GPU.
#
# Runs every check even when an earlier one fails, logs each command's output to
# OUTDIR/<check>.log, prints a table (check, result, key figure) last and exits 1 if any check
# failed. Needs only bash, coreutils, awk and grep; no cargo.
#
#   1. verify --views 16 --envs 1 on cuda (external, the default) and vulkan: heights checked, no
#      view blank; verify --views 16 --envs 16 on vulkan, cuda (one launch, gridDim.z = 16; also
#      a grid whose rows are not 16-byte aligned, and batches of 4 in one sinewave_batch launch)
#      and cuda-in-vulkan: every environment's values against the CPU reference
#   2. the captures of frame 0 with --views 7 from cuda and vulkan, byte-identical to cpu's
#      (BIN compare-png)
#   3. views/s: vulkan and cuda at N = 1, 16, 64, 256, 1024, 128x128, grid 32x32 (the report's
#      `views` line; `hand-off` lines: still one wait each way per frame)
#   4. limits: --views 4096 refused with exit 2 naming maxImageArrayLayers or
#      maxFramebufferLayers and the device's value
#   5. --validation with --views 64 on vulkan and cuda: 0 errors, 0 warnings
#
# The N = 1 cost against the previous build: scripts/bench-before-after.sh with the two binaries.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 BIN OUTDIR" >&2
    exit 2
fi
BIN=$1
OUT=$2
mkdir -p "$OUT"
T=${GPU_CHECK_TIMEOUT:-180}
export RUST_LOG=${RUST_LOG:-warn}
rows=()
failed=0

row() { # name result figure
    rows+=("$(printf '%-34s %-5s %s' "$1" "$2" "$3")")
    [ "$2" = PASS ] || failed=1
}

# check NAME CMD...: PASS when CMD exits 0; the figure is the last line of its output.
check() {
    local name=$1
    shift
    if timeout "$T" "$@" >"$OUT/$name.log" 2>&1; then
        row "$name" PASS "$(tail -n 1 "$OUT/$name.log" | cut -c1-110)"
    else
        row "$name" FAIL "exit $? (see $OUT/$name.log)"
    fi
}

# 1. verify
for b in cuda vulkan; do
    check "verify-views16-$b" "$BIN" verify --backend "$b" --views 16 --frames 6 --grid 256x256 --size 128x128
done
for b in vulkan cuda cuda-in-vulkan; do
    check "verify-views16-envs16-$b" "$BIN" verify --backend "$b" --views 16 --envs 16 --frames 6 --grid 256x256
done
# Rows not 16-byte aligned (the kernel's scalar stores), and a batch of 4 slots × 16 environments in
# one sinewave_batch launch (gridDim.z = 64).
check "verify-views16-envs16-cuda-255x129" "$BIN" verify --backend cuda --views 16 --envs 16 --frames 6 --grid 255x129
check "verify-views16-envs16-cuda-batch4" "$BIN" verify --backend cuda --views 16 --envs 16 --frames 16 --slots 8 --batch 4 --grid 256x256

# 2. captures vs cpu
for b in cpu cuda vulkan; do
    timeout "$T" "$BIN" --headless --frames 1 --views 7 --size 96x64 --grid 64x64 --backend "$b" \
        --capture "$OUT/views7-$b.png" >"$OUT/capture-$b.log" 2>&1
done
for b in cuda vulkan; do
    check "capture-views7-$b-vs-cpu" "$BIN" compare-png "$OUT/views7-cpu.png" "$OUT/views7-$b.png"
done

# 3. views/s
for b in vulkan cuda; do
    for n in 1 16 64 256 1024; do
        name="rate-$b-N$n"
        if timeout "$T" "$BIN" --headless --backend "$b" --views "$n" --frames 300 --warmup-frames 50 \
            --size 128x128 --grid 32x32 >"$OUT/$name.log" 2>&1; then
            fps=$(grep -m1 'frame time' "$OUT/$name.log" | sed 's/.*(\(.*\) fps).*/\1/')
            views=$(grep -m1 '^  views' "$OUT/$name.log" | sed 's/.*(\([0-9]*\) views\/s).*/\1/')
            draw=$(grep -m1 '^  draw ' "$OUT/$name.log" | awk '{print $3, $4}')
            row "$name" PASS "fps $fps, views/s ${views:-$fps}, draw p50 $draw"
        else
            row "$name" FAIL "exit $? (see $OUT/$name.log)"
        fi
    done
done

# 4. limits
timeout "$T" "$BIN" --headless --frames 1 --views 4096 >"$OUT/limit-views.log" 2>&1
code=$?
if [ $code -eq 2 ] && grep -qE 'is past this device.s max(ImageArrayLayers|FramebufferLayers) \([0-9]+\)' "$OUT/limit-views.log"; then
    row limit-views4096 PASS "$(grep -m1 'past this device' "$OUT/limit-views.log" | cut -c1-110)"
else
    row limit-views4096 FAIL "exit $code (see $OUT/limit-views.log)"
fi

# 5. validation
for b in vulkan cuda; do
    name="validation-views64-$b"
    timeout "$T" "$BIN" --headless --validation --backend "$b" --views 64 --frames 20 --size 64x64 \
        --grid 64x64 >"$OUT/$name.log" 2>&1
    line=$(grep -m1 '^validation: ' "$OUT/$name.log")
    case $line in
        "validation: 0 errors, 0 warnings"*) row "$name" PASS "$line" ;;
        *) row "$name" FAIL "${line:-no validation line} (see $OUT/$name.log)" ;;
    esac
done

printf '%-34s %-5s %s\n' check result figure
printf '%s\n' "${rows[@]}"
exit $failed
