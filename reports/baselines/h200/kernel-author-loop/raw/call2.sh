#!/usr/bin/env bash
# device call 2 (2026-12-04, issue 19): the CUDA example's bench with its check column (the step of call 1
# ran out of its 90 s during the example's check), check op attention with the unavailable FA4 reported
set -u
T0=$(date +%s); LIMIT=${LIMIT:-400}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
W=$OUT/w; mkdir -p $W
step() { local name=$1 to=$2; shift 2
  local l=$(left); [ "$l" -lt 10 ] && { echo "SKIP $name (left $l s)" >> $W/steps.txt; return; }
  [ "$to" -gt "$l" ] && to=$l
  local s=$(date +%s.%N); timeout $to "$@" > $W/$name.log 2>&1; local rc=$?
  echo "$name rc=$rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" >> $W/steps.txt; }
xz -dc .device/bin.tar.xz | tar x && export LD_LIBRARY_PATH=$PWD/.bundle
P=./build/parity; EX=plugins
step bench_example 200 $P bench op rms_norm --device cuda --backends eager,liger_kernel,example_cuda --plugin $EX/example_cuda.so --output $W/bench_example.json --markdown $W/bench_example.md
step check_attention 180 $P check op attention --device cuda --reference-device cuda --output $W/check_attention.json
echo "total $(( $(date +%s) - T0 )) s" >> $W/steps.txt
tar czf $OUT/r.tgz -C $OUT w
cat $W/steps.txt
