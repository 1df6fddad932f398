#!/usr/bin/env bash
# The HIP backend on today's ROCm: builds the crate with `--features hip` against Debian sid's
# HIP 6.4 (libamdhip64-dev, libhiprtc6, comgr 7) and runs its HIP tests, inside a sid root file
# system built by mmdebstrap. The host keeps Debian 12's HIP 5.2.3; nothing from sid touches it.
#
# - The root file system (mmdebstrap --variant=minbase, the packages installed by mmdebstrap
#   itself) is cached in $VKHIP_SID_CACHE (default /var/cache/vkhip/sid) and reused while its
#   stamp matches this script's package list and it is younger than $VKHIP_SID_MAX_AGE_DAYS
#   (default 7). A missing, half-built or broken one is rebuilt; the new one is built next to it
#   and renamed into place, so an interrupted build never leaves a "valid" cache behind.
# - The host's Rust toolchain (rustup and cargo homes) and the clone are bind-mounted at the same
#   paths inside, in a private mount namespace (unshare), so the mounts vanish with the job.
#   Crates are fetched on the host first (`cargo fetch --locked`); the build inside is --offline,
#   so the chroot needs no DNS or network.
# - The build uses its own target directory in the cache, apart from the host's target/; it
#   keeps the dependencies' builds from run to run, never the workspace crates' (which change).
# No AMD GPU exists here: the job compiles kernels and checks layouts; it runs nothing on a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd -P)

CACHE=${VKHIP_SID_CACHE:-/var/cache/vkhip/sid}
MAX_AGE_DAYS=${VKHIP_SID_MAX_AGE_DAYS:-7}
MIRROR=${VKHIP_SID_MIRROR:-http://deb.debian.org/debian}
PACKAGES=libamdhip64-dev,libhiprtc6,gcc,libc6-dev
ROOTFS=$CACHE/rootfs
STAMP_NAME=.vkhip-rootfs
STAMP_KEY="mmdebstrap minbase sid $PACKAGES $MIRROR"
CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}
CARGO_HOME=$(cd "$CARGO_HOME" && pwd -P)
RUSTUP_HOME=$(cd "$RUSTUP_HOME" && pwd -P)

if [ "$(id -u)" -ne 0 ]; then
  echo "hip-sid: needs root (mmdebstrap, chroot and bind mounts)" >&2
  exit 2
fi
command -v mmdebstrap >/dev/null || { echo "hip-sid: mmdebstrap is not installed" >&2; exit 2; }
mkdir -p "$CACHE"
exec 9>"$CACHE/lock"
flock 9 # one job at a time per cache

t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0)) s"; }

rootfs_ok() {
  [ -f "$ROOTFS/$STAMP_NAME" ] &&
    [ "$(head -n1 "$ROOTFS/$STAMP_NAME")" = "$STAMP_KEY" ] &&
    [ -z "$(find "$ROOTFS/$STAMP_NAME" -mtime "+$MAX_AGE_DAYS")" ] &&
    [ -f "$ROOTFS/usr/include/hip/hip_runtime_api.h" ] &&
    chroot "$ROOTFS" dpkg-query -W libamdhip64-dev libhiprtc6 >/dev/null 2>&1 &&
    # Every file of the ROCm packages present with its packaged checksum (prints nothing then).
    [ -z "$(chroot "$ROOTFS" dpkg --verify libamdhip64-dev libamdhip64-6 libhiprtc6 libamd-comgr3 2>&1)" ] &&
    chroot "$ROOTFS" gcc --version >/dev/null 2>&1
}

if rootfs_ok; then
  echo "   sid root file system: cached ($ROOTFS, built $(date -u -r "$ROOTFS/$STAMP_NAME" '+%F %H:%M UTC'))"
