#!/usr/bin/env bash
# device call 2 (2026-12-04): rms_norm_gated fla with the measured unrolls: tests, bench + fla peer; fla profile
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
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
python3 .device/make_batch.py
Q=suites/configs/qwen3_5_toy/config.json; B=.device/batch.safetensors
step tests 200 ./build/parity-tests --filter '@(ops_fused_gpu|capability_claims)/*'
step peers 120 python3 tools/bench_torch_peers.py --out $W/peers.json --ops rms_norm_gated
step bench_rmsg 60 ./build/parity bench op rms_norm_gated --device cuda --peers $W/peers.json --markdown $W/bench_rmsg.md --output $W/bench_rmsg.json
step bench_rmsg_again 60 ./build/parity bench op rms_norm_gated --device cuda --backends fla --markdown $W/bench_rmsg_again.md
step profile_build_fla 60 ./build/parity eval --config $Q --batch $B --dtype bf16 --device cuda --profile-ops --ops chunk_gated_delta_rule_implementation=fla,causal_conv1d_implementation=fla,rms_norm_gated_implementation=fla
step profile_build_eager 60 ./build/parity eval --config $Q --batch $B --dtype bf16 --device cuda --profile-ops
echo "total $(( $(date +%s) - T0 )) s" >> $W/steps.txt
tar czf $OUT/r.tgz -C $OUT w
cat $W/steps.txt
