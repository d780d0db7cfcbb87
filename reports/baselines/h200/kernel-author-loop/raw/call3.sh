#!/usr/bin/env bash
# device call 3 (2026-12-04, issue 19): the op check engine's loops on every core: the example's bench
# (call 2: 84 s) again, check op all in bf16, the attention bench's check at (4, 16, 4096, 128)
set -u
T0=$(date +%s); LIMIT=${LIMIT:-220}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
W=$OUT/w; mkdir -p $W
step() { local name=$1 to=$2; shift 2
  local l=$(left); [ "$l" -lt 10 ] && { echo "SKIP $name (left $l s)" >> $W/steps.txt; return; }
  [ "$to" -gt "$l" ] && to=$l
  local s=$(date +%s.%N); timeout $to "$@" > $W/$name.log 2>&1; local rc=$?
  echo "$name rc=$rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" >> $W/steps.txt; }
xz -dc .device/bin.tar.xz | tar x && export LD_LIBRARY_PATH=$PWD/.bundle
P=./build/parity; EX=plugins
step bench_example 90 $P bench op rms_norm --device cuda --backends eager,liger_kernel,example_cuda --plugin $EX/example_cuda.so --output $W/bench_example.json --markdown $W/bench_example.md
step check_all 90 $P check op all --device cuda --reference-device cuda --dtype bf16 --plugin $EX/example_cuda.so --output $W/check_all.json
step bench_attention 60 $P bench op attention --device cuda --shape 4x16x16x4096x128x1 --output $W/bench_attention.json
echo "total $(( $(date +%s) - T0 )) s" >> $W/steps.txt
tar czf $OUT/r.tgz -C $OUT w
cat $W/steps.txt
