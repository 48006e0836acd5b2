#!/usr/bin/env bash
# Session 36, call 6: route_wide's block-count sum with its loads batched
# (moejit) against head (moejit-base) and the same with route_count +
# route_wide from T*k > 1024 on (moejit-counted): the routing suites on
# moejit, then `bench --stages routing` interleaved (ABC CBA), seed shape.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name --format=csv,noheader >> "$summary"
gpu_suite routing runtime_gpu_test 200 --gtest_filter='-Shapes/SwapAbMatchesReference.*'
declare -A cache
for bin in moejit moejit-base moejit-counted; do cache[$bin]=$(mktemp -d); done
for order in "moejit-base moejit moejit-counted" "moejit-counted moejit moejit-base"; do
  for bin in $order; do
    MOEJIT_CACHE_DIR=${cache[$bin]} timeout 100 ./$b/$bin bench --tokens 256 --tokens 512 \
      --tokens 1024 --tokens 2048 --tokens 4096 --tokens 8192 --tokens 16384 --stages routing \
      --runs 30 > "$logs/ab_$bin.log" 2>&1
    echo "$bin rc=$?" >> "$summary"
    awk -v tag="$bin" '/^custom/ {print tag, $2, $4, $10, $12}' "$logs/ab_$bin.log" >> "$summary"
  done
done
