#!/usr/bin/env bash
# device call 6 (2026-12-04): tc_states with 16 / 32 / 64 state columns a block (env experiment): bits, tests, bench + fla peer
set -u
T0=$(date +%s); LIMIT=${LIMIT:-330}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
W=$OUT/w; mkdir -p $W
step() { local name=$1 to=$2; shift 2
  local l=$(left); [ "$l" -lt 15 ] && { echo "SKIP $name (left $l s)" >> $W/steps.txt; return; }
  [ "$to" -gt "$l" ] && to=$l
  local s=$(date +%s.%N); timeout $to "$@" > $W/$name.log 2>&1; local rc=$?
  echo "$name rc=$rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" >> $W/steps.txt; }
xz -dc .device/bin.tar.xz | tar x && export LD_LIBRARY_PATH=$PWD/.bundle
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
python3 .device/make_batch.py
Q=suites/configs/qwen3_5_toy/config.json; B=.device/batch.safetensors; F=chunk_gated_delta_rule_implementation=fla,causal_conv1d_implementation=fla,rms_norm_gated_implementation=fla
for nc in 0 16 32 64; do
  export PARITY_EXP_TC_STATES_NC=$nc
  step j_nc$nc 60 ./build/parity eval --config $Q --batch $B --dtype bf16 --device cuda --json --ops $F
  step bench_nc$nc 60 ./build/parity bench op gated_delta_rule --device cuda --backends fla --markdown $W/bench_nc$nc.md
done
for nc in 16 32 64; do if cmp -s $W/j_nc0.log $W/j_nc$nc.log; then echo "json nc$nc identical to default" >> $W/steps.txt; else echo "json nc$nc DIFFER" >> $W/steps.txt; fi; done
export PARITY_EXP_TC_STATES_NC=64
step tests_nc64 120 ./build/parity-tests --filter '@(gated_delta_rule_gpu)/*'
unset PARITY_EXP_TC_STATES_NC
step peers 150 python3 tools/bench_torch_peers.py --out $W/peers.json --ops gated_delta_rule
export PARITY_EXP_TC_STATES_NC=64
step bench_nc64_peers 60 ./build/parity bench op gated_delta_rule --device cuda --backends fla --peers $W/peers.json --markdown $W/bench_nc64_peers.md
echo "total $(( $(date +%s) - T0 )) s" >> $W/steps.txt
tar czf $OUT/r.tgz -C $OUT w
cat $W/steps.txt
