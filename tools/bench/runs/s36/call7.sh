#!/usr/bin/env bash
# Session 36, call 7: the landed routing (sums batched, route_count past
# T*k = 16384): the routing suites and the rest of runtime_gpu_test, then
# `bench --stages routing` against head (moejit-base), ABBA.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name --format=csv,noheader >> "$summary"
gpu_suite suite runtime_gpu_test 200 --gtest_filter='-Shapes/SwapAbMatchesReference.*'
declare -A cache
for bin in moejit moejit-base; do cache[$bin]=$(mktemp -d); done
for order in "moejit-base moejit" "moejit moejit-base"; do
  for bin in $order; do
    MOEJIT_CACHE_DIR=${cache[$bin]} timeout 100 ./$b/$bin bench --tokens 2048 --tokens 3072 \
      --tokens 4096 --tokens 8192 --tokens 16384 --stages routing --runs 30 > "$logs/ab_$bin.log" 2>&1
    echo "$bin rc=$?" >> "$summary"
    awk -v tag="$bin" '/^custom/ {print tag, $2, $4, $10, $12}' "$logs/ab_$bin.log" >> "$summary"
  done
done
