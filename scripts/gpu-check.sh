#!/usr/bin/env bash
# scripts/gpu-check.sh BIN OUTDIR — the CUDA backend's checks on a machine with an NVIDIA GPU.
#
# Runs every check even when an earlier one fails, logs each command's full output (stdout and
# stderr) to OUTDIR/<check>.log, prints a table (check, result, key figure) last, and exits 1 if
# any check failed (2 for bad usage). Needs only bash, coreutils, awk and grep; no cargo.
#
#   1. BIN info
#   2. BIN verify --backend cuda for sync in {external, binary, bridged, blocking},
#      slots in {1, 3}, grid in {256x256, 1000x777, 4096x4096}, 6 frames each
#   2b. the pipeline shapes: verify every K in 1..8, batch B in 1..K, run-ahead R in 0..K−B with
#      --sync external and --sync bridged on the three grids (120 shapes each), binary with
#      run-ahead (36 shapes each; the grids: GPU_CHECK_SWEEP_GRIDS, default all three; the
#      full sweep took 7.7 min on an H100 with GPU_CHECK_JOBS=16, GPU_CHECK_SWEEP_GRIDS=256x256
#      about 2 min), host-wait (simpleVulkan's scheme), --memory staged, the defaults, and
#      --frames-in-flight 2, 3 and 8 (the default is 4 headless);
#      one row per group (GPU_CHECK_JOBS parallel runs, default 4)
#   3. headless captures of the same frame with cuda and cpu, then BIN compare-png
#   4. BIN bench-kernel --backend cuda --grid 4096x4096 --iterations 200
#   5. BIN cycles --backend cuda --count 10 (fd and device-memory leak check)
#   6. profiler: --trace of cuda external K=3 at 256² and 1024² (and K=1, blocking, the vulkan
#      baseline), each checked by `BIN trace check`; --sync none must fail the check; tracing cost
#      (with vs without --trace, interleaved, 3 repetitions) at most 3% of frame time
#   6b. fault injection (VKHIP_FAULT) on the CUDA path: memory and semaphore import, NVRTC, launch
#   6c. optional soak (GPU_CHECK_SOAK_FRAMES=N): cuda external and bridged, RSS and fds flat
#   2c. cuda-in-vulkan (the kernel in Vulkan's queue, VK_NVX_binary_import): verify on every K,
#      one submission per frame (the default) and --submit split, and
#      on odd and extreme grids (2x1000: the narrowest grid --grid takes; 2x2, 4097x3, 16384x16384), its capture byte-identical to
#      cuda's, validation, traces checked, and in the soak
#   6d. the interop crate's CUDA examples, cuda_buffer, cuda_image, bring_your_own_device,
#      cuda_in_vulkan and cuda_post_process (their own kernels, every
#      value and texel checked on the host): each must print "<name>: OK" and exit 0, and again
#      under the Khronos validation layer, which must load and report nothing (a row each,
#      example-<name>-validation; the layer's log is OUTDIR/example-<name>-validation.validation.log,
#      scripts/validation-layer.sh). Found in
#      GPU_CHECK_EXAMPLES_DIR, default BIN's directory/examples (where
#      `cargo build --release -p vkhip-interop --examples` puts them)
#   6f. the post stage (--post outline, issue 24) on every NVIDIA backend (vulkan, cuda,
#      cuda-in-vulkan): verify at 1280x720 and 333x77 with K = 1 and 3 (one row, in parallel),
#      and cuda external and bridged with the default post batch (K/2 external, 1 bridged),
#      --post-batch 1 and --post-batch K at
#      333x77 for K = 1, 2, 3, 5, 8 over 2K+1 frames (the last batch partial),
#      a headless capture per backend compared with vulkan's (compare-png), a run under
#      --validation with 0 errors, a trace that `BIN trace check` passes (its post line in the
#      row; cuda also with --post-batch 1), a 20 s soak of all three at once (fds and RSS sampled at 5 s and at the end: flat),
#      and cuda --sync none, whose trace the checker must fail with post-stage violations.
#      About 60 s on an H100 with GPU_CHECK_JOBS=16
#   6e. the interop crate's wgpu examples (wgpu_cuda_texture, wgpu_cuda_buffer) under the Khronos
#      layer with 0 messages, and wgpu_cuda_texture for 10,000 frames with K = 3 (every frame
#      checked, fds and RSS flat); built with --features wgpu,wgpu/wgsl
#
# If the loader cannot find libnvrtc (.13 or .12), the script looks in the CUDA toolkit's and
# NVIDIA's pip wheels' usual directories and adds the first hit to LD_LIBRARY_PATH (the summary
# says which). Each command runs under `timeout` (GPU_CHECK_TIMEOUT seconds, default 180) so a hang cannot eat
# the GPU session. RUST_LOG defaults to "info" so the logs show what the backend chose (kernel
# target, compiler, cache, launch shape).
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 BIN OUTDIR" >&2
    exit 2
fi
bin=$1
out=$2
if [ ! -x "$bin" ]; then
    echo "gpu-check: $bin is not an executable file" >&2
    exit 2
fi
mkdir -p "$out" || exit 2
limit=${GPU_CHECK_TIMEOUT:-180}
export RUST_LOG=${RUST_LOG:-info}

# vl_env and vl_check: examples under the validation layer (6d).
# shellcheck source=scripts/validation-layer.sh
. "$(dirname "$0")/validation-layer.sh"
. "$(dirname "$0")/lib/stats.sh"

