#!/usr/bin/env bash
# device call 1 (2026-12-04): eager GDR bits old vs new, profiles, rms_norm_gated unroll sweep + fla peer, GPU tests
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
W=$OUT/w; mkdir -p $W
step() { # step NAME TIMEOUT cmd...
  local name=$1 to=$2; shift 2
  local l=$(left); [ "$l" -lt 15 ] && { echo "SKIP $name (left $l s)" >> $W/steps.txt; return; }
  [ "$to" -gt "$l" ] && to=$l
  local s=$(date +%s.%N)
  timeout $to "$@" > $W/$name.log 2>&1; local rc=$?
  echo "$name rc=$rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" >> $W/steps.txt
}
xz -dc .device/bin.tar.xz | tar x && export LD_LIBRARY_PATH=$PWD/.bundle
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
python3 .device/make_batch.py
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
Q=suites/configs/qwen3_5_toy/config.json; QM=suites/configs/qwen3_5_moe_toy/config.json; B=.device/batch.safetensors
for bin in old build; do
  for dt in bf16 fp32 fp64; do step j_${bin}_q35_$dt 90 ./$bin/parity eval --config $Q --batch $B --dtype $dt --device cuda --json; done
  step j_${bin}_q35moe_bf16 90 ./$bin/parity eval --config $QM --batch $B --dtype bf16 --device cuda --json
done
for j in q35_bf16 q35_fp32 q35_fp64 q35moe_bf16; do
  if cmp -s $W/j_old_$j.log $W/j_build_$j.log; then echo "json $j identical" >> $W/steps.txt; else echo "json $j DIFFER" >> $W/steps.txt; fi
done
step profile_old_eager 90 ./old/parity eval --config $Q --batch $B --dtype bf16 --device cuda --profile-ops
step profile_build_eager 90 ./build/parity eval --config $Q --batch $B --dtype bf16 --device cuda --profile-ops
step profile_build_fla 60 ./build/parity eval --config $Q --batch $B --dtype bf16 --device cuda --profile-ops --ops gated_delta_rule=fla,causal_conv1d=fla,rms_norm_gated=fla
step peers 120 python3 tools/bench_torch_peers.py --out $W/peers.json --ops rms_norm_gated
n=0; for u in 1 2 4 2 1; do n=$((n+1))
  export PARITY_EXP_RMSG_FWD_UNROLL=$u PARITY_EXP_RMSG_BWD_UNROLL=$u; step bench_rmsg_${n}_u$u 60 ./build/parity bench op rms_norm_gated --device cuda --backends fla --peers $W/peers.json --markdown $W/bench_rmsg_${n}_u$u.md
done
unset PARITY_EXP_RMSG_FWD_UNROLL PARITY_EXP_RMSG_BWD_UNROLL
step tests 200 ./build/parity-tests --filter '@(gated_delta_rule_gpu|ops_gpu|ops_fused_gpu)/*'
step nightly_q35_fla 60 ./build/parity run --suite gpu-nightly --model qwen3_5_toy --device cuda --filter '*gdr=fla*' --out $W/n_q35
step nightly_q3 40 ./build/parity run --suite gpu-nightly --model qwen3_toy --device cuda --out $W/n_q3
rm -f $W/n_*/results.json $W/n_*/report.html
if [ $(left) -gt 150 ]; then
  step grads_old 70 ./old/parity eval --config $Q --batch $B --dtype bf16 --device cuda --save-grads /dev/shm/g_old.st
  step grads_new 70 ./build/parity eval --config $Q --batch $B --dtype bf16 --device cuda --save-grads /dev/shm/g_new.st
  if [ -s /dev/shm/g_old.st ] && cmp -s /dev/shm/g_old.st /dev/shm/g_new.st; then echo "grads q35 bf16 identical ($(stat -c %s /dev/shm/g_old.st) bytes)" >> $W/steps.txt; else echo "grads q35 bf16 DIFFER or missing" >> $W/steps.txt; fi
fi
echo "total $(( $(date +%s) - T0 )) s" >> $W/steps.txt
tar czf $OUT/r.tgz -C $OUT w
cat $W/steps.txt
