#!/usr/bin/env bash
# A change to the warp-specialised GEMMs on the GPU machine, over build-gpu/
# (tools/bench/bundle.sh BASE): the GPU suite, GEMM1:GEMM2 config pairs
# (staged and not; every half width when it was the 64-row tail round)
# checked against the GPU reference at T=2048 and 8192, an ABBA A/B of
# whole calls against build-gpu/moejit-base, ncu durations of the GEMMs at
# T=2048 and 8192 (NCU_TOKENS; with the combine pass; NCU_METRICS for more readings), racecheck of a call of small
# tiles and memcheck of the tail tests. Logs in $OUT/logs.tar.gz, summary
# in $OUT/summary.txt. Used for the 64-row tails (6e32099) and the combine
# in GEMM2 (not committed; NOTES.md).
source "$(dirname "$0")/round_env.sh"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 240 ./$b/runtime_gpu_test > "$logs/runtime_gpu_test.log" 2>&1
echo "runtime_gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$logs/runtime_gpu_test.log" |
  tr '\n' ' ')" >> "$summary"
grep -E '^\[  FAILED' "$logs/runtime_gpu_test.log" | head -20 >> "$summary"
cache=$(mktemp -d) cache_base=$(mktemp -d)
MOEJIT_CACHE_DIR=$cache timeout 150 ./$b/moejit bench --tokens 2048 --tokens 8192 --runs 10 \
  --config bm128_bn64_s4_ws:bm128_bn128_s4_ws --config bm128_bn96_s5_ws:bm128_bn192_s3_wss \
  --config bm128_bn128_s4_ws:bm128_bn256_s3_wss --config bm128_bn128_s4_ws:bm128_bn256_s3_ws \
  > "$logs/configs.log" 2>&1
echo "configs rc=$?" >> "$summary"
awk '/^custom/ {print "config", $2, $4, $9, $10, $11}' "$logs/configs.log" >> "$summary"
ab_rounds "${AB_TOKENS:-128 1024 2048 4096 8192 32768}" 90
for t in ${NCU_TOKENS-2048 8192}; do
  for bin in moejit moejit-base; do
    c=$cache
    [ $bin = moejit-base ] && c=$cache_base
    MOEJIT_CACHE_DIR=$c timeout 60 ncu --clock-control none -k regex:"moe_gemm|moe_combine" -c 3 \
      --metrics ${NCU_METRICS:-gpu__time_duration.sum} ./$b/$bin bench --tokens $t --runs 1 \
      > "$logs/ncu_${bin}_$t.log" 2>&1
    awk -v t="$t $bin" '/^  moe_(gemm|combine)/ {name=$1} /^    [a-z0-9_]+__/ {print "ncu T=" t, name, $1, $NF}' \
      "$logs/ncu_${bin}_$t.log" >> "$summary"
  done
done
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 100 compute-sanitizer --tool racecheck --print-limit 5 \
  ./$b/moejit bench --tokens 70 --shape hidden=256,intermediate=128,experts=8 \
  --config bm128_bn128_s4_ws:bm128_bn256_s3_wss --runs 1 > "$logs/racecheck.log" 2>&1
echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY' "$logs/racecheck.log")" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 100 compute-sanitizer --tool memcheck --print-limit 5 \
  ./$b/runtime_gpu_test --gtest_filter='RoutingPaths*tails*' > "$logs/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$logs/memcheck.log")" >> "$summary"
finish_round
