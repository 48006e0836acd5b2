#!/usr/bin/env bash
# Session 33: one device call for what the budget left holds (`carry:
# ["build-gpu"]`). Interleaved A/B of base (a6b17b8's kernels), lead
# (head), uni (head + runs/s32/warp_uniform.diff) and quick (head +
# runs/s33/quick.diff: one-width swap-AB, route_wide count batch 8, the
# seed table's T=1024 GEMM2 on bn256 s3, routing kernels compiled at
# --Ofast-compile=min in their own program with explicit LDG/STG: cold get
# 1.01-1.04 s / 1.75 s CPU here against 1.34-1.39 / 2.56). bench checks
# each case against its reference ("correct" column). Then uni's GPU suite
# (not swap-AB) if time is left.
# Predictions: uni T=8192 about -1.8% against lead (base's time), E=8
# T=8192 -1%, others even; quick within noise of lead (T=1024 +0.5%).
source "$(dirname "$0")/../../round_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader \
  >> "$summary" 2>&1
OUT=$out/ab BINS="moejit-base moejit-lead moejit-uni moejit-quick" RUNS=20 ROUNDS=2 CASE_LIMIT=50 \
  CASES="seed|1 128 1024 2048 8192;experts=8|8192;k=8,hidden=4096,intermediate=1536,experts=128|128" \
  bash "$(dirname "$0")/../../multi_ab.sh" > /dev/null
echo "ab $SECONDS s" >> "$summary"
grep "^ab" "$out/ab/summary.txt" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 150 ./$b/runtime_gpu_test_uni \
  --gtest_filter='-Shapes/SwapAbMatchesReference.*' > "$logs/gpu_tests_uni.log" 2>&1
echo "gpu_tests_uni rc=$? $SECONDS s $(grep -E '^\[  (PASSED|FAILED) ' "$logs/gpu_tests_uni.log" |
  tr '\n' ' ')" >> "$summary"
grep -E '^\[  FAILED  \]' "$logs/gpu_tests_uni.log" | head -10 >> "$summary"
finish_round
