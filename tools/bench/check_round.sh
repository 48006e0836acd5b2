#!/usr/bin/env bash
# A session's closing GPU check over build-gpu/ (tools/bench/bundle.sh), in
# one call: the 13 seed cases on a cold card first (bench.json), the
# headline in fast mode, mixtral-8x7b at T=1024..8192 (its shipped table),
# then the GPU suites (GPU_TEST_FILTER: a gtest filter for runtime_gpu_test,
# default all). Each step under its own limit; summary last.
source "$(dirname "$0")/round_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv \
  > "$logs/smi.txt" 2>&1
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 120 ./$b/moejit bench --json "$out/bench.json" \
  > "$logs/bench.log" 2>&1
echo "seed bench rc=$?" >> "$summary"
grep -E ' (yes|NO) ' "$logs/bench.log" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/moejit bench --combine fast --combine deterministic \
  --tokens 8192 --runs 30 > "$logs/fast.log" 2>&1
echo "fast rc=$?" >> "$summary"
grep -E " (yes|NO) " "$logs/fast.log" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 ./$b/moejit bench \
  --shape k=2,hidden=4096,intermediate=14336,experts=8 --tokens 1024 --tokens 2048 \
  --tokens 4096 --tokens 8192 --runs 20 > "$logs/mixtral.log" 2>&1
echo "mixtral rc=$?" >> "$summary"
grep -E " (yes|NO) " "$logs/mixtral.log" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 480 ./$b/runtime_gpu_test --gtest_filter="${GPU_TEST_FILTER:-*}" \
  > "$logs/runtime_gpu_test.log" 2>&1
echo "runtime_gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$logs/runtime_gpu_test.log" |
  tr '\n' ' ')" >> "$summary"
grep -E '^\[  FAILED  \]' "$logs/runtime_gpu_test.log" | head -10 >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/tune_gpu_test > "$logs/tune_gpu_test.log" 2>&1
echo "tune_gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$logs/tune_gpu_test.log" |
  tr '\n' ' ')" >> "$summary"
finish_round