rows=()      # "name|result|figure", in run order
failures=0
rc=0         # exit status of the last `run`
last=""      # last line of its stdout
tail_line="" # last line of its output (stdout or stderr), for failure rows

# run NAME CMD...: run CMD with a time limit; stdout and stderr both go to OUTDIR/NAME.log (the
# command line first), stdout alone also to OUTDIR/NAME.stdout. Sets $rc, $last and $tail_line.
run() {
    local name=$1
    shift
    local log="$out/$name.log"
    {
        printf '$'
        printf ' %q' "$@"
        printf '\n'
    } >"$log"
    # Both writers append (O_APPEND), so stderr and stdout interleave in the log without clobbering.
    # shellcheck disable=SC2094
    timeout --kill-after=10 "$limit" "$@" 2>>"$log" | tee -a "$log" >"$out/$name.stdout"
    rc=${PIPESTATUS[0]}
    last=$(grep -v '^[[:space:]]*$' "$out/$name.stdout" | tail -n 1)
    tail_line=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c 1-70)
    printf '[exit %s]\n' "$rc" >>"$log"
    echo "gpu-check: $name: exit $rc" >&2
}

# field KEY LINE: the value of KEY=value in LINE (empty if absent).
field() {
    printf '%s\n' "$2" | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k { print substr($0, length(k) + 2); exit }'
}

# record NAME RESULT FIGURE: add a table row; anything but PASS counts as a failure.
record() {
    rows+=("$1|$2|$3")
    if [ "$2" != PASS ]; then
        failures=$((failures + 1))
    fi
}

# status_of: the result word for a finished command that did not pass its own test.
status_of() {
    case $rc in
        0) echo FAIL ;;
        2) echo UNAVAIL ;;
        124 | 137) echo TIMEOUT ;;
        *) echo FAIL ;;
    esac
}

# --- NVRTC ---------------------------------------------------------------------------------------
# The backend dlopens libnvrtc.so(.13|.12) by name: found by the loader, on LD_LIBRARY_PATH, or
# where the CUDA toolkit and NVIDIA's pip wheels put it (that directory then added).
# shellcheck source=scripts/lib/nvrtc.sh
. "$(dirname "$0")/lib/nvrtc.sh"
nvrtc_note=$NVRTC_NOTE

# --- environment (a log, not a check) ----------------------------------------------------------
{
    echo "$nvrtc_note"
    echo "date: $(date -u '+%Y-%m-%dT%H:%M:%SZ')"
    echo "bin: $bin"
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    if command -v ldconfig >/dev/null 2>&1; then
        echo "ldconfig -p (libcuda, libnvrtc):"
        ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libnvrtc\.so' || echo "  (none)"
    fi
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi 2>&1
    else
        echo "nvidia-smi: not found"
    fi
} >"$out/environment.log" 2>&1

# --- 1. info ---------------------------------------------------------------------------------------
run info "$bin" info
if [ "$rc" -eq 0 ]; then
    cuda_line=$(grep -i -m 1 'cuda' "$out/info.stdout" | tr -s ' ' | cut -c 1-70)
    record info PASS "${cuda_line:-no line mentions cuda}"
else
    record info "$(status_of)" "exit $rc: $tail_line"
fi

# --- 2. verify matrix --------------------------------------------------------------------------------
for sync in external binary bridged blocking; do
    for slots in 1 3; do
        for grid in 256x256 1000x777 4096x4096; do
            name="verify-$sync-k$slots-$grid"
            run "$name" "$bin" verify --backend cuda --sync "$sync" --slots "$slots" \
                --run-ahead 0 --batch 1 --grid "$grid" --frames 6
            want="verify: PASS backend=cuda sync=$sync slots=$slots run_ahead=0 batch=1 grid=$grid frames=6 "
            figure="max_abs_error=$(field max_abs_error "$last") over_tolerance=$(field over_tolerance "$last")"
            if [ "$rc" -eq 0 ] && [ "${last#"$want"}" != "$last" ]; then
                record "$name" PASS "$figure"
            elif [ "$rc" -eq 0 ]; then
                record "$name" FAIL "unexpected last line: ${last:0:60}"
            elif [ "${last#verify: FAIL}" != "$last" ]; then
                record "$name" FAIL "$figure"
            else
                record "$name" "$(status_of)" "exit $rc: $tail_line"
            fi
        done
    done
done

