#!/usr/bin/env bash
# Session 38, call 2: on an H200 the done-when figures of the head
# (2977ac2's kernels = 42e2eb2's) on a cold card; the GPU suite without the
# swap-AB shapes and tune_gpu_test; then GEMM pairs at T=1024..4096 against
# the heuristic's (ws bn128 s4 staged : wss bn256 s3), on whatever card came.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
gpu_suite runtime runtime_gpu_test 200 --gtest_filter='-Shapes/SwapAbMatchesReference.*'
gpu_suite tune tune_gpu_test 60
pairs="bm128_bn128_s4_wss:bm128_bn256_s3_wss bm128_bn64_s7_swap:bm128_bn128_s6_swap
  bm256_bn64_s4_swap:bm256_bn128_s4_swap bm128_bn128_s4_wss:bm128_bn128_s6_swap
  bm128_bn64_s7_swap:bm128_bn256_s3_wss bm128_bn96_s4_wss:bm128_bn256_s3_wss"
args=""
for pair in $pairs; do args="$args --config $pair"; done
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 150 ./$b/moejit bench --tokens 1024 --tokens 2048 --tokens 4096 \
  $args --runs 30 > "$logs/pairs.log" 2>&1
echo "pairs rc=$?" >> "$summary"
grep -E ' (yes|NO) ' "$logs/pairs.log" >> "$summary"
