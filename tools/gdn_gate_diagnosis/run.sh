#!/usr/bin/env bash
# run.sh: builds a scratch copy of the repository with emulate_transformers_f32.patch and runs
# diagnose.c on the qwen3_5 cases, plain and with transformers' dG graph (see diagnose.c).
#   tools/gdn_gate_diagnosis/run.sh            (from the repository root; CASES="a b" picks cases)
set -euo pipefail
root=$(pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
git archive HEAD | tar -x -C "$scratch"
cd "$scratch"
git apply "$root/tools/gdn_gate_diagnosis/emulate_transformers_f32.patch"
make -j2 CUDA=0 build/libparity.a > build.log 2>&1
hdf5_libs=$(pkg-config --libs hdf5 2>/dev/null || echo "-L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5")
gcc -std=c11 -O2 -D_GNU_SOURCE -I. "$root/tools/gdn_gate_diagnosis/diagnose.c" build/libparity.a $hdf5_libs -lyaml -lcjson \
    -lopenblas -lpthread -lm -o diagnose
for case in ${CASES:-qwen3_5_tiny qwen3_5_moe_tiny qwen3_next_tiny}; do
    echo "== $case (our chunked dG)"
    ./diagnose "$root/golden/upstream/$case"
    echo "== $case (transformers' dG graph)"
    DIAG_HF_DIAGONAL=1 ./diagnose "$root/golden/upstream/$case"
done
