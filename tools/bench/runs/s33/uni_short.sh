#!/usr/bin/env bash
# uni_call.sh cut to what one call in a short budget can hold, A/B first:
# base / lead / uni interleaved (no tail), then uni's GPU suites.
source "$(dirname "$0")/../../round_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader \
  >> "$summary" 2>&1
OUT=$out/ab BINS="moejit-base moejit-lead moejit-uni" RUNS=20 ROUNDS=2 CASE_LIMIT=50 \
  CASES="seed|8192 2048;experts=8|8192" bash "$(dirname "$0")/../../multi_ab.sh" > /dev/null
echo "ab $SECONDS s" >> "$summary"
grep "^ab" "$out/ab/summary.txt" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 150 ./$b/runtime_gpu_test_uni \
  --gtest_filter='-Shapes/SwapAbMatchesReference.*' > "$logs/gpu_tests_uni.log" 2>&1
echo "gpu_tests_uni rc=$? $SECONDS s $(grep -E '^\[  (PASSED|FAILED) ' "$logs/gpu_tests_uni.log" |
  tr '\n' ' ')" >> "$summary"
grep -E '^\[  FAILED  \]' "$logs/gpu_tests_uni.log" | head -10 >> "$summary"
cp "$summary" "$logs/mid_summary.txt"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 100 ./$b/runtime_gpu_test_uni --gtest_filter=$(printf \
  'Shapes/SwapAbMatchesReference.EveryPlanAndMode/%s:' bf16_k8_h2048_i768_e128_t1_random \
  fp16_k6_h512_i256_e64_t300_random bf16_k2_h8_i8_e3_t17_random fp16_k1_h264_i200_e64_t10272_tails \
  bf16_k4_h256_i128_e16_t1000_oneexpert bf16_k8_h256_i128_e64_t1000_outofrange) \
  > "$logs/gpu_swap_uni.log" 2>&1
echo "gpu_swap_uni rc=$? $SECONDS s $(grep -E '^\[  (PASSED|FAILED) ' "$logs/gpu_swap_uni.log" |
  tr '\n' ' ')" >> "$summary"
finish_round
