#!/bin/sh
# run.sh: builds and runs emulate.cpp on sdpa.cu's kernels (see emulate.cpp). Usage, from the
# repository root: tools/sdpa_cuda_emulation/run.sh   (needs g++; no GPU, no CUDA toolkit)
# The kernels are the text of ops/attention/sdpa.cu between "namespace {" and the comment that
# opens allow_shared ("// Lets `kernel` take"), with the dynamic shared-memory declaration pointed at
# the emulator's buffer.
set -eu
here=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source=ops/attention/sdpa.cu
start=$(grep -n '^namespace {' "$source" | head -1 | cut -d: -f1)
end=$(grep -n '^// Lets `kernel` take' "$source" | cut -d: -f1)
[ -n "$start" ] && [ -n "$end" ] || { echo "run.sh: markers not found in $source" >&2; exit 2; }
sed -n "$((start + 1)),$((end - 1))p" "$source" |
    sed 's/extern __shared__ __align__(16) unsigned char sdpa_shared\[\];/unsigned char *sdpa_shared = g_shared;/' \
        >"$work/kernels.inc"
grep -q 'sdpa_shared = g_shared' "$work/kernels.inc" || { echo "run.sh: shared declaration not found" >&2; exit 2; }
g++ -std=c++17 -O2 -Wall -Wno-unused-variable -I"$work" -o "$work/emulate" "$here/emulate.cpp"
"$work/emulate"
