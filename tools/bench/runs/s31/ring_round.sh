#!/usr/bin/env bash
# Session 31, call H: the ticket ring (runs/s31/ticket_ring.diff on
# f7fdcdd, moejit-ring: the next tile's ticket travels with the current
# tile's last stage, so the consumers' k-loop has no wait before it)
# against f7fdcdd's kernels (moejit-lead) and a6b17b8's (moejit-base),
# interleaved; then the ring build's GPU tests (all but most swap-AB
# shapes) and sanitizers on a ws and a swap config.
set -uo pipefail
O=$OUT; b=build-gpu
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader
OUT=$O/ab BINS="moejit-base moejit-lead moejit-ring" RUNS=20 ROUNDS=2 CASE_LIMIT=90 CASES="seed|128 2048 4096 8192 16384;experts=8|8192;experts=32|8192;k=8,hidden=4096,intermediate=1536,experts=128|2048 8192" bash tools/bench/multi_ab.sh > /dev/null
echo "ab $SECONDS s"
grep "^ab" $O/ab/summary.txt > $O/ab_summary.txt; cat $O/ab_summary.txt
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 200 ./$b/runtime_gpu_test_ring \
  --gtest_filter='-Shapes/SwapAbMatchesReference.*' > $O/gpu_tests.log 2>&1
echo "gpu_tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $O/gpu_tests.log
# Six of the twelve swap-AB shapes (T=1, short pipelines, tails, one hot
# expert, out-of-range ids).
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 150 ./$b/runtime_gpu_test_ring \
  --gtest_filter='Shapes/SwapAbMatchesReference.EveryPlanAndMode/bf16_k8_h2048_i768_e128_t1_random:Shapes/SwapAbMatchesReference.EveryPlanAndMode/fp16_k6_h512_i256_e64_t300_random:Shapes/SwapAbMatchesReference.EveryPlanAndMode/bf16_k2_h8_i8_e3_t17_random:Shapes/SwapAbMatchesReference.EveryPlanAndMode/fp16_k1_h264_i200_e64_t10272_tails:Shapes/SwapAbMatchesReference.EveryPlanAndMode/bf16_k4_h256_i128_e16_t1000_oneexpert:Shapes/SwapAbMatchesReference.EveryPlanAndMode/bf16_k8_h256_i128_e64_t1000_outofrange' > $O/gpu_swap.log 2>&1
echo "gpu_swap rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $O/gpu_swap.log
for cfg in bm128_bn128_s4_wss:bm128_bn256_s3_wss bm32_bn64_s9_swap:bm32_bn128_s9_swap; do
  for tool in memcheck synccheck; do
    MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 compute-sanitizer --tool $tool --print-limit 5 ./$b/moejit-ring bench \
      --tokens 37 --tokens 300 --config $cfg --runs 1 > $O/${tool}_${cfg%%_*}.log 2>&1
    echo "$tool $cfg rc=$? $(grep -E 'ERROR SUMMARY' $O/${tool}_${cfg%%_*}.log)"
  done
done
tar czf $O/logs.tgz -C $O --exclude logs.tgz . 2>/dev/null
