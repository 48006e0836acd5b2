#!/usr/bin/env bash
# Session 32's second prepared device call (after next_call.sh; `carry:
# ["build-gpu"]`, about 6 minutes). Cold get: runs/s32/swap_one_width.diff
# gives the 32- and 64-row swap-AB kernels one main loop (width BM) instead
# of three (BM/4, BM/2, BM): the seed set's NVRTC CPU 2.55 -> 2.25 s, warm
# 1.33-1.38 -> 1.20-1.27 s on session 32's 2-core machine. Does it cost
# the small-T cases anything? moejit-width against moejit-lead (both
# f7fdcdd's kernels otherwise): its swap-AB GPU suite (every width and
# tail), then interleaved T=1..512 on the seed shape, E=8 T=128 and
# qwen3-235b T=128. Prediction: within noise (the tiles stream weights;
# the tensor work of 32 or 64 columns hides under the stream).
source "$(dirname "$0")/../../round_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader \
  >> "$summary" 2>&1
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 200 ./$b/runtime_gpu_test_width \
  --gtest_filter='Shapes/SwapAbMatchesReference.*:Seed/*:Runtime.*' > "$logs/gpu_tests_width.log" 2>&1
echo "gpu_tests_width rc=$? $SECONDS s $(grep -E '^\[  (PASSED|FAILED) ' "$logs/gpu_tests_width.log" |
  tr '\n' ' ')" >> "$summary"
grep -E '^\[  FAILED  \]' "$logs/gpu_tests_width.log" | head -10 >> "$summary"
OUT=$logs/ab BINS="moejit-lead moejit-width" RUNS=30 ROUNDS=2 CASE_LIMIT=60 \
  CASES="seed|1 4 16 64 128 256 512;experts=8|128;k=8,hidden=4096,intermediate=1536,experts=128|128" \
  bash "$(dirname "$0")/../../multi_ab.sh" > /dev/null
echo "ab $SECONDS s" >> "$summary"
grep "^ab" "$logs/ab/summary.txt" >> "$summary"
finish_round
