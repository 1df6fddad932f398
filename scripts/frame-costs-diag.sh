#!/usr/bin/env bash
# scripts/frame-costs-diag.sh BIN OUTDIR — where issue 32's last per-frame costs go (item 4), on
# the GPU machine, with one release binary (no cargo). DIAG.md says which hypothesis each
# section decides; this script only measures. About 2–3 minutes on an H100/H200.
#
#   A. environment: nvidia-smi (card, driver, persistence mode, clocks), CPU, governor
#   B. start-up, per backend (vulkan, cuda, cuda-in-vulkan), DIAG_START_REPS interleaved runs of
#      `--headless --frames 10` with RUST_LOG=vkhip=debug: the report's `start-up` line and every
#      `start-up:` mark of the timeline, the CUDA prewarm's own lines, the kernel cache's
#   C. render-thread CPU (`render cpu`, `cpu phases`, `host phases`) at 256²@320x180 for cuda
#      with and without --post outline, the post batch at 1 / default / 8, --overlay (draw
#      re-recorded every frame, no post), gpu-timing on/off, and vulkan / cuda-in-vulkan with and
#      without --post, DIAG_REPS interleaved repetitions of DIAG_FRAMES after DIAG_WARMUP
#   D. what --gpu-timing costs: vulkan and cuda-in-vulkan K=1 at 256²@320x180, on/off, also with
#      --frames-in-flight 8 (more host slack: a host-side cost shrinks, a GPU-side one does not),
#      DIAG_REPS repetitions of DIAG_TIMING_FRAMES; one trace per backend (timing on) for
#      scripts/trace-gaps.py when python3 is there
#   E. bench-kernel (cuda) on 4096x4096 and on grids of the same width whose rows divide evenly
#      among the row walkers (4096x4224, 4096x3960) or not (1024x16384, 16384x1024), 2 runs each
#      of 1000 launches; then the register count of the cached sinewave cubin (cuobjdump if
#      present, else the cubin's EIATTR_REGCOUNT records)
#
# Environment: DIAG_REPS (3), DIAG_FRAMES (2000), DIAG_WARMUP (200), DIAG_TIMING_FRAMES (3000),
# DIAG_START_REPS (5), DIAG_TIMEOUT (seconds per run, 60), DIAG_SECTIONS (default "A B C D E").
# Output: OUTDIR/runs/*.log (every run's full output), OUTDIR/*.tsv (one line per run),
# OUTDIR/summary.txt (what is printed). Exit 0 unless usage was bad (2); failed runs are marked
# in the tables, not fatal.
set -u
set -o pipefail

BIN=${1:-}
OUT=${2:-}
if [ $# -ne 2 ] || [ ! -x "$BIN" ]; then
    echo "usage: $0 BIN OUTDIR (BIN: an executable vkhip)" >&2
    exit 2
fi
REPS=${DIAG_REPS:-3}
FRAMES=${DIAG_FRAMES:-2000}
WARMUP=${DIAG_WARMUP:-200}
TFRAMES=${DIAG_TIMING_FRAMES:-3000}
SREPS=${DIAG_START_REPS:-5}
TIMEOUT=${DIAG_TIMEOUT:-60}
SECTIONS=${DIAG_SECTIONS:-"A B C D E"}
for n in "$REPS" "$FRAMES" "$WARMUP" "$TFRAMES" "$SREPS" "$TIMEOUT"; do
    case $n in
        '' | *[!0-9]*) echo "frame-costs-diag: DIAG_* counts must be numbers" >&2; exit 2 ;;
    esac
done
mkdir -p "$OUT/runs" || exit 2
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$(dirname "$0")/lib/stats.sh"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
has() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }

# libnvrtc for cuda and cuda-in-vulkan (dlopened by name), as scripts/gpu-check.sh finds it.
if ! { ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so'; }; then
    for lib in /usr/local/cuda/lib64/libnvrtc.so.1[23] /usr/local/cuda-1[23]*/lib64/libnvrtc.so.1[23] \
        /usr/local/lib/python3*/dist-packages/nvidia/cu13/lib/libnvrtc.so.13 \
        /usr/local/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13 \
        /usr/local/lib/python3*/dist-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 \
        /usr/local/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12; do
        if [ -e "$lib" ]; then
            export LD_LIBRARY_PATH="${lib%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
            break
        fi
    done
fi

# Field `f` (awk numbering) of the first line of `file` starting with `prefix`.
field() { awk -v p="$1" -v f="$2" 'index($0, p) == 1 { print $f; exit }' "$3"; }

# Medians and spreads of a TSV's numeric columns, grouped by column `key`: `stats FILE KEY COLS...`
# (COLS are column numbers; the header names them). Prints one row per key.
stats() {
    local file=$1 key=$2
    shift 2
    awk -F'\t' -v key="$key" -v cols="$*" "$STATS_AWK"'
    BEGIN { nc = split(cols, c, " ") }
    NR == 1 { for (i = 1; i <= nc; i++) name[i] = $(c[i]); next }
    {
        k = $key
        if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
        for (i = 1; i <= nc; i++) if ($(c[i]) != "-" && $(c[i]) != "") v[k, i] = v[k, i] " " $(c[i])
    }
    END {
        printf "%-44s", "configuration"
        for (i = 1; i <= nc; i++) printf " %-22s", name[i] " (median, range)"
        printf "\n"
        for (j = 1; j <= nk; j++) {
            k = keys[j]; printf "%-44s", k
            for (i = 1; i <= nc; i++) printf " %-22s", (median(v[k, i]) == "" ? "-" : median(v[k, i])) " (" range(v[k, i]) ")"
            printf "\n"
        }
    }' "$file"
}

# Runs of a TSV whose last column is not "ok", with the error line of their log.
failures() {
    awk -F'\t' 'NR > 1 && $NF != "ok" { print $1 "\t" $2 "\t" $NF }' "$1" | while IFS=$'\t' read -r cfg rep st; do
        say "  failed: $cfg (rep $rep): $st"
    done
}

START=$(date +%s)

# --- A. environment ------------------------------------------------------------------------------
if has A; then
    {
        echo "date: $(date -u '+%Y-%m-%dT%H:%M:%SZ')"
        echo "bin: $BIN ($(stat -c %s "$BIN") bytes)"
        echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
        echo "nproc: $(nproc)"
        grep -m1 'model name' /proc/cpuinfo
        echo "governor: $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo n/a)"
        if command -v nvidia-smi >/dev/null 2>&1; then
            nvidia-smi --query-gpu=name,driver_version,persistence_mode,clocks.sm,clocks.mem,clocks.max.sm,pstate \
                --format=csv 2>&1
        else
            echo "nvidia-smi: not found"
        fi
        command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null || echo "cuobjdump: not found"
    } >"$OUT/env.txt" 2>&1
    say "== A. environment"
    sed 's/^/  /' "$OUT/env.txt" | tee -a "$SUMMARY"
fi

# --- B. start-up ---------------------------------------------------------------------------------
if has B; then
    say ""
    say "== B. start-up: process start → first draw finished, --headless --frames 10 (512² grid), warm kernel cache"
    TSV=$OUT/startup.tsv
    printf 'backend\trep\tstartup_s\tinstance_ms\tprobed_ms\tdevice_ms\tslots_ms\tbackend_ms\trenderer_ms\tframe0_ms\tcuinit_ms\tcontext_ms\tkernel_ms\tnvrtc_ms\tprewarmed_ms\tstatus\n' >"$TSV"
    # One untimed run each first: kernel caches and the driver's own JIT cache warm.
    for b in vulkan cuda cuda-in-vulkan; do
        timeout "$TIMEOUT" "$BIN" --headless --backend "$b" --frames 10 >"$OUT/runs/startup-$b-warm.log" 2>&1
    done
    for rep in $(seq 1 "$SREPS"); do
        for b in vulkan cuda cuda-in-vulkan; do
            log=$OUT/runs/startup-$b-r$rep.log
            RUST_LOG=vkhip=debug timeout "$TIMEOUT" "$BIN" --headless --backend "$b" --frames 10 >"$log" 2>&1
            rc=$?
            mark() { grep -m1 "start-up: $1" "$log" | sed 's/.* at \([0-9.]*\) ms.*/\1/'; }
            # The duration (Rust's `{:.1?}`: 12.3ms, 1.2s, 850.0µs) right after the text $2 on
            # the first line holding $1, in ms.
            ms() {
                grep -m1 "$1" "$log" | sed -n "s/.*$2\([0-9.]*\)\(ms\|µs\|s\).*/\1 \2/p" |
                    awk '{ print ($2 == "s") ? $1 * 1000 : ($2 == "ms") ? $1 : $1 / 1000 }'
            }
            s=$(field '  start-up ' 2 "$log")
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$b" "$rep" "${s:--}" \
                "$(mark 'Vulkan instance made')" "$(mark 'compute devices probed')" "$(mark 'Vulkan device created')" \
                "$(mark 'clock calibrated')" "$(mark 'compute backend ready')" "$(mark 'renderer and target ready')" \
                "$(mark 'frame 0 submitted')" "$(ms 'prewarm: libcuda + cuInit' ' in ')" \
                "$(ms 'primary context and stream' 'primary context and stream ')" "$(ms 'primary context and stream' 'kernel ')" \
                "$(ms 'prewarm: libnvrtc' ' in ')" "$(ms 'cuda: prewarmed' ' in ')" \
                "$([ "$rc" -eq 0 ] && echo ok || echo "exit $rc")" >>"$TSV"
        done
    done
    sed -i 's/\t\t/\t-\t/g; s/\t\t/\t-\t/g; s/\t$/\t-/' "$TSV"
    stats "$TSV" 1 3 4 5 6 7 8 9 10 11 12 13 14 15 | tee -a "$SUMMARY"
    failures "$TSV"
    say "  (ms columns: the start-up timeline's marks after process start; cuinit (libcuda + cuInit),"
    say "   context (primary context and stream), kernel (cache + module load), nvrtc (libnvrtc load),"
    say "   prewarmed (all of it): durations on the cuda prewarm thread)"
    say "  one cuda-in-vulkan timeline in full:"
    grep -E 'start-up|cuda|nvrtc|kernel cache|sinewave' "$OUT/runs/startup-cuda-in-vulkan-r1.log" | sed 's/^/    /' | tee -a "$SUMMARY"
    say "  one cuda timeline in full:"
    grep -E 'start-up|prewarm|nvrtc|kernel cache|sinewave' "$OUT/runs/startup-cuda-r1.log" | sed 's/^/    /' | tee -a "$SUMMARY"
fi

# A headless run's report figures into a TSV line: run LABEL TSV ARGS...
run_cfg() {
    local label=$1 tsv=$2 rep=$3
    shift 3
    local log=$OUT/runs/$(echo "$label" | tr ' /=' '__-')-r$rep.log
    timeout "$TIMEOUT" "$BIN" --headless --time frame "$@" >"$log" 2>&1
    local rc=$?
    local st=ok
    [ "$rc" -ne 0 ] && st="exit $rc"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$rep" \
        "$(field '  frame time ' 4 "$log")" "$(field '  frame time ' 7 "$log")" \
        "$(field '  render cpu ' 4 "$log")" "$(field '  render cpu ' 10 "$log")" \
        "$(field '  cpu phases ' 4 "$log")" "$(field '  cpu phases ' 6 "$log")" \
        "$(field '  cpu phases ' 8 "$log")" "$(field '  cpu phases ' 10 "$log")" \
        "$(field '  host phases ' 4 "$log")" "$(field '  host phases ' 7 "$log")" \
        "$(field '  host phases ' 10 "$log")" "$(field '  draw ' 3 "$log")" "$st" >>"$tsv"
}
HEADER='config\trep\tframe_mean_ms\tframe_p50_ms\tcpu_p50_us\tcpu_mean_us\twait_p50\thandoff_p50\tsubmit_p50\trest_p50\tthrottle_mean\tcompute_mean\tsubmit_mean\tdraw_p50_ms\tstatus\n'

# --- C. render-thread CPU ------------------------------------------------------------------------
if has C; then
    say ""
    say "== C. render-thread CPU per frame, 256²@320x180, $FRAMES frames after $WARMUP, $REPS interleaved reps"
    TSV=$OUT/render-cpu.tsv
    printf "$HEADER" >"$TSV"
    G=(--grid 256x256 --size 320x180 --frames $((FRAMES + WARMUP)) --warmup-frames "$WARMUP")
    cfgs=(
        "cuda|--backend cuda --gpu-timing off"
        "cuda post|--backend cuda --post outline --gpu-timing off"
        "cuda post timing-on|--backend cuda --post outline --gpu-timing on"
        "cuda timing-on|--backend cuda --gpu-timing on"
        "cuda post P=1|--backend cuda --post outline --post-batch 1 --gpu-timing off"
        "cuda post P=8|--backend cuda --post outline --post-batch 8 --gpu-timing off"
        "cuda overlay|--backend cuda --overlay --gpu-timing off"
        "cuda post F=8|--backend cuda --post outline --frames-in-flight 8 --gpu-timing off"
        "vulkan|--backend vulkan --gpu-timing off"
        "vulkan post|--backend vulkan --post outline --gpu-timing off"
        "cuda-in-vulkan post|--backend cuda-in-vulkan --post outline --gpu-timing off"
    )
    for rep in $(seq 1 "$REPS"); do
        for c in "${cfgs[@]}"; do
            # shellcheck disable=SC2086
            run_cfg "${c%%|*}" "$TSV" "$rep" "${G[@]}" ${c#*|}
        done
    done
    stats "$TSV" 1 5 6 7 8 9 10 3 | tee -a "$SUMMARY"
    failures "$TSV"
    say "  host phases (mean µs: throttle, compute, record+submit):"
    stats "$TSV" 1 11 12 13 | tee -a "$SUMMARY"
    say "  sync line of each configuration:"
    for c in "${cfgs[@]}"; do
        l=${c%%|*}
        f=$OUT/runs/$(echo "$l" | tr ' /=' '__-')-r1.log
        say "    $l: $(grep -m1 '^  sync ' "$f" | sed 's/^  sync *//') | $(grep -m1 '^  in flight ' "$f" | sed 's/^  in flight *//')"
    done
fi

# --- D. the cost of --gpu-timing -----------------------------------------------------------------
if has D; then
    say ""
    say "== D. --gpu-timing on vs off, K=1, 256²@320x180, $TFRAMES frames after 300, $REPS interleaved reps"
    TSV=$OUT/gpu-timing.tsv
    printf "$HEADER" >"$TSV"
    G=(--grid 256x256 --size 320x180 --slots 1 --frames $((TFRAMES + 300)) --warmup-frames 300)
    cells=()
    for b in vulkan cuda-in-vulkan; do
        for f in 4 8; do
            for t in on off; do cells+=("$b F=$f $t|--backend $b --frames-in-flight $f --gpu-timing $t"); done
        done
    done
    for rep in $(seq 1 "$REPS"); do
        order=("${cells[@]}")
        if [ $((rep % 2)) -eq 0 ]; then
            order=()
            for ((i = ${#cells[@]} - 1; i >= 0; i--)); do order+=("${cells[i]}"); done
        fi
        for c in "${order[@]}"; do
            # shellcheck disable=SC2086
            run_cfg "${c%%|*}" "$TSV" "$rep" "${G[@]}" ${c#*|}
        done
    done
    stats "$TSV" 1 3 4 5 14 | tee -a "$SUMMARY"
    failures "$TSV"
    awk -F'\t' "$STATS_AWK"'
    NR > 1 && $15 == "ok" { m[$1] = m[$1] " " $3 }
    END {
        for (k in m) if (k ~ / on$/) {
            off = k; sub(/ on$/, " off", off)
            if (off in m) printf "  on/off %-26s %.4f (frame mean %.4f vs %.4f ms; target ≤ 1.02)\n", substr(k, 1, length(k) - 3), median(m[k]) / median(m[off]), median(m[k]), median(m[off])
        }
    }' "$TSV" | sort | tee -a "$SUMMARY"
    for b in vulkan cuda-in-vulkan; do
        timeout "$TIMEOUT" "$BIN" --headless --time frame --backend "$b" --slots 1 --grid 256x256 --size 320x180 \
            --frames 2300 --warmup-frames 300 --trace "$OUT/trace-$b.json" --trace-frames 2000 \
            >"$OUT/runs/trace-$b.log" 2>&1
        if command -v python3 >/dev/null 2>&1 && [ -s "$OUT/trace-$b.json" ]; then
            say "  trace-gaps, $b K=1 (timing on):"
            python3 "$HERE/trace-gaps.py" "$OUT/trace-$b.json" 2>&1 | sed 's/^/    /' | tee -a "$SUMMARY"
        fi
    done
fi

# --- E. the kernel against memset ----------------------------------------------------------------
if has E; then
    say ""
    say "== E. bench-kernel --backend cuda, 1000 launches, 2 runs per grid"
    TSV=$OUT/bench-kernel.tsv
    printf 'grid\trep\tkernel_us\tfill_us\tratio\tstatus\n' >"$TSV"
    export VKHIP_KERNEL_CACHE=$OUT/kernel-cache
    for rep in 1 2; do
        for g in 4096x4096 4096x4224 4096x3960 1024x16384 16384x1024; do
            log=$OUT/runs/bench-kernel-$g-r$rep.log
            RUST_LOG=vkhip=info timeout "$TIMEOUT" "$BIN" bench-kernel --backend cuda --grid "$g" --iterations 1000 >"$log" 2>&1
            rc=$?
            line=$(grep -m1 '^bench-kernel:' "$log")
            kv() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$g" "$rep" "$(kv kernel_median_us)" "$(kv fill_median_us)" "$(kv ratio)" \
                "$([ "$rc" -eq 0 ] && echo ok || echo "exit $rc")" >>"$TSV"
        done
    done
    sed -i 's/\t\t/\t-\t/g; s/\t\t/\t-\t/g' "$TSV"
    stats "$TSV" 1 3 4 5 | tee -a "$SUMMARY"
    failures "$TSV"
    say "  launch shape: $(grep -m1 'benchmark on' "$OUT/runs/bench-kernel-4096x4096-r1.log" | sed 's/.*benchmark on/benchmark on/')"
    say "  registers of the cached kernels:"
    for f in "$VKHIP_KERNEL_CACHE"/*.bin; do
        [ -e "$f" ] || continue
        if command -v cuobjdump >/dev/null 2>&1; then
            cuobjdump -res-usage "$f" 2>&1 | grep -E 'Function|REG' | sed 's/^/    /' | tee -a "$SUMMARY"
        elif command -v python3 >/dev/null 2>&1; then
            python3 - "$f" <<'EOF' 2>&1 | sed 's/^/    /' | tee -a "$SUMMARY"
import struct, sys
data = open(sys.argv[1], "rb").read()
if data[:4] != b"\x7fELF":
    print(sys.argv[1].rsplit("/", 1)[-1], ": not an ELF cubin (PTX?)")
    sys.exit()
shoff, = struct.unpack_from("<Q", data, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
def sh(i):
    return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
strtab = sh(shstrndx)
names, bodies = {}, {}
for i in range(shnum):
    name_off, _, _, _, off, size, link, info, _, _ = sh(i)
    end = data.index(b"\0", strtab[4] + name_off)
    bodies[data[strtab[4] + name_off:end].decode()] = data[off:off + size]
# Function symbols by index (for EIATTR_REGCOUNT, which names its function by symbol).
symtab, strs = bodies.get(".symtab", b""), bodies.get(".strtab", b"")
for i in range(len(symtab) // 24):
    st_name, = struct.unpack_from("<I", symtab, 24 * i)
    names[i] = strs[st_name:strs.index(b"\0", st_name)].decode() if st_name < len(strs) else "?"
# .nv.info: records of (format, attribute, size): EIATTR_REGCOUNT (0x2f) and EIATTR_FRAME_SIZE (0x12)
# hold (symbol index, value).
body, i = bodies.get(".nv.info", b""), 0
while i + 4 <= len(body):
    fmt, attr, size = body[i], body[i + 1], struct.unpack_from("<H", body, i + 2)[0]
    payload = body[i + 4:i + 4 + size] if fmt == 4 else b""
    i += 4 + (size if fmt == 4 else 0)
    if attr in (0x2F, 0x12) and len(payload) == 8:
        sym, value = struct.unpack("<II", payload)
        what = "registers per thread" if attr == 0x2F else "bytes of local frame"
        print(f"{names.get(sym, sym)}: {value} {what}")
EOF
        fi
    done
fi

say ""
say "frame-costs-diag: done in $(($(date +%s) - START)) s; logs in $OUT/runs, tables in $OUT/*.tsv"
exit 0