# --- 2b. pipeline shapes: run-ahead, batches, K up to 8 ---------------------------------------------
# One row per group; every run's output is in OUTDIR/sweep/<name>.log and the failures are listed
# in OUTDIR/sweep-<group>.failed.
mkdir -p "$out/sweep"
jobs=${GPU_CHECK_JOBS:-4}
# sweep_group GROUP: run `verify` for each "name|args..." line of OUTDIR/sweep-GROUP.list
# (GPU_CHECK_JOBS at a time) and record one row. Not in a pipeline: `record` must run in this shell.
sweep_group() {
    local group=$1 list="$out/sweep-$1.list"
    local total
    total=$(wc -l <"$list")
    # shellcheck disable=SC2016
    tr '\n' '\0' <"$list" | xargs -0 -P "$jobs" -I{} bash -c '
        line=$1; bin=$2; dir=$3; limit=$4
        name=${line%%|*}; args=${line#*|}
        # shellcheck disable=SC2086
        timeout --kill-after=10 "$limit" "$bin" verify $args >"$dir/$name.log" 2>&1
        echo "[exit $?]" >>"$dir/$name.log"' _ {} "$bin" "$out/sweep" "$limit"
    local pass=0 failed="$out/sweep-$group.failed" worst=0
    : >"$failed"
    while IFS= read -r line; do
        local name=${line%%|*} log="$out/sweep/${line%%|*}.log"
        if grep -q '^verify: PASS ' "$log" && grep -q '^\[exit 0\]' "$log"; then
            pass=$((pass + 1))
            local e
            e=$(field max_abs_error "$(grep '^verify: PASS ' "$log")")
            worst=$(awk -v a="$worst" -v b="$e" 'BEGIN { print (b + 0 > a + 0) ? b : a }')
        else
            echo "$name: $(grep -v '^[[:space:]]*$' "$log" | tail -n 2 | head -n 1 | cut -c 1-120)" >>"$failed"
        fi
    done <"$list"
    echo "gpu-check: sweep $group: $pass/$total pass" >&2
    if [ "$pass" -eq "$total" ] && [ "$total" -gt 0 ]; then
        record "sweep-$group" PASS "$pass/$total verify PASS, max_abs_error=$worst"
    else
        record "sweep-$group" FAIL "$pass/$total pass; see sweep-$group.failed"
    fi
}
# shapes MODE: "K R B" for every legal shape of MODE.
shapes() {
    local k b r
    for k in 1 2 3 4 5 6 7 8; do
        for b in $(seq 1 "$k"); do
            if [ "$1" = binary ] && [ "$b" -gt 1 ]; then continue; fi
            for r in $(seq 0 $((k - b))); do echo "$k $r $b"; done
        done
    done
}
sweep_grids=${GPU_CHECK_SWEEP_GRIDS:-256x256 1000x777 4096x4096}
for grid in $sweep_grids; do
    for mode in external bridged binary; do
        shapes "$mode" | while read -r k r b; do
            echo "$mode-$grid-k$k-r$r-b$b|--backend cuda --sync $mode --slots $k --run-ahead $r --batch $b --grid $grid --frames $((2 * k + 3))"
        done >"$out/sweep-$mode-$grid.list"
        sweep_group "$mode-$grid"
    done
done
for grid in 256x256 1000x777 4096x4096; do
    echo "hostwait-$grid|--backend cuda --sync host-wait --slots 1 --grid $grid --frames 6"
    echo "staged-$grid|--backend cuda --memory staged --grid $grid --frames 6"
    echo "staged-blocking-$grid|--backend cuda --memory staged --sync blocking --grid $grid --frames 6"
    echo "default-$grid|--backend cuda --grid $grid --frames 20"
    for f in 2 3 8; do
        echo "inflight-$f-$grid|--backend cuda --frames-in-flight $f --grid $grid --frames 20"
    done
    echo "inflight-8-binary-$grid|--backend cuda --sync binary --slots 2 --run-ahead 1 --frames-in-flight 8 --grid $grid --frames 20"
done >"$out/sweep-baselines-and-defaults.list"
sweep_group baselines-and-defaults

# --- 2c. cuda-in-vulkan (VK_NVX_binary_import): the CUDA kernel in Vulkan's queue -------------------
# The same verify as the CUDA backend's on every K with external, binary K=1/3 and blocking, on the
# usual grids and the odd and extreme ones, next to the cuda backend on the odd grids.
for grid in 256x256 1000x777 4096x4096 2x1000 2x2 4097x3; do
    for k in 1 2 3 4 5 6 7 8; do
        echo "nvx-external-$grid-k$k|--backend cuda-in-vulkan --sync external --slots $k --grid $grid --frames $((2 * k + 3))"
    done
    for k in 1 3; do
        echo "nvx-binary-$grid-k$k|--backend cuda-in-vulkan --sync binary --slots $k --grid $grid --frames 8"
    done
    echo "nvx-blocking-$grid|--backend cuda-in-vulkan --sync blocking --slots 1 --grid $grid --frames 6"
    echo "nvx-default-$grid|--backend cuda-in-vulkan --grid $grid --frames 20"
done >"$out/sweep-cuda-in-vulkan.list"
# The external rows above run one submission per frame (the default, issue 27); the two-submission
# shape too, on every K.
for grid in 256x256 1000x777; do
    for k in 1 2 3 4 5 6 7 8; do
        echo "nvx-split-$grid-k$k|--backend cuda-in-vulkan --sync external --slots $k --submit split --grid $grid --frames $((2 * k + 3))"
    done
done >>"$out/sweep-cuda-in-vulkan.list"
for grid in 2x1000 2x2 4097x3; do
    for k in 1 3; do
        echo "cuda-external-$grid-k$k|--backend cuda --sync external --slots $k --run-ahead 0 --batch 1 --grid $grid --frames 9"
    done
done >>"$out/sweep-cuda-in-vulkan.list"
sweep_group cuda-in-vulkan
for backend in cuda-in-vulkan cuda; do
    name="verify-$backend-16384x16384"
    run "$name" "$bin" verify --backend "$backend" --sync external --slots 2 --run-ahead 0 --batch 1 \
        --grid 16384x16384 --frames 3
    if [ "$rc" -eq 0 ] && [ "${last#verify: PASS}" != "$last" ]; then
        record "$name" PASS "max_abs_error=$(field max_abs_error "$last")"
    else
        record "$name" "$(status_of)" "exit $rc: $tail_line"
    fi
done

# --- 3. headless captures and their comparison ---------------------------------------------------
for backend in cuda cpu cuda-in-vulkan; do
    png="$out/$backend.png"
    rm -f "$png"
    run "capture-$backend" "$bin" --headless --backend "$backend" --time frame --frames 120 \
        --capture "$png"
    if [ "$rc" -eq 0 ] && [ -s "$png" ]; then
        record "capture-$backend" PASS "$(wc -c <"$png" | tr -d ' ') bytes"
    elif [ "$rc" -eq 0 ]; then
        record "capture-$backend" FAIL "exit 0 but no $png"
    else
        record "capture-$backend" "$(status_of)" "exit $rc: $tail_line"
    fi
done
if [ -s "$out/cuda.png" ] && [ -s "$out/cpu.png" ]; then
    run compare-png "$bin" compare-png "$out/cuda.png" "$out/cpu.png"
    figure="max_channel_diff=$(field max_channel_diff "$last") over=$(field pixels_over_tolerance "$last") tol=$(field tolerance "$last")"
    if [ "$rc" -eq 0 ] && [ "$(field result "$last")" = SAME ]; then
        record compare-png PASS "$figure"
    elif [ "$(field result "$last")" = DIFFERENT ]; then
        record compare-png FAIL "$figure"
    else
        record compare-png "$(status_of)" "exit $rc: $tail_line"
    fi
else
    record compare-png FAIL "not run: a capture is missing"
fi
# One submission per frame (issue 27) draws exactly what two submissions draw.
png="$out/cuda-in-vulkan-split.png"
rm -f "$png"
run capture-cuda-in-vulkan-split "$bin" --headless --backend cuda-in-vulkan --submit split --time frame \
    --frames 120 --capture "$png"
if [ "$rc" -eq 0 ] && [ -s "$png" ] && [ -s "$out/cuda-in-vulkan.png" ]; then
    if cmp -s "$png" "$out/cuda-in-vulkan.png"; then
        record compare-png-cuda-in-vulkan-split PASS "joined and split byte-identical"
    else
        record compare-png-cuda-in-vulkan-split FAIL "joined and split PNGs differ"
    fi
else
    record compare-png-cuda-in-vulkan-split "$(status_of)" "exit $rc: $tail_line"
fi
# The kernel in Vulkan's queue draws exactly the frame the CUDA stream draws.
if [ -s "$out/cuda.png" ] && [ -s "$out/cuda-in-vulkan.png" ]; then
    if cmp -s "$out/cuda.png" "$out/cuda-in-vulkan.png"; then
        record compare-png-cuda-in-vulkan PASS "byte-identical to the cuda capture"
    else
        run compare-png-cuda-in-vulkan "$bin" compare-png "$out/cuda-in-vulkan.png" "$out/cuda.png"
        record compare-png-cuda-in-vulkan FAIL "PNGs differ: $last"
    fi
else
    record compare-png-cuda-in-vulkan FAIL "not run: a capture is missing"
fi

# --- 4. kernel benchmark -------------------------------------------------------------------------
# The non-interop backends on the same GPU: the baseline a user would pick instead.
for spec in "vulkan external 3 4096x4096" "vulkan binary 1 1000x777" "vulkan blocking 3 1000x777" \
    "cpu bridged 3 1000x777" "cpu blocking 1 256x256"; do
    read -r backend sync slots grid <<<"$spec"
    name="verify-$backend-$sync-k$slots-$grid"
    run "$name" "$bin" verify --backend "$backend" --sync "$sync" --slots "$slots" --grid "$grid" --frames 6
    figure="max_abs_error=$(field max_abs_error "$last") over_tolerance=$(field over_tolerance "$last")"
    if [ "$rc" -eq 0 ] && [ "${last#verify: PASS}" != "$last" ]; then
        record "$name" PASS "$figure"
    else
        record "$name" "$(status_of)" "exit $rc: $tail_line"
    fi
done

# Validation on the GPU driver: cpu/vulkan must be clean; cuda external shows the layer's known
# false positives for foreign signals (counted separately by vkhip, reported here as a figure).
for spec in "vulkan external 3" "vulkan binary 1" "cpu bridged 3" "cuda external 3" "cuda bridged 3" \
    "cuda-in-vulkan external 3" "cuda-in-vulkan external 1" "cuda-in-vulkan binary 1"; do
    read -r backend sync slots <<<"$spec"
    name="validation-$backend-$sync-k$slots"
    run "$name" "$bin" --headless --validation --backend "$backend" --sync "$sync" --slots "$slots" \
        --grid 1000x777 --frames 60
    if [ "$rc" -eq 0 ] && [ "${last#validation: 0 errors, 0 warnings}" != "$last" ]; then
        record "$name" PASS "${last#validation: }"
    else
        record "$name" "$(status_of)" "exit $rc: ${last:-$tail_line}"
    fi
done

# Frame reports: every sync mode with the interop backend, and the vulkan baseline.
for spec in "cuda external 3" "cuda external 1" "cuda binary 1" "cuda bridged 3" "cuda blocking 1" \
    "vulkan external 3"; do
    read -r backend sync slots <<<"$spec"
    # A small grid in a small image, where the handoff is a visible part of the frame, and two
    # larger ones at 1280x720, where drawing the grid dominates.
    for shape in 256x256:320x180 1024x1024:1280x720 4096x4096:1280x720; do
        grid=${shape%%:*}
        name="frames-$backend-$sync-k$slots-$grid"
        run "$name" "$bin" --headless --backend "$backend" --sync "$sync" --slots "$slots" --grid "$grid" \
            --size "${shape#*:}" --frames 600
        if [ "$rc" -eq 0 ]; then
            frame=$(grep -m 1 'frame time' "$out/$name.stdout" | tr -s ' ' | cut -d ' ' -f 4-12)
            gpu=$(grep -m 1 'gpu draw' "$out/$name.stdout" | tr -s ' ' | cut -d ' ' -f 4-6)
            record "$name" PASS "$frame; gpu draw ${gpu:-n/a}"
        else
            record "$name" "$(status_of)" "exit $rc: $tail_line"
        fi
    done
done

run bench-kernel "$bin" bench-kernel --backend cuda --grid 4096x4096 --iterations 200
kernel_us=$(field kernel_median_us "$last")
fill_us=$(field fill_median_us "$last")
if [ "$rc" -eq 0 ] && [ "${last#bench-kernel: backend=cuda }" != "$last" ] && [ -n "$kernel_us" ]; then
    record bench-kernel PASS "kernel ${kernel_us} us, fill ${fill_us} us, ratio $(field ratio "$last")"
else
    record bench-kernel "$(status_of)" "exit $rc: $tail_line"
fi

# --- 5. create/destroy cycles: leak check ----------------------------------------------------------
run cycles "$bin" cycles --backend cuda --count 10
figure="fds $(field open_fds_before "$last")->$(field open_fds_after "$last"), free MiB $(field device_free_before_mib "$last")->$(field device_free_after_mib "$last")"
if [ "$rc" -eq 0 ] && [ "$(field result "$last")" = OK ]; then
    record cycles PASS "$figure"
elif [ "$(field result "$last")" = LEAK ]; then
    record cycles FAIL "LEAK: $figure"
else
    record cycles "$(status_of)" "exit $rc: $tail_line"
fi

# --- 6. profiler: traces, the protocol checker, what tracing costs ------------------------------------
# Traces of the hand-off at 256² and 1024² in a 320x180 image: K=3 (compute overlaps drawing), K=1
# (the APIs alternate), blocking (nothing overlaps) and the vulkan baseline. Each trace must pass
# `vkhip trace check`; the row shows the report's new figures and the checker's overlap line.
# Also the default configuration (batches of 7 frames), where each batch's draws wait for its
# one launch.
for spec in "cuda external 3 256x256" "cuda external 3 1024x1024" "cuda external 1 1024x1024" \
    "cuda blocking 1 1024x1024" "vulkan external 3 1024x1024" "cuda default 8 256x256" \
    "cuda default 8 1024x1024" "cuda-in-vulkan external 1 256x256" "cuda-in-vulkan external 3 1024x1024"; do
    read -r backend sync slots grid <<<"$spec"
    name="trace-$backend-$sync-k$slots-$grid"
    shape=(--sync "$sync" --slots "$slots" --run-ahead 0 --batch 1)
    [ "$sync" = default ] && shape=()
    run "$name" "$bin" --headless --backend "$backend" "${shape[@]}" --grid "$grid" \
        --size 320x180 --frames 1500 --trace "$out/$name.json"
    if [ "$rc" -ne 0 ]; then
        record "$name" "$(status_of)" "exit $rc: $tail_line"
        continue
    fi
    report="$out/$name.stdout"
    pick() { grep -m 1 "^  $1" "$report" | tr -s ' ' | cut -d ' ' -f "$2"; }
    figure="frame $(pick 'frame time' 4-6); draw $(pick 'draw  ' 3-5); hand-off exposed in $(pick 'hand-off in ' 6-7) out $(pick 'hand-off out' 6-7); overhead $(pick 'sync overhead' 4-6)"
    run "$name-check" "$bin" trace check "$out/$name.json"
    overlap=$(grep -m 1 'running inside them' "$out/$name-check.stdout" | sed 's/^ *draws //')
    if [ "$rc" -eq 0 ]; then
        record "$name" PASS "$figure; $overlap"
    else
        record "$name" FAIL "trace check exit $rc: $last"
    fi
done

# `--sync none` must race, and the checker must say so (exit 1).
run trace-none "$bin" --headless --backend cuda --sync none --slots 1 --grid 1024x1024 --size 320x180 \
    --frames 300 --trace "$out/trace-none.json"
run trace-none-check "$bin" trace check "$out/trace-none.json"
violations=$(head -n 1 "$out/trace-none-check.stdout" | grep -o '[0-9]* violation(s)')
if [ "$rc" -eq 1 ] && [ -n "$violations" ]; then
    record trace-none PASS "checker exit 1: $violations"
else
    record trace-none FAIL "checker exit $rc: ${last:-$tail_line}"
fi

# Tracing cost: the same configuration with and without --trace, interleaved, 3 repetitions each;
# the ratio of the median frame means must be at most 1.03.
for grid in 256x256 1024x1024; do
    on=()
    off=()
    for rep in 1 2 3; do
        for mode in on off; do
            name="tracecost-$grid-$mode-$rep"
            extra=()
            [ "$mode" = on ] && extra=(--trace "$out/$name.json")
            run "$name" "$bin" --headless --backend cuda --sync external --slots 3 --run-ahead 0 \
                --batch 1 --grid "$grid" --size 320x180 --frames 1500 "${extra[@]}"
            mean=$(grep -m 1 'frame time' "$out/$name.stdout" | tr -s ' ' | cut -d ' ' -f 5)
            rm -f "$out/$name.json"
            if [ "$mode" = on ]; then on+=("$mean"); else off+=("$mean"); fi
        done
    done
    m_on=$(median "${on[@]}")
    m_off=$(median "${off[@]}")
    ratio=$(awk -v a="$m_on" -v b="$m_off" 'BEGIN { if (b > 0) printf "%.4f", a / b }')
    figure="median frame ${m_on} ms traced vs ${m_off} ms (runs: ${on[*]} / ${off[*]}), ratio ${ratio:-n/a}"
    if [ -n "$ratio" ] && awk -v r="$ratio" 'BEGIN { exit !(r <= 1.03) }'; then
        record "tracecost-$grid" PASS "$figure"
    else
        record "tracecost-$grid" FAIL "$figure"
    fi
done

# --- 6b. fault injection on the CUDA path (VKHIP_FAULT): each ends in one error line and exit 1,
# with no hang (the `run` time limit would show one as exit 124).
for point in cuda-memory-import cuda-semaphore-import cuda-compile cuda-launch cuda-launch@40; do
    name="fault-${point/@/-at-}"
    # One launch per frame (--batch 1), so the 40th launch comes at frame 39.
    VKHIP_FAULT=$point VKHIP_KERNEL_CACHE=off run "$name" "$bin" --headless --backend cuda --sync external \
        --slots 3 --run-ahead 0 --batch 1 --grid 256x256 --size 320x180 --frames 100
    errors=$(grep -c '^vkhip: error' "$out/$name.log")
    injected=$(grep -m 1 '^vkhip: error' "$out/$name.log" | grep -c "injected by VKHIP_FAULT=${point%@*}")
    if [ "$rc" -eq 1 ] && [ "$errors" -eq 1 ] && [ "$injected" -eq 1 ]; then
        record "$name" PASS "exit 1: $(grep -m 1 '^vkhip: error' "$out/$name.log" | cut -c 1-90)"
    else
        record "$name" FAIL "exit $rc, $errors error line(s): $tail_line"
    fi
done

# --- 6c. soak (optional: GPU_CHECK_SOAK_FRAMES=1000000, about 4 and 6 minutes on an H100): a long
# headless run of cuda external and bridged keeps RSS within 1 MiB after frame 10,000 and its open
# fds flat. Run it in a call of its own: each run is longer than one check's usual time limit.
soak_frames=${GPU_CHECK_SOAK_FRAMES:-0}
if [ "$soak_frames" -gt 0 ]; then
    for spec in "cuda external" "cuda bridged" "cuda-in-vulkan external"; do
        read -r backend sync <<<"$spec"
        name="soak-$backend-$sync"
        log="$out/$name.log"
        "$bin" --headless --backend "$backend" --sync "$sync" --slots 3 --grid 64x64 --size 64x64 \
            --frames "$soak_frames" >"$out/$name.stdout" 2>"$log" &
        pid=$!
        sleep 15
        fds_early=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
        fds_late=$fds_early
        while kill -0 "$pid" 2>/dev/null; do
            fds_late=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
            sleep 20
        done
        wait "$pid"
        rc=$?
        mem=$(grep -m 1 '^  memory' "$out/$name.stdout" | tr -s ' ')
        growth=$(printf '%s\n' "$mem" | sed -n 's/.*(\([-+0-9.]*\) MiB)$/\1/p')
        if [ "$rc" -eq 0 ] && [ -n "$growth" ] && awk -v g="$growth" 'BEGIN { exit !(g < 1.0) }' &&
            [ "$fds_late" -le "$fds_early" ]; then
            record "$name" PASS "${mem#* memory }; fds $fds_early -> $fds_late"
        else
            record "$name" FAIL "exit $rc; ${mem:-no memory line}; fds $fds_early -> $fds_late"
        fi
    done
fi

# --- 6f. the post stage: --post outline on every NVIDIA backend ------------------------------------
# verify: the filtered image of a frame against the CPU filter of the same rendered image, read back.
for backend in vulkan cuda cuda-in-vulkan; do
    for size in 1280x720 333x77; do
        for k in 1 3; do
            echo "post-$backend-$size-k$k|--backend $backend --post outline --size $size --slots $k --frames $((2 * k + 3))"
        done
    done
done >"$out/sweep-post.list"
# Post batches (cuda, external and bridged): the default P (K/2 external, 1 bridged), --post-batch 1
# and --post-batch K, for K 1, 2, 3, 5, 8
# at an odd size, 2K+1 frames (never a multiple of P > 1: the last partial batch is flushed and
# still checked; verify's line ends with post_batch=P post_frames=2K+1).
for sync in external bridged; do
    for pb in default 1 k; do
        for k in 1 2 3 5 8; do
            arg=""
            [ "$pb" = 1 ] && arg="--post-batch 1"
            [ "$pb" = k ] && arg="--post-batch $k"
            echo "post-cuda-$sync-p$pb-k$k|--backend cuda --sync $sync $arg --post outline --size 333x77 --slots $k --frames $((2 * k + 1))"
        done
    done
done >>"$out/sweep-post.list"
sweep_group post
# Captures of the same frame: cuda and cuda-in-vulkan against the Vulkan-shader post.
for backend in vulkan cuda cuda-in-vulkan; do
    png="$out/post-$backend.png"
    rm -f "$png"
    run "capture-post-$backend" "$bin" --headless --backend "$backend" --post outline --time frame \
        --frames 120 --size 640x360 --capture "$png"
    if [ "$rc" -eq 0 ] && [ -s "$png" ]; then
        record "capture-post-$backend" PASS "$(wc -c <"$png" | tr -d ' ') bytes"
    else
        record "capture-post-$backend" "$(status_of)" "exit $rc: $tail_line"
    fi
done
for backend in cuda cuda-in-vulkan; do
    name="compare-png-post-$backend"
    if [ -s "$out/post-$backend.png" ] && [ -s "$out/post-vulkan.png" ]; then
        run "$name" "$bin" compare-png "$out/post-$backend.png" "$out/post-vulkan.png"
        figure="max_channel_diff=$(field max_channel_diff "$last") over=$(field pixels_over_tolerance "$last") tol=$(field tolerance "$last")"
        if [ "$rc" -eq 0 ] && [ "$(field result "$last")" = SAME ]; then
            record "$name" PASS "$figure"
        else
            record "$name" FAIL "exit $rc: $figure"
        fi
    else
        record "$name" FAIL "not run: a capture is missing"
    fi
done
# Under the Khronos layer, every backend's default sync: 0 errors.
for backend in vulkan cuda cuda-in-vulkan; do
    name="validation-post-$backend"
    run "$name" "$bin" --headless --validation --backend "$backend" --post outline --grid 1000x777 \
        --size 1280x720 --frames 60
    if [ "$rc" -eq 0 ] && [ "${last#validation: 0 errors, 0 warnings}" != "$last" ]; then
        record "$name" PASS "${last#validation: }"
    else
        record "$name" "$(status_of)" "exit $rc: ${last:-$tail_line}"
    fi
done
# Traces: the checker proves the heights' two orders and the post stage's four; the row shows the
# post line of the check and the report's post latency (draw end → copy end).
for backend in vulkan cuda cuda-in-vulkan; do
    name="trace-post-$backend"
    run "$name" "$bin" --headless --backend "$backend" --post outline --grid 1024x1024 --size 1280x720 \
        --frames 600 --trace "$out/$name.json"
    if [ "$rc" -ne 0 ]; then
        record "$name" "$(status_of)" "exit $rc: $tail_line"
        continue
    fi
    latency=$(grep -m 1 '^  post latency' "$out/$name.stdout" | tr -s ' ' | cut -d ' ' -f 4-9)
    run "$name-check" "$bin" trace check "$out/$name.json"
    post=$(grep -m 1 'post stage (' "$out/$name-check.stdout" | sed 's/^ *post stage //' | cut -c 1-80)
    if [ "$rc" -eq 0 ] && [ -n "$post" ]; then
        record "$name" PASS "latency ${latency:-n/a}; $post"
    else
        record "$name" FAIL "trace check exit $rc: ${post:-no post line}: $last"
    fi
done
# `--sync none`: the filter and the copy wait for nothing; the checker must find post violations.
run trace-post-none "$bin" --headless --backend cuda --sync none --post outline --slots 1 \
    --grid 1024x1024 --size 1280x720 --frames 300 --trace "$out/trace-post-none.json"
run trace-post-none-check "$bin" trace check "$out/trace-post-none.json"
violations=$(head -n 1 "$out/trace-post-none-check.stdout" | grep -o '[0-9]* violation(s)')
post_violations=$(grep -m 1 -o 'post stage ([^)]*): [0-9]* violation(s)' "$out/trace-post-none-check.stdout" |
    grep -o '[0-9]* violation(s)')
if [ "$rc" -eq 1 ] && [ -n "$post_violations" ] && [ "${post_violations%% *}" -gt 0 ]; then
    record trace-post-none PASS "checker exit 1: $violations, of which the post stage's: $post_violations"
else
    record trace-post-none FAIL "checker exit $rc: ${violations:-?}, post: ${post_violations:-none}: ${last:-$tail_line}"
fi
# Soak: the three backends at once for 20 s (SIGTERM ends a run with its report, exit 143; a
# background job of a script ignores SIGINT until vkhip installs its handler); fds and VmRSS
# sampled at 5 s and at the end must not grow (RSS by < 1 MiB; the report's own memory line too).
post_soak_pids=()
for backend in vulkan cuda cuda-in-vulkan; do
    name="soak-post-$backend"
    "$bin" --headless --backend "$backend" --post outline --grid 256x256 --size 320x180 \
        --frames 100000000 >"$out/$name.stdout" 2>"$out/$name.log" &
    post_soak_pids+=("$!")
done
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
fds_of() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
sleep 5
early=()
for pid in "${post_soak_pids[@]}"; do early+=("$(fds_of "$pid") $(rss_kb "$pid")"); done
sleep 15
i=0
for backend in vulkan cuda cuda-in-vulkan; do
    pid=${post_soak_pids[$i]}
    read -r fds0 rss0 <<<"${early[$i]}"
    fds1=$(fds_of "$pid")
    rss1=$(rss_kb "$pid")
    kill -TERM "$pid" 2>/dev/null
    wait "$pid"
    rc=$?
    i=$((i + 1))
    name="soak-post-$backend"
    frames=$(grep -m 1 '^  frames' "$out/$name.stdout" | tr -s ' ' | cut -d ' ' -f 3)
    mem=$(grep -m 1 '^  memory' "$out/$name.stdout" | tr -s ' ')
    growth=$(printf '%s
' "$mem" | sed -n 's/.*(\([-+0-9.]*\) MiB)$/\1/p')
    figure="$frames frames; fds $fds0 -> $fds1; VmRSS $rss0 -> $rss1 kB; report ${growth:-?} MiB"
    if [ "$rc" -eq 143 ] && [ -n "$rss0" ] && [ -n "$rss1" ] && [ $((rss1 - rss0)) -lt 1024 ] &&
        [ "$fds1" -le "$fds0" ] && [ -n "$growth" ] && awk -v g="$growth" 'BEGIN { exit !(g < 1.0) }'; then
        record "$name" PASS "$figure"
    else
        record "$name" FAIL "exit $rc (143: stopped by SIGTERM); $figure; $(tail -n 1 "$out/$name.log" | cut -c 1-60)"
    fi
done

# --- 6d. the interop crate's CUDA examples --------------------------------------------------------
examples_dir=${GPU_CHECK_EXAMPLES_DIR:-$(dirname "$bin")/examples}
for name in cuda_buffer cuda_image bring_your_own_device cuda_in_vulkan cuda_post_process; do
    example=$examples_dir/$name
    if [ -x "$example" ]; then
        run "example-$name" "$example"
        if [ "$rc" -eq 0 ] && [ "${last#"$name": OK}" != "$last" ]; then
            record "example-$name" PASS "${last#"$name": }"
        else
            record "example-$name" "$(status_of)" "exit $rc: $tail_line"
        fi
        # The same run under the Khronos validation layer: it must load, report nothing, and the
        # example must still pass.
        vl_env "$out/example-$name-validation"
        run "example-$name-validation" env "${VL_ENV[@]}" "$example"
        if vl_check "$out/example-$name-validation" && [ "$rc" -eq 0 ] && [ "${last#"$name": OK}" != "$last" ]; then
            record "example-$name-validation" PASS "$VL_SUMMARY"
        elif [ "$rc" -ne 0 ]; then
            record "example-$name-validation" "$(status_of)" "exit $rc: $tail_line; $VL_SUMMARY"
        else
            record "example-$name-validation" FAIL "$VL_SUMMARY"
        fi
    else
        record "example-$name" FAIL "no executable at $example (build it: cargo build --release -p vkhip-interop --examples)"
    fi
done
# --- 6e. the interop crate's wgpu examples (feature wgpu), under the Khronos validation layer -----
# Built with `cargo build --release -p vkhip-interop --features wgpu,wgpu/wgsl --examples`.
# WGPU_VALIDATION=1 makes them turn on wgpu's validation (the layer and its messenger); RUST_LOG=warn
# logs every message; a row passes with "<name>: OK", exit 0 and no warning or error from wgpu in
# the log (a missing layer is such a warning). The texture example also runs 10,000 frames with
# K = 3, without the layer (whose own memory grows every frame): every pixel of every frame
# checked, fds not growing and RSS growing < 4 MiB between frame 100 and the last.
wgpu_messages() { grep -cE '(WARN|ERROR) +wgpu' "$out/$1.log"; }
for name in wgpu_cuda_texture wgpu_cuda_buffer wgpu_cuda_texture:10000; do
    frames=${name#*:}
    [ "$frames" = "$name" ] && frames=""
    name=${name%%:*}
    row="example-$name${frames:+-$frames}"
    example=$examples_dir/$name
    if [ ! -x "$example" ]; then
        record "$row" FAIL "no executable at $example (cargo build --release -p vkhip-interop --features wgpu,wgpu/wgsl --examples)"
        continue
    fi
    if [ -z "$frames" ]; then
        WGPU_VALIDATION=1 RUST_LOG=warn run "$row" "$example"
    else
        # The long run measures the crate and wgpu, not the layer: the Khronos layer's own
        # bookkeeping grows by about 0.7 kB a frame (H200, 2026-11-25: +26.9 MiB over 40,000
        # frames with it, −0.07 MiB without), so this row runs without it.
        RUST_LOG=warn run "$row" "$example" "$frames"
    fi
    messages=$(wgpu_messages "$row")
    if [ "$rc" -ne 0 ] || [ "${last#"$name": OK}" = "$last" ] || [ "$messages" -ne 0 ]; then
        record "$row" "$(status_of)" "exit $rc, $messages validation messages: $tail_line"
        continue
    fi
    if [ -z "$frames" ]; then
        record "$row" PASS "${last#"$name": }; 0 validation messages"
        continue
    fi
    # "frame F: fds N, rss X kB" at frame 100 and at the last frame.
    read -r fds0 rss0 fds1 rss1 < <(grep -E '^frame [0-9]+: fds' "$out/$row.stdout" |
        awk '{ gsub(",", ""); f[NR] = $4; r[NR] = $6 } END { print f[1], r[1], f[NR], r[NR] }')
    if [ -n "${rss1:-}" ] && [ "$fds1" -le "$fds0" ] && [ $((rss1 - rss0)) -lt 4096 ]; then
        record "$row" PASS "${last#"$name": }; fds $fds0 -> $fds1; rss $rss0 -> $rss1 kB; 0 validation messages"
    else
        record "$row" FAIL "fds ${fds0:-?} -> ${fds1:-?}; rss ${rss0:-?} -> ${rss1:-?} kB"
    fi
done

# --- 7. summary --------------------------------------------------------------------------------------
{
    echo
    printf '%-34s %-8s %s\n' CHECK RESULT "KEY FIGURE"
    for row in "${rows[@]}"; do
        IFS='|' read -r name result figure <<<"$row"
        printf '%-34s %-8s %s\n' "$name" "$result" "$figure"
    done
    echo
    if command -v nvidia-smi >/dev/null 2>&1; then
        gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
        echo "GPU: ${gpu%%,*}; driver:${gpu#*,}"
    else
        echo "GPU: nvidia-smi not found"
    fi
    echo "$nvrtc_note"
    echo "checks: ${#rows[@]}, failed: $failures; logs in $out"
} | tee "$out/summary.txt"

[ "$failures" -eq 0 ]
