#!/usr/bin/env bash
# s25 call 6: one swap-AB epilogue per kernel (working tree) against ff729eb
# (build-gpu/moejit-base): swap-AB reference cases, then a short A/B.
set -uo pipefail
O=$OUT; b=build-gpu
timeout 100 ./$b/runtime_gpu_test --gtest_filter='Shapes/SwapAbMatchesReference.EveryPlanAndMode/bf16_k1_h264_i200_e64_t8128_spread:Shapes/SwapAbMatchesReference.EveryPlanAndMode/bf16_k8_h2048_i768_e128_t128_random:Shapes/SwapAbMatchesReference.EveryPlanAndMode/fp16_k6_h512_i256_e64_t300_random:Shapes/SwapAbMatchesReference.EveryPlanAndMode/bf16_k2_h8_i8_e3_t17_random' > $O/gpu_test.log 2>&1
echo "gpu_test rc=$? $SECONDS s"; grep -E "^\[  (PASSED|FAILED)" $O/gpu_test.log
OUT=$O/ab BINS="moejit moejit-base" RUNS=20 ROUNDS=2 CASE_LIMIT=40 CASES="seed|128 512;k=8,hidden=4096,intermediate=1536,experts=128|2048" bash tools/bench/multi_ab.sh > /dev/null
echo "ab $SECONDS s"
OUT=$O/abcfg BINS="moejit moejit-base" RUNS=20 ROUNDS=2 CASE_LIMIT=40 BENCH_ARGS="--config bm256_bn64_s4_swap:bm256_bn128_s4_swap" CASES="seed|2048" bash tools/bench/multi_ab.sh > /dev/null
echo "end $SECONDS s"
grep "^ab" $O/ab/summary.txt $O/abcfg/summary.txt
