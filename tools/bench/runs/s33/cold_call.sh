#!/usr/bin/env bash
# Session 33's second device call (`carry: ["build-gpu"]`, ~6 min): cold
# get under 1 s. moejit-cold = head + runs/s32/swap_one_width.diff (one
# main loop for the 32/64-row swap-AB kernels) + route_wide's COUNT_BATCH
# 16 -> 8 + the seed table's T=1024 GEMM2 on bm128_bn256_s3_wss instead of
# bn192_s4 (10 kernels; warm --arch sm_90a here 1.04-1.08 s against
# 1.34-1.39 s, 1.96-1.99 s CPU against 2.55). The width build's swap-AB
# suite first (every width and tail), then interleaved lead / cold on the
# seed shape T=1..2048, E=8 T=128 and qwen3-235b T=128. Predictions:
# T<=512 within noise (weight streams), T=1024 +0.5% (session 28's
# bn256 ABBA), route_wide's T=256..2048 (T*k > 1024) within ~1 us.
# moejit-quick = cold + the routing kernels in their own program family
# compiled with --Ofast-compile=min, their id/weight/map loads by __ldg and
# sorted-row stores by __stcg so that the SASS keeps LDG/STG (1.71 s CPU,
# 0.99-1.02 s wall here); combine's loads become LDG.CONSTANT too.
# Prediction: within ~1 us of cold everywhere; T=8192 (route_count no
# longer unrolled) the one to watch.
source "$(dirname "$0")/../../round_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader \
  >> "$summary" 2>&1
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 200 ./$b/runtime_gpu_test_width \
  --gtest_filter='Shapes/SwapAbMatchesReference.*:Seed/*' > "$logs/gpu_tests_width.log" 2>&1
echo "gpu_tests_width rc=$? $SECONDS s $(grep -E '^\[  (PASSED|FAILED) ' "$logs/gpu_tests_width.log" |
  tr '\n' ' ')" >> "$summary"
grep -E '^\[  FAILED  \]' "$logs/gpu_tests_width.log" | head -10 >> "$summary"
cp "$summary" "$logs/pre_ab_summary.txt"
OUT=$out/ab BINS="moejit-lead moejit-cold moejit-quick" RUNS=30 ROUNDS=2 CASE_LIMIT=60 \
  CASES="seed|1 16 128 512 1024 2048 8192;experts=8|128;k=8,hidden=4096,intermediate=1536,experts=128|128" \
  bash "$(dirname "$0")/../../multi_ab.sh" > /dev/null
echo "ab $SECONDS s" >> "$summary"
grep "^ab" "$out/ab/summary.txt" >> "$summary"
finish_round
