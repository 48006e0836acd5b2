#!/usr/bin/env bash
# Session 36, call 10: call 9's build with the combine's sorted rows loaded
# one slot per lane and shuffled (moejit) against 97e65fd's kernels: the GPU
# suites the change touches, then interleaved ABBA, 30 runs.
source "$(dirname "$0")/../../round_env.sh"
nvidia-smi --query-gpu=name --format=csv,noheader >> "$summary"
gpu_suite suite runtime_gpu_test 200 \
  --gtest_filter='Seed/*:KAndExperts/*:OddSizes/*:Fp32/*:RoutingPaths/*:Routings/*:Runtime.*:Combine.*'
tar czf "$out/suite_logs.tgz" -C "$logs" .
OUT=$out/ab BINS="moejit moejit-base" ROUNDS=2 CASE_LIMIT=120 \
  CASES="seed|1 16 128 2048 8192" bash tools/bench/multi_ab.sh > /dev/null
cat "$summary" "$out/ab/summary.txt"
