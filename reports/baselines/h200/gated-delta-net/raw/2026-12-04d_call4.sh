#!/usr/bin/env bash
# device call 4 (2026-12-04): eager GDR backward (no division in S_i's copy, paired dots): bits vs 345aa68, profile, ncu
set -u
T0=$(date +%s); LIMIT=${LIMIT:-400}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
W=$OUT/w; mkdir -p $W
step() { local name=$1 to=$2; shift 2
  local l=$(left); [ "$l" -lt 15 ] && { echo "SKIP $name (left $l s)" >> $W/steps.txt; return; }
  [ "$to" -gt "$l" ] && to=$l
  local s=$(date +%s.%N); timeout $to "$@" > $W/$name.log 2>&1; local rc=$?
  echo "$name rc=$rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" >> $W/steps.txt; }
xz -dc .device/bin.tar.xz | tar x && export LD_LIBRARY_PATH=$PWD/.bundle
python3 .device/make_batch.py
Q=suites/configs/qwen3_5_toy/config.json; QM=suites/configs/qwen3_5_moe_toy/config.json; B=.device/batch.safetensors
for bin in old build; do
  for dt in bf16 fp32 fp64; do step j_${bin}_q35_$dt 90 ./$bin/parity eval --config $Q --batch $B --dtype $dt --device cuda --json; done
  step j_${bin}_q35moe_bf16 90 ./$bin/parity eval --config $QM --batch $B --dtype bf16 --device cuda --json
done
for j in q35_bf16 q35_fp32 q35_fp64 q35moe_bf16; do
  if [ -s $W/j_old_$j.log ] && cmp -s $W/j_old_$j.log $W/j_build_$j.log; then echo "json $j identical" >> $W/steps.txt; else echo "json $j DIFFER" >> $W/steps.txt; fi
done
step profile_build_eager 90 ./build/parity eval --config $Q --batch $B --dtype bf16 --device cuda --profile-ops
step tests 200 ./build/parity-tests --filter '@(gated_delta_rule_gpu|ops_gpu)/*'
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
for k in delta_backward delta_forward; do
  step ncu_$k 90 $NCU --clock-control none --set full -k regex:$k -c 1 -o $W/ncu_$k ./build/parity eval --config $Q --batch $B --dtype bf16 --device cuda
  step ncu_${k}_details 30 $NCU -i $W/ncu_$k.ncu-rep --page details
  step ncu_${k}_source 30 $NCU -i $W/ncu_$k.ncu-rep --page source --csv --print-source sass
  rm -f $W/ncu_$k.ncu-rep
done
echo "total $(( $(date +%s) - T0 )) s" >> $W/steps.txt
tar czf $OUT/r.tgz -C $OUT w
cat $W/steps.txt
