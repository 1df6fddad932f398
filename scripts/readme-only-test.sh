#!/usr/bin/env bash
# Run a command (default: `cargo test --locked`) as on a machine that has only the README's
# quick-start packages (libvulkan1 mesa-vulkan-drivers, and Rust): in a private mount namespace,
# every optional component is hidden by bind mounts, and checked to be hidden before the run.
#   - the Khronos validation layer (vulkan-validationlayers): its manifest is gone from
#     explicit_layer.d (Mesa's own layers stay, as mesa-vulkan-drivers installs them);
#   - Xvfb (xvfb), xdotool, xwd (x11-apps), xprop and xwininfo (x11-utils): /dev/null in place;
#   - ROCm's HIP runtime (libamdhip64-dev): /dev/null in place of libamdhip64.
# Needs root (unshare -m); nothing outside the namespace changes. Usage:
#   sudo scripts/readme-only-test.sh [command ...]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "readme-only-test: needs root (unshare -m and bind mounts)" >&2; exit 2; }
[ $# -gt 0 ] || set -- cargo test --locked
layers=$(mktemp -d /tmp/vkhip-readme-only-layers.XXXXXX)
trap 'rm -rf "$layers"' EXIT
for f in /usr/share/vulkan/explicit_layer.d/*.json; do
  case "$f" in *khronos_validation*) ;; *) cp "$f" "$layers/" ;; esac
done
unshare --mount --propagation private -- bash -euo pipefail -c '
  layers=$1; shift
  mount --bind "$layers" /usr/share/vulkan/explicit_layer.d
  for tool in Xvfb xdotool xwd xprop xwininfo; do
    p=$(command -v "$tool" || true)
    [ -n "$p" ] && mount --bind /dev/null "$(readlink -f "$p")"
  done
  for lib in /usr/lib/x86_64-linux-gnu/libamdhip64.so*; do
    [ -f "$lib" ] && [ ! -L "$lib" ] && mount --bind /dev/null "$lib"
  done
  # Hidden for real: no manifest names the layer, no tool can start, no HIP library loads.
  ! grep -rqs VK_LAYER_KHRONOS_validation /usr/share/vulkan/explicit_layer.d /etc/vulkan $HOME/.local/share/vulkan 2>/dev/null
  for tool in Xvfb xdotool xwd xprop xwininfo; do
    if "$tool" -version >/dev/null 2>&1 || "$tool" --version >/dev/null 2>&1; then echo "readme-only: $tool still runs" >&2; exit 1; fi
  done
  if python3 -c "import ctypes; ctypes.CDLL(\"libamdhip64.so.5\")" 2>/dev/null; then echo "readme-only: libamdhip64 still loads" >&2; exit 1; fi
  echo "readme-only: validation layer, Xvfb, xdotool, xwd, xprop, xwininfo and libamdhip64 hidden"
  exec "$@"
' readme-only "$layers" "$@"
