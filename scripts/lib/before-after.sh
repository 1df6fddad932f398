# shellcheck shell=bash
# scripts/lib/before-after.sh — the arguments of the scripts that run two builds side by side
# (bench-before-after.sh, render-thread-bench.sh), checked once. Source it:
#     . "$(dirname "$0")/lib/before-after.sh"
#
# before_after_args NAME ARG…   from ARG… = BEFORE_BIN AFTER_BIN OUTDIR: sets BEFORE, AFTER and
#                               OUTDIR and makes OUTDIR; with other arguments, a build that is no
#                               executable or no python3, one line on stderr and exit 2 (NAME is the
#                               script's name, scripts/NAME.sh).

# BEFORE, AFTER and OUTDIR are read by the scripts that source this one.
# shellcheck disable=SC2034
before_after_args() {
  local name=$1
  shift
  BEFORE=${1:-}
  AFTER=${2:-}
  OUTDIR=${3:-}
  if [ -z "$BEFORE" ] || [ -z "$AFTER" ] || [ -z "$OUTDIR" ] || [ $# -ne 3 ]; then
    echo "usage: scripts/$name.sh BEFORE_BIN AFTER_BIN OUTDIR" >&2
    exit 2
  fi
  local b
  for b in "$BEFORE" "$AFTER"; do
    [ -x "$b" ] || { echo "$name: $b is not an executable" >&2; exit 2; }
  done
  command -v python3 >/dev/null || { echo "$name: needs python3" >&2; exit 2; }
  mkdir -p "$OUTDIR"
}
