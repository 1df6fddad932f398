#!/usr/bin/env bash
# CI's C door stage (issue 40), after the tests stage, from its debug build (libvkhip.so and the
# capi tests are built there: nothing is compiled here but the C engines).
#   1. capi's tests again, their lines shown: the committed header is cbindgen's and compiles as
#      C99 and C++; tests/c/*.c pass under AddressSanitizer and UndefinedBehaviorSanitizer (the
#      error paths; a borrowed device, Vulkan and host scopes, a clean verdict and a race the
#      checker names, an image cleared and read back, on lavapipe, both also under the Khronos
#      layer: 0 messages); the engines build with -Werror.
#   2. the two C engines, built as an engine developer would (capi/README.md), under the Khronos
#      layer until CUDA is needed: the device, the shared buffers, a profiled Vulkan pass and the
#      host's check of every value, then one "no usable CUDA device" line, exit 2, 0 messages.
#   .ci/capi.sh TMPDIR
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=${1:?usage: .ci/capi.sh TMPDIR}
mkdir -p "$tmp"
# The tests below build libvkhip.so into target/debug (tests/c.rs: `cargo test` builds no cdylib
# for integration tests).
lib=$(cd "${CARGO_TARGET_DIR:-target}/debug" && pwd)
# shellcheck source=scripts/validation-layer.sh
. scripts/validation-layer.sh
# --workspace: the tests stage's feature set, so nothing is rebuilt.
cargo test --workspace --locked --test header --test c 2>&1 | grep -E "^test |test result" | sed "s/^/   /"
for name in engine engine_broken; do
  cc -std=c99 -Wall -Wextra -Werror -pedantic -Icapi/include "capi/examples/$name.c" -o "$tmp/$name" \
    -L"$lib" -Wl,-rpath,"$lib" -lvkhip -lvulkan
  vl_env "$tmp/$name"
  rc=0
  out=$(env "${VL_ENV[@]}" "$tmp/$name" 3 "$tmp/$name.json" 2>"$tmp/$name.stderr") || rc=$?
  err=$(cat "$tmp/$name.stderr")
  if [ "$rc" -ne 2 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] || [[ "$err" != "$name: no usable CUDA device: "* ]] ||
    [[ "$out" != *"2 shared buffers of 65536 floats filled and read back, profiled"* ]] || ! vl_check "$tmp/$name"; then
    printf 'C example %s: expected exit 2 after the Vulkan pass, one "no usable CUDA device" line and no validation message; got exit %s (%s):\n%s\n%s\n' \
      "$name" "$rc" "$VL_SUMMARY" "$out" "$err" >&2
    exit 1
  fi
  echo "   $name: exit 2 after the Vulkan pass ($VL_SUMMARY): $err"
done
echo "   libvkhip.so (debug): $(du -h "$lib/libvkhip.so" | cut -f1)"
