#!/usr/bin/env bash
# device call 7 (2026-12-04): the landed tc_states width choice: GPU tests, bench + fla peer in the same call
set -u
T0=$(date +%s); LIMIT=${LIMIT:-250}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
W=$OUT/w; mkdir -p $W
step() { local name=$1 to=$2; shift 2
  local l=$(left); [ "$l" -lt 10 ] && { echo "SKIP $name (left $l s)" >> $W/steps.txt; return; }
  [ "$to" -gt "$l" ] && to=$l
  local s=$(date +%s.%N); timeout $to "$@" > $W/$name.log 2>&1; local rc=$?
  echo "$name rc=$rc $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" >> $W/steps.txt; }
xz -dc .device/bin.tar.xz | tar x && export LD_LIBRARY_PATH=$PWD/.bundle
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
step tests 60 ./build/parity-tests --filter '@(gated_delta_rule_gpu|capability_claims)/*'
step peers 130 python3 tools/bench_torch_peers.py --out $W/peers.json --ops gated_delta_rule
step bench 40 ./build/parity bench op gated_delta_rule --device cuda --backends fla --peers $W/peers.json --markdown $W/bench_gdr.md --output $W/bench_gdr.json
echo "total $(( $(date +%s) - T0 )) s" >> $W/steps.txt
tar czf $OUT/r.tgz -C $OUT w
cat $W/steps.txt
