#!/usr/bin/env bash
# run.sh: runs the fuzz targets that mk/fuzz.mk built, one after another, from the repository root.
#   run.sh fuzz   BUILD SECONDS TARGET...   fuzz each target for SECONDS: the committed seeds
#                                           (suites/fuzz/corpus/<target>/, read only) plus what earlier
#                                           runs found (BUILD/fuzz/corpus/<target>/, grown here)
#   run.sh replay BUILD SECONDS TARGET...   run every committed corpus file of each target once, no
#                                           mutation (SECONDS unused): the test mode
# Prints one line a target (executions, rate, corpus) and exits 1 when any target crashed, leaked,
# hit a sanitizer report or timed out; the input that did it is kept in BUILD/fuzz/artifacts/<target>/
# and the log in BUILD/fuzz/logs/<target>.log. Every target runs even after one fails.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

mode=$1 build=$2 seconds=$3
shift 3
# A per-input limit well above any parser's honest time (an input slower than this is a hang), and a
# memory limit that an input cannot blow past with a huge allocation.
limits=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048)
# Seeds read where they are committed instead of copied, because their format belongs to another
# part of the tree and a copy would go stale: the golden target starts from the smoke goldens.
live_seeds() {
  case $1 in
    golden) echo golden/smoke/qwen3_tiny golden/smoke/qwen3_moe_tiny ;;
  esac
}
failed=()
for target in "$@"; do
  program=$build/fuzz/fuzz_$target seeds=suites/fuzz/corpus/$target
  log=$build/fuzz/logs/$target.log artifacts=$build/fuzz/artifacts/$target/
  mkdir -p "$build/fuzz/logs" "$artifacts"
  if [ ! -d "$seeds" ]; then
    echo "fuzz: $target: no seed corpus $seeds" >&2
    failed+=("$target")
    continue
  fi
  read -r -a live <<<"$(live_seeds "$target")"
  if [ "$mode" = replay ]; then
    inputs=("$seeds"/*)
    for directory in "${live[@]}"; do inputs+=("$directory"/*); done
    "$program" "${limits[@]}" -artifact_prefix="$artifacts" "${inputs[@]}" >"$log" 2>&1
    status=$?
    if [ $status = 0 ]; then
      echo "fuzz-replay: $target: ${#inputs[@]} corpus files, no finding"
    else
      echo "fuzz-replay: $target: FAILED (exit $status): $(grep -m1 -E '^(==[0-9]+==ERROR|.*runtime error|.*(deadly signal|timeout|out-of-memory))' "$log")"
      echo "  last input run: $(grep '^Running: ' "$log" | tail -n 1 | cut -d' ' -f2-); log: $log"
      failed+=("$target")
    fi
    continue
  fi
  corpus=$build/fuzz/corpus/$target
  mkdir -p "$corpus"
  "$program" "${limits[@]}" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$artifacts" \
    "$corpus" "$seeds" "${live[@]}" >"$log" 2>&1
  status=$?
  stat() { grep -m1 "^stat::$1:" "$log" | awk '{print $2}'; }
  runs=$(stat number_of_executed_units) rate=$(stat average_exec_per_sec) added=$(stat new_units_added)
  if [ $status = 0 ]; then
    echo "fuzz: $target: ${runs:-?} executions in ${seconds} s (${rate:-?}/s), corpus $(ls "$corpus" | wc -l) inputs (+${added:-?}), no finding"
  else
    echo "fuzz: $target: FAILED (exit $status) after ${runs:-?} executions: $(grep -m1 -E '^(==[0-9]+==ERROR|.*runtime error|.*(deadly signal|timeout|out-of-memory))' "$log")"
    echo "  reproducer: $(grep -m1 -oE "Test unit written to [^ ]+" "$log" | cut -d' ' -f5-); log: $log"
    failed+=("$target")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in: ${failed[*]} (minimize with: $build/fuzz/fuzz_<target> -minimize_crash=1 -runs=10000 <reproducer>)" >&2
  exit 1
fi
