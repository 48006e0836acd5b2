#!/usr/bin/env bash
# Session 33's second call: uni's swap-AB shapes (the suite one_call.sh
# left out), then quick's GPU suite (runtime_gpu_test built with quick.diff).
source "$(dirname "$0")/../../round_env.sh"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 ./$b/runtime_gpu_test_uni --gtest_filter=$(printf \
  'Shapes/SwapAbMatchesReference.EveryPlanAndMode/%s:' bf16_k8_h2048_i768_e128_t1_random \
  fp16_k6_h512_i256_e64_t300_random bf16_k2_h8_i8_e3_t17_random fp16_k1_h264_i200_e64_t10272_tails \
  bf16_k4_h256_i128_e16_t1000_oneexpert bf16_k8_h256_i128_e64_t1000_outofrange) \
  > "$logs/gpu_swap_uni.log" 2>&1
echo "gpu_swap_uni rc=$? $SECONDS s $(grep -E '^\[  (PASSED|FAILED) ' "$logs/gpu_swap_uni.log" |
  tr '\n' ' ')" >> "$summary"
grep -E '^\[  FAILED  \]' "$logs/gpu_swap_uni.log" | head -10 >> "$summary"
cp "$summary" "$logs/mid_summary.txt"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/runtime_gpu_test_quick --gtest_filter='RoutingPaths/*:Routings/*:Seed/*:Runtime.*' \
  > "$logs/gpu_tests_quick.log" 2>&1
echo "gpu_tests_quick rc=$? $SECONDS s $(grep -E '^\[  (PASSED|FAILED) ' "$logs/gpu_tests_quick.log" |
  tr '\n' ' ')" >> "$summary"
echo "quick ok $(grep -c '^\[       OK \]' "$logs/gpu_tests_quick.log") failed $(grep -c '^\[  FAILED  \]' "$logs/gpu_tests_quick.log")" >> "$summary"
grep -E '^\[  FAILED  \]' "$logs/gpu_tests_quick.log" | head -5 >> "$summary"
finish_round
