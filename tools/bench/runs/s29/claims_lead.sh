#!/usr/bin/env bash
# Session 29, device call C: how far ahead the producer claims its next
# tile. moejit = runs/s26/tile_claims.diff (claim sent at the tile's last
# k-stage), moejit-half (at k-stage KT/2), moejit-first (at k-stage 0),
# moejit-base = fb7f89e. A/B of all four, ncu at T=8192 and 128 of the
# two new ones, the GPU suites' pipeline tests and sanitizers on -lead.
# Session 30: moejit-lead = claims_lead.diff (claim at KT/2, and GEMM1's
# gathering producer claims and looks up its tokens before the stage wait,
# as the fixed walk did); moejit (KT-1) was measured in call B, left out.
set -uo pipefail
O=$OUT; b=build-gpu
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader
OUT=$O/ab BINS="moejit-base moejit-half moejit-first moejit-lead" RUNS=20 ROUNDS=2 CASE_LIMIT=60 CASES="seed|1 16 128 512 1024 2048 4096 8192;experts=8|8192;k=8,hidden=4096,intermediate=1536,experts=128|2048 8192;k=2,hidden=4096,intermediate=14336,experts=8|4096" bash tools/bench/multi_ab.sh > /dev/null
echo "ab $SECONDS s"
grep "^ab" $O/ab/summary.txt > $O/ab_summary.txt; cat $O/ab_summary.txt
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
for bin in moejit-first moejit-lead; do for T in 128 8192; do
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ncu --clock-control none -k regex:"moe_gemm" -c 2 --metrics $M \
    ./$b/$bin bench --tokens $T --runs 1 > $O/ncu_${bin}_$T.log 2>&1
done; done
echo "ncu $SECONDS s"
for cfg in bm128_bn128_s4_wss:bm128_bn256_s3_wss bm32_bn64_s9_swap:bm32_bn128_s9_swap; do
  for tool in memcheck synccheck; do
    MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 compute-sanitizer --tool $tool --print-limit 5 ./$b/moejit-lead bench \
      --tokens 37 --tokens 300 --config $cfg --runs 1 > $O/${tool}_${cfg%%_*}.log 2>&1
    echo "$tool $cfg rc=$? $(grep -E 'ERROR SUMMARY' $O/${tool}_${cfg%%_*}.log)"
  done
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 compute-sanitizer --tool racecheck --print-limit 5 ./$b/moejit-lead bench --tokens 5 \
    --shape hidden=256,intermediate=128,experts=8 --config $cfg --runs 1 > $O/racecheck_${cfg%%_*}.log 2>&1
  echo "racecheck $cfg rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $O/racecheck_${cfg%%_*}.log | tr '\n' ' ')"
done
echo "sanitizers $SECONDS s"
left=$((540 - SECONDS))
timeout $left ./$b/runtime_gpu_test_lead --gtest_filter='Runtime.*:Combine.*:*Tails*:Shapes/SwapAbMatchesReference.*' > $O/gpu_tests.log 2>&1
echo "gpu_tests rc=$? $SECONDS s"; grep -cE "^\[       OK" $O/gpu_tests.log; grep -E "FAILED|Failure" $O/gpu_tests.log | head
tar czf $O/logs.tgz -C $O --exclude logs.tgz . 2>/dev/null
