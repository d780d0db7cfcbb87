#!/usr/bin/env bash
# device call 5 (2026-12-04): eager GDR built for Dk = Dv = 128: bits vs 345aa68, GPU tests, profile, nightly slice
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
W=$OUT/w; mkdir -p $W
step() { local name=$1 to=$2; shift 2
  local l=$(left); [ "$l" -lt 15 ] && { echo "SKIP $name (left $l s)" >> $W/steps.txt; return; }
  [ "$to" -gt "$l" ] && to=$l
  local s=$(date +%s.%N); timeout $to "$@" > $W/$name.log 2>&1; local rc=$?
  echo "$name rc=$rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" >> $W/steps.txt; }
xz -dc .device/bin.tar.xz | tar x && export LD_LIBRARY_PATH=$PWD/.bundle
python3 .device/make_batch.py
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
Q=suites/configs/qwen3_5_toy/config.json; QM=suites/configs/qwen3_5_moe_toy/config.json; B=.device/batch.safetensors
for bin in old build; do
  for dt in bf16 fp32 fp64; do step j_${bin}_q35_$dt 90 ./$bin/parity eval --config $Q --batch $B --dtype $dt --device cuda --json; done
  for dt in bf16 fp64; do step j_${bin}_q35moe_$dt 90 ./$bin/parity eval --config $QM --batch $B --dtype $dt --device cuda --json; done
done
for j in q35_bf16 q35_fp32 q35_fp64 q35moe_bf16 q35moe_fp64; do
  if [ -s $W/j_old_$j.log ] && cmp -s $W/j_old_$j.log $W/j_build_$j.log; then echo "json $j identical" >> $W/steps.txt; else echo "json $j DIFFER" >> $W/steps.txt; fi
done
step profile_build_eager 90 ./build/parity eval --config $Q --batch $B --dtype bf16 --device cuda --profile-ops
step profile_build_eager_fp64 90 ./build/parity eval --config $Q --batch $B --dtype fp64 --device cuda --profile-ops
step tests 240 ./build/parity-tests --filter '@(gated_delta_rule_gpu|ops_gpu|models_gpu|capability_claims)/*'
step nightly_q35_eager 45 ./build/parity run --suite gpu-nightly --model qwen3_5_toy --device cuda --filter '*gdr=eager*' --out $W/n_q35e
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
step ncu_delta_backward 60 $NCU --clock-control none --set full -k regex:delta_backward -c 1 -o $W/ncu_b ./build/parity eval --config $Q --batch $B --dtype bf16 --device cuda
step ncu_delta_backward_details 30 $NCU -i $W/ncu_b.ncu-rep --page details
step ncu_delta_backward_source 30 $NCU -i $W/ncu_b.ncu-rep --page source --csv --print-source sass
rm -f $W/ncu_b.ncu-rep
rm -f $W/n_*/results.json $W/n_*/report.html
if [ $(left) -gt 150 ]; then
  step grads_old 75 ./old/parity eval --config $Q --batch $B --dtype bf16 --device cuda --save-grads /dev/shm/g_old.st
  step grads_new 75 ./build/parity eval --config $Q --batch $B --dtype bf16 --device cuda --save-grads /dev/shm/g_new.st
  if [ -s /dev/shm/g_old.st ] && [ -s /dev/shm/g_new.st ] && cmp -s /dev/shm/g_old.st /dev/shm/g_new.st; then echo "grads q35 bf16 identical ($(stat -c %s /dev/shm/g_old.st) bytes)" >> $W/steps.txt; else echo "grads q35 bf16 DIFFER or missing" >> $W/steps.txt; fi
fi
echo "total $(( $(date +%s) - T0 )) s" >> $W/steps.txt
tar czf $OUT/r.tgz -C $OUT w
cat $W/steps.txt
