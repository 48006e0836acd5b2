#!/usr/bin/env bash
# Session 36, call 12: GEMM2 summing its first column pass in its
# producer's idle warps (runs/s36/gemm2_sums_first_pass.diff) against the
# head (moejit-base): the GPU suites it touches (short limits: a broken
# pass count would hang the summing warps), then ABBA with the call
# without its combine.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name --format=csv,noheader >> "$summary"
gpu_suite combine runtime_gpu_test 60 --gtest_filter='Combine.*:Seed/*'
gpu_suite rest runtime_gpu_test 90 --gtest_filter='KAndExperts/*:OddSizes/*:Runtime.*:Tokens/*'
declare -A cache
for bin in moejit moejit-base; do cache[$bin]=$(mktemp -d); done
for order in "moejit-base moejit" "moejit moejit-base"; do
  for bin in $order; do
    MOEJIT_CACHE_DIR=${cache[$bin]} timeout 40 ./$b/$bin bench --tokens 2048 --tokens 4096 \
      --tokens 8192 --stages routing+gemm1+gemm2 --runs 20 > "$logs/ab_$bin.log" 2>&1
    echo "$bin rc=$?" >> "$summary"
    awk -v tag="$bin" '/^custom/ {print tag, $2, $4, $9, $10, $12}' "$logs/ab_$bin.log" >> "$summary"
  done
done
