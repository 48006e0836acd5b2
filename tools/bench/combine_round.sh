#!/usr/bin/env bash
# Issue 10 step 5 (combine modes) on the GPU machine, over build-gpu/
# (tools/bench/bundle.sh): the GPU suite (every reference case in the three
# modes, batch invariance from 1 to 8192 tokens), the seed cases with the
# three modes interleaved run by run, ncu durations of the fast GEMM2 and
# memset at T=8192, memcheck of the fast and batch-invariant paths on small
# cases and racecheck of the staged GEMM2 that adds into y. Logs in
# $OUT/logs.tar.gz, summary in $OUT/summary.txt. SANITIZERS=0 skips the
# sanitizers.
source "$(dirname "$0")/round_env.sh"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 240 ./$b/runtime_gpu_test > "$logs/runtime_gpu_test.log" 2>&1
echo "runtime_gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$logs/runtime_gpu_test.log" |
  tr '\n' ' ')" >> "$summary"
grep -E '^\[  FAILED|Failure|Expected|Which is|error' "$logs/runtime_gpu_test.log" | head -20 >> "$summary"
cache=$(mktemp -d)
MOEJIT_CACHE_DIR=$cache timeout 200 ./$b/moejit bench --combine deterministic --combine fast \
  --combine batch-invariant --runs 30 --json "$logs/bench_modes.json" > "$logs/bench_modes.log" 2>&1
echo "seed bench, three modes rc=$?" >> "$summary"
awk '/^t[0-9]+_e[0-9]+/ {print "seed", $1, $4, $8, $9, $10, $11}' "$logs/bench_modes.log" >> "$summary"
MOEJIT_CACHE_DIR=$cache MOEJIT_COMBINE=fast timeout 60 ncu --clock-control none -c 8 \
  --metrics gpu__time_duration.sum ./$b/moejit bench --tokens 8192 --runs 1 > "$logs/ncu_fast.log" 2>&1
awk '/^  [a-zA-Z_]/ {name=$1} /gpu__time_duration/ {print "ncu fast T=8192", name, $NF}' \
  "$logs/ncu_fast.log" >> "$summary"
[ "${SANITIZERS:-1}" = 1 ] || { finish_round; exit 0; }
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 150 compute-sanitizer --tool memcheck --print-limit 5 \
  ./$b/runtime_gpu_test --gtest_filter='Combine.FastInPlace*:Tokens*t1_*:Tokens*t7_*:Runtime.EveryOutput*' \
  > "$logs/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$logs/memcheck.log")" >> "$summary"
for mode in fast; do
  MOEJIT_CACHE_DIR=$(mktemp -d) MOEJIT_COMBINE=$mode timeout 100 compute-sanitizer --tool racecheck \
    --print-limit 5 ./$b/moejit bench --tokens 5 --tokens 70 \
    --shape hidden=256,intermediate=128,experts=8 --config bm128_bn128_s4_ws:bm128_bn256_s3_wss \
    --runs 1 > "$logs/racecheck_$mode.log" 2>&1
  echo "racecheck $mode rc=$? $(grep -E 'RACECHECK SUMMARY' "$logs/racecheck_$mode.log")" >> "$summary"
done
finish_round