else
  echo "   sid root file system: building ($ROOTFS; none cached, stale or broken)"
  rm -rf "$ROOTFS.new"
  # Check-Valid-Until off: the archive this CI reaches may serve a sid Release file past its
  # Valid-Until date (a pinned snapshot); the signature is still checked.
  mmdebstrap --quiet --variant=minbase --format=directory \
    --aptopt='Acquire::Check-Valid-Until "false"' \
    --include="$PACKAGES" sid "$ROOTFS.new" "$MIRROR"
  echo "$STAMP_KEY" >"$ROOTFS.new/$STAMP_NAME"
  rm -rf "$ROOTFS"
  mv "$ROOTFS.new" "$ROOTFS"
  rootfs_ok || { echo "hip-sid: the new root file system is not usable" >&2; exit 1; }
  echo "   built in $(elapsed)"
fi
echo "   sid: $(chroot "$ROOTFS" dpkg-query -W -f='${Package} ${Version}, ' libamdhip64-dev libhiprtc6 libamd-comgr3 gcc)"

echo "   fetching crates on the host (the build inside is offline)"
cargo fetch --locked --quiet

mkdir -p "$CACHE/target" "$ROOTFS/src" "$ROOTFS/target" "$ROOTFS$CARGO_HOME" "$ROOTFS$RUSTUP_HOME"
t_build=$(date +%s)
# Inside the namespace: mounts, then the build and tests as a login-less root in the chroot.
unshare --mount --propagation private -- bash -euo pipefail -c '
  ROOTFS=$1 SRC=$2 CACHE=$3 CARGO_HOME=$4 RUSTUP_HOME=$5
  mount --bind "$SRC" "$ROOTFS/src"
  mount --bind "$CACHE/target" "$ROOTFS/target"
  mount --bind "$CARGO_HOME" "$ROOTFS$CARGO_HOME"
  mount --bind "$RUSTUP_HOME" "$ROOTFS$RUSTUP_HOME"
  mount -t proc proc "$ROOTFS/proc"
  exec chroot "$ROOTFS" /usr/bin/env -i \
    PATH="$CARGO_HOME/bin:/usr/local/bin:/usr/bin:/bin" HOME=/root \
    CARGO_HOME="$CARGO_HOME" RUSTUP_HOME="$RUSTUP_HOME" RUSTUP_AUTO_INSTALL=0 \
    CARGO_TARGET_DIR=/target CARGO_TERM_COLOR=never CARGO_INCREMENTAL=0 HIP_PATH=/usr CI="${CI:-}" \
    bash -euo pipefail -c "
      cd /src
      echo \"   toolchain: \$(rustc --version)\"
      # The cached target keeps the dependencies only: no incremental caches (older runs made
      # some), and the workspace crates are cleaned after the tests (their sources change from run to run).
      rm -rf /target/debug/incremental
      # Only what the tests below run (not every test binary of the app).
      cargo build --locked --offline --features hip --quiet --lib \
        --test hip_kernel --test examples --test hip_probe
      echo \"== sid: unit tests of the interop crate HIP side (HIP 6.4 headers and runtime; its interop layouts against the 6.4 header) and of the HIP backend\"
      cargo test --locked --offline -p vkhip-interop --features hip --lib hip:: -- --nocapture --test-threads=1
      cargo test --locked --offline --features hip --lib compute::hip
      echo \"== sid: hiprtc 6.4 compiles the kernels (sinewave; the interop crate hip_buffer and hip_image examples)\"
      cargo test --locked --offline --features hip --test hip_kernel --test examples \
        -- --nocapture --test-threads=1 --skip the_handoff_benchmark_refuses_bad_arguments_with_one_line \
        --skip the_pingpong_benchmark_refuses_bad_arguments_with_one_line
      echo \"== sid: probing without a GPU is one quiet line\"
      cargo test --locked --offline --features hip --test hip_probe
      cargo clean --locked --offline --quiet -p vkhip -p vkhip-interop -p vkhip-profile
      echo \"   cached target after cleaning the workspace crates: \$(du -sh /target | cut -f1)\"
    "
' hip-sid "$ROOTFS" "$SRC" "$CACHE" "$CARGO_HOME" "$RUSTUP_HOME"
echo "   sid job: build and tests $(($(date +%s) - t_build)) s, whole job $(elapsed)"
