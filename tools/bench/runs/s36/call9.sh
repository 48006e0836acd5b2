#!/usr/bin/env bash
# Session 36, call 9: route_block with its chunk's experts and weights kept
# in registers, and the combine loading its first sorted rows before its
# wait (moejit, working tree on 38c727b) against 97e65fd's kernels
# (moejit-base): runtime_gpu_test without the swap-AB shapes, then
# interleaved ABBA with the routing alone (--stages routing), 30 runs.
source "$(dirname "$0")/../../round_env.sh"
nvidia-smi --query-gpu=name --format=csv,noheader >> "$summary"
gpu_suite suite runtime_gpu_test 200 --gtest_filter='-Shapes/SwapAbMatchesReference.*'
tar czf "$out/suite_logs.tgz" -C "$logs" .
OUT=$out/ab BINS="moejit moejit-base" ROUNDS=2 CASE_LIMIT=120 BENCH_ARGS="--stages routing" \
  CASES="seed|1 16 128 256 512 1024 2048 8192;k=8,hidden=4096,intermediate=1536,experts=128|128" \
  bash tools/bench/multi_ab.sh > /dev/null
cat "$summary" "$out/ab/summary.txt"
