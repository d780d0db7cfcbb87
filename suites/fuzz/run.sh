#!/usr/bin/env bash
# run.sh: runs the fuzz targets that mk/fuzz.mk built, from the repository root, JOBS at a time.
#   run.sh fuzz   BUILD SECONDS JOBS TARGET...   fuzz each target for SECONDS: the committed seeds
#                                                (suites/fuzz/corpus/<target>/, read only) plus what
#                                                earlier runs found (BUILD/fuzz/corpus/<target>/, grown)
#   run.sh replay BUILD SECONDS JOBS TARGET...   run every committed corpus file of each target once,
#                                                no mutation (SECONDS unused): the test mode
# FUZZ_FORK=N (fuzz mode): each target fuzzes in N processes at once (libFuzzer -fork=N, one shared
# corpus), so SECONDS of wall time are N x SECONDS CPU-seconds a target: on a machine of many cores,
# 10 CPU-minutes of every target fit in a short call (JOBS x N processes at a time).
# Prints one line a target (executions, rate, corpus) and exits 1 when any target crashed, leaked,
# hit a sanitizer report or timed out; the input that did it is kept in BUILD/fuzz/artifacts/<target>/
# and the log in BUILD/fuzz/logs/<target>.log. Every target runs even after one fails.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

mode=$1 build=$2 seconds=$3 jobs=$4
shift 4
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
# Options of one target. golden: no comparison feedback (-use_cmp=0). With it libFuzzer reads the
# expected SHA-256 out of the seal check's strcmp and writes it into the input, so in about a minute
# it makes files whose seal is valid over a crafted payload, which reach libhdf5 (a leak in H5Fopen
# was the first finding). The seal guards against damage, not against someone who recomputes the
# digest, and libhdf5's behaviour on crafted files is not parity's to fix; without the feedback the
# target fuzzes what the seal promises: a damaged golden never reaches libhdf5.
target_options() {
  case $1 in
    golden) echo -use_cmp=0 ;;
  esac
}
# The first line of a log that says what was found (sanitizer or libFuzzer error, UB, hang).
finding() { grep -m1 -E '^(==[0-9]+== ?ERROR|.*runtime error|ALARM)' "$1"; }

# Runs one target; its result is its exit status and the line it prints.
run_target() {
  local target=$1
  local program=$build/fuzz/fuzz_$target seeds=suites/fuzz/corpus/$target
  local log=$build/fuzz/logs/$target.log artifacts=$build/fuzz/artifacts/$target/ status live options
  mkdir -p "$build/fuzz/logs" "$artifacts"
  if [ ! -d "$seeds" ]; then
    echo "fuzz: $target: no seed corpus $seeds" >&2
    return 1
  fi
  read -r -a live <<<"$(live_seeds "$target")"
  read -r -a options <<<"$(target_options "$target")"
  if [ "$mode" = replay ]; then
    local inputs=("$seeds"/*)
    for directory in "${live[@]}"; do inputs+=("$directory"/*); done
    "$program" "${limits[@]}" -artifact_prefix="$artifacts" "${inputs[@]}" >"$log" 2>&1
    status=$?
    if [ $status = 0 ]; then
      echo "fuzz-replay: $target: ${#inputs[@]} corpus files, no finding"
    else
      echo "fuzz-replay: $target: FAILED (exit $status): $(finding "$log")
  last input run: $(grep '^Running: ' "$log" | tail -n 1 | cut -d' ' -f2-); log: $log"
    fi
    return $status
  fi
  local corpus=$build/fuzz/corpus/$target fork=${FUZZ_FORK:-0}
  mkdir -p "$corpus"
  local parallel=()
  [ "$fork" -gt 0 ] && parallel=(-fork="$fork")
  "$program" "${limits[@]}" "${options[@]}" "${parallel[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$artifacts" "$corpus" "$seeds" "${live[@]}" >"$log" 2>&1
  status=$?
  final_stat() { grep -m1 "^stat::$1:" "$log" | awk '{print $2}'; }
  local runs rate added how="in ${seconds} s"
  runs=$(final_stat number_of_executed_units) rate=$(final_stat average_exec_per_sec) added=$(final_stat new_units_added)
  if [ "$fork" -gt 0 ]; then # fork mode prints progress lines "#RUNS: ... exec/s RATE ..." and no stat:: lines
    runs=$(grep -E '^#[0-9]+:' "$log" | tail -n 1 | sed -E 's/^#([0-9]+):.*/\1/')
    rate=$(grep -E '^#[0-9]+:' "$log" | tail -n 1 | sed -E 's/.*exec\/s ([0-9]+).*/\1/')
    how="in ${seconds} s x $fork processes ($((seconds * fork)) CPU-s)"
  fi
  if [ $status = 0 ]; then
    echo "fuzz: $target: ${runs:-?} executions $how (${rate:-?}/s), corpus $(ls "$corpus" | wc -l) inputs (+${added:-?}), no finding"
  else
    echo "fuzz: $target: FAILED (exit $status) after ${runs:-?} executions: $(finding "$log")
  reproducer: $(grep -m1 -oE "Test unit written to [^ ]+" "$log" | cut -d' ' -f5-); log: $log"
  fi
  return $status
}

declare -A running=() # pid -> target
failed=()
collect() { # waits for one running target
  local pid status
  wait -n -p pid "${!running[@]}"
  status=$?
  [ $status = 0 ] || failed+=("${running[$pid]}")
  unset "running[$pid]"
}
for target in "$@"; do
  while [ ${#running[@]} -ge "$jobs" ]; do collect; done
  run_target "$target" &
  running[$!]=$target
done
while [ ${#running[@]} -gt 0 ]; do collect; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in: ${failed[*]} (minimize with: $build/fuzz/fuzz_<target> -minimize_crash=1 -runs=10000 <reproducer>)" >&2
  exit 1
fi
