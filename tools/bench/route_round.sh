#!/usr/bin/env bash
# Routing rounds on the GPU machine, over build-gpu/ (tools/bench/bundle.sh
# BASE): the GPU suite (GPU_TEST_FILTER, a gtest filter; default all),
# ncu durations of the routing kernels at NCU_TOKENS (default 128 8192) for
# each binary of NCU_BINS (default moejit), an ABBA A/B of whole calls
# against build-gpu/moejit-base at AB_TOKENS (default six token counts;
# empty: none), the 13 seed cases as JSON (SEED_BENCH=0: not), memcheck
# over the routing cases and racecheck of one-launch routing at T*k = 2400
# (SANITIZERS=0: neither). Logs in $OUT/logs.tar.gz, summary in
# $OUT/summary.txt.
source "$(dirname "$0")/round_env.sh"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout ${GPU_TEST_LIMIT:-200} ./$b/runtime_gpu_test \
  --gtest_filter="${GPU_TEST_FILTER:-*}" > "$logs/runtime_gpu_test.log" 2>&1
echo "runtime_gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$logs/runtime_gpu_test.log" |
  tr '\n' ' ')" >> "$summary"
grep -E '^\[  FAILED' "$logs/runtime_gpu_test.log" >> "$summary"
cache=$(mktemp -d) cache_base=$(mktemp -d)
for bin in ${NCU_BINS:-moejit}; do
  ncu_cache=$(mktemp -d)
  for t in ${NCU_TOKENS-128 8192}; do
    MOEJIT_CACHE_DIR=$ncu_cache timeout 60 ncu --clock-control none -k regex:"moe_route" -c 3 \
      --metrics gpu__time_duration.sum ./$b/$bin bench --tokens $t --runs 1 \
      > "$logs/ncu_route_${bin}_$t.log" 2>&1
    awk -v tag="ncu $bin T=$t" '/^  moe_route/ {name=$1} /gpu__time_duration/ {print tag, name, $NF}' \
      "$logs/ncu_route_${bin}_$t.log" >> "$summary"
  done
done
ab_tokens=${AB_TOKENS-1 128 512 2048 8192 32768}
[ -z "$ab_tokens" ] || ab_rounds "$ab_tokens" 80
if [ "${SEED_BENCH:-1}" = 1 ]; then
  MOEJIT_CACHE_DIR=$cache timeout 100 ./$b/moejit bench --json "$logs/bench.json" --runs 30 \
    > "$logs/bench_seed.log" 2>&1
  echo "seed bench rc=$?" >> "$summary"
  awk '/^t[0-9]+_e[0-9]+/ {print "seed", $1, $4, $8, $9, $10}' "$logs/bench_seed.log" >> "$summary"
fi
[ "${SANITIZERS:-1}" = 1 ] || { finish_round; exit 0; }
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 120 compute-sanitizer --tool memcheck --print-limit 5 \
  ./$b/runtime_gpu_test --gtest_filter='RoutingPaths*:Tokens*t1_*:Tokens*t7_*:Routings*t7_*' \
  > "$logs/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$logs/memcheck.log")" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 compute-sanitizer --tool racecheck --print-limit 5 \
  ./$b/moejit bench --tokens 100 --tokens 300 --shape hidden=256,intermediate=128,experts=8 \
  --runs 1 > "$logs/racecheck.log" 2>&1
echo "racecheck route_block, route_wide rc=$? $(grep -E 'RACECHECK SUMMARY' "$logs/racecheck.log")" >> "$summary"
finish_round
