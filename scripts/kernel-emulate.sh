#!/usr/bin/env bash
# scripts/kernel-emulate.sh — run kernels/sinewave.hip on the CPU (scripts/kernel-emulate.cpp says
# how) and check every value of every environment against the CPU reference. Needs a C++20
# compiler ($CXX, else c++); no GPU, no cargo. Exit 0: PASS.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"${CXX:-c++}" -std=c++20 -O1 -pthread "$here/kernel-emulate.cpp" -o "$out/kernel-emulate"
"$out/kernel-emulate"
