#!/usr/bin/env bash
# device call 1 (2026-12-04, issue 19): parity check op and the bench check column on the H200, the CUDA
# example plugin (right and wrong), every CUDA backend through check op, GPU tests of the moved engine
set -u
T0=$(date +%s); LIMIT=${LIMIT:-520}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
W=$OUT/w; mkdir -p $W
step() { local name=$1 to=$2; shift 2
  local l=$(left); [ "$l" -lt 10 ] && { echo "SKIP $name (left $l s)" >> $W/steps.txt; return; }
  [ "$to" -gt "$l" ] && to=$l
  local s=$(date +%s.%N); timeout $to "$@" > $W/$name.log 2>&1; local rc=$?
  echo "$name rc=$rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" >> $W/steps.txt; }
xz -dc .device/bin.tar.xz | tar x && export LD_LIBRARY_PATH=$PWD/.bundle
P=./build/parity; EX=plugins
nvidia-smi --query-gpu=name,driver_version --format=csv > $W/gpu.txt 2>&1
step list 20 $P list backends --device cuda --plugin $EX/example_cuda.so
step check_example 90 $P check op rms_norm --device cuda --backend example_cuda --plugin $EX/example_cuda.so --output $W/check_example.json
step check_example_wrong 90 $P check op rms_norm --device cuda --backend example_cuda --plugin $EX/example_cuda_wrong.so
step bench_example 90 $P bench op rms_norm --device cuda --backends eager,liger_kernel,triton,example_cuda --plugin $EX/example_cuda.so --output $W/bench_example.json --markdown $W/bench_example.md
step bench_example_wrong 60 $P bench op rms_norm --device cuda --backends example_cuda --plugin $EX/example_cuda_wrong.so
step tests 150 env PARITY_EXPECT_GPU=1 ./build/parity-tests --jobs 4 --verbose --filter '@(ops_gpu|ops_fused_gpu|check_cli|attention_gpu|moe_experts_gpu|gated_delta_rule_gpu)/*'
for op in rms_norm swiglu rotary cross_entropy rms_norm_gated causal_conv1d load_balancing_loss gated_delta_rule moe_experts attention; do
  step check_$op 45 $P check op $op --device cuda --reference-device cuda --output $W/check_$op.json
done
step bench_attention_check 60 $P bench op attention --device cuda --shape 4x16x16x4096x128x1 --output $W/bench_attention.json
echo "total $(( $(date +%s) - T0 )) s" >> $W/steps.txt
tar czf $OUT/r.tgz -C $OUT w
cat $W/steps.txt
