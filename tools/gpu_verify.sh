#!/usr/bin/env bash
# gpu_verify.sh: the GPU host's verification pass in one call, for a tree packed by
# ../shared/tools/pack-for-device (build/parity, build/parity-tests and .bundle/). Run from the
# unpacked project root on the GPU host with OUT set to a folder for the results:
#   tools/gpu_verify.sh [--base BASE_PARITY] [--skip STEP,...] [--regenerate SUITE,...]
# Steps (each logged to $OUT/<step>.log, a summary line each in $OUT/summary.txt):
#   regenerate  (only with --regenerate) parity golden generate --suite SUITE --force for each suite,
#            on the device its goldens are made on; the new golden/SUITE/ travel back in the archive
#            (under golden/), to be committed after review
#   tests    full test binary with PARITY_EXPECT_GPU=1 (a skipped GPU test is a failure)
#   golden   parity golden verify for smoke and gpu-nightly (drift must be 0)
#   bench    PyTorch peers + parity bench op all (+ the same bench with BASE_PARITY, when given, in the
#            same call), compared row by row with tools/bench_compare.py against
#            reports/baselines/h200/bench.json and against the base binary's run
#   smoke    parity run --suite smoke --device cuda
# Everything but summary.txt (and the smoke report.html) is packed into $OUT/gpu_verify_results.txz at the end.
# Exit: 0 when every step passed, 1 otherwise (the summary says which).
set -uo pipefail
base=""
skip=""
regenerate=""
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --regenerate) regenerate=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "gpu_verify: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
: "${OUT:?set OUT to the results folder}"
export LD_LIBRARY_PATH="$PWD/.bundle${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
failed=0
step() { # step NAME COMMAND...: runs unless skipped, logs, records pass/fail with seconds
  local name=$1; shift
  case ",$skip," in *",$name,"*) echo "$name: skipped" >>"$OUT/summary.txt"; return 0 ;; esac
  local start=$SECONDS
  echo "== $name: $*"
  if "$@" >"$OUT/$name.log" 2>&1; then
    echo "$name: pass ($((SECONDS - start)) s)" | tee -a "$OUT/summary.txt"
  else
    echo "$name: FAIL rc=$? ($((SECONDS - start)) s); tail:" | tee -a "$OUT/summary.txt"
    tail -n 25 "$OUT/$name.log"
    failed=1
  fi
}
# make copies the bench targets beside the binary (harness/bench/targets.tsv -> build/); a packed tree
# (pack-for-device) carries only the binaries, so do the same here.
[ -f build/bench_targets.tsv ] || cp harness/bench/targets.tsv build/bench_targets.tsv
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$OUT/summary.txt" 2>&1
regenerate_goldens() {
  local suite
  for suite in ${regenerate//,/ }; do
    build/parity golden generate --suite "$suite" --force || return 1
    mkdir -p "$OUT/golden" && cp -r "golden/$suite" "$OUT/golden/" || return 1
  done
}
[ -n "$regenerate" ] && step regenerate regenerate_goldens
step tests env PARITY_EXPECT_GPU=1 build/parity-tests --jobs=4
step golden bash -c 'build/parity golden verify --suite smoke && build/parity golden verify --suite gpu-nightly'
bench() {
  python3 tools/bench_torch_peers.py --out "$OUT/peers.json" || return 1
  build/parity bench op all --device cuda --peers "$OUT/peers.json" --output "$OUT/bench.json" || return 1
  if [ -n "$base" ]; then
    "$base" bench op all --device cuda --peers "$OUT/peers.json" --output "$OUT/bench-base.json" || return 1
  fi
  local rc=0
  python3 tools/bench_compare.py reports/baselines/h200/bench.json "$OUT/bench.json" --markdown "$OUT/vs-baseline.md" || rc=1
  if [ -n "$base" ]; then
    python3 tools/bench_compare.py "$OUT/bench-base.json" "$OUT/bench.json" --markdown "$OUT/vs-base.md" || rc=1
  fi
  return $rc
}
step bench bench
step smoke build/parity run --suite smoke --device cuda --out "$OUT/smoke"
cat "$OUT/summary.txt"
# The device tool brings back at most 8 files: everything but the summary travels as one archive.
# (16 MiB a file: the smoke run's report.html, rebuilt by `parity report` from its results.json, stays
# behind, and xz keeps the results.json of the sketch metrics small enough.)
(cd "$OUT" && tar cJf ../gpu_verify_results.txz --exclude=summary.txt --exclude=report.html . && find . -mindepth 1 ! -name summary.txt -delete && mv ../gpu_verify_results.txz .)
exit $failed
