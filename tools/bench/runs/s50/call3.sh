#!/usr/bin/env bash
# Session 50, call 3 (an H100, or whatever comes; bundle: the head with
# runs split into calls past one launch's row tiles).
# 1. Runtime.RunsPastOneLaunchsRowTilesAreSplitIntoCalls (the fp64
#    reference at each call's boundary, deterministic and fast, in place).
# 2. bench of a split run (k8 H64 I64 E8, T=2.5M; every token checked
#    against the GPU reference), both modes; memcheck of one such run.
# 3. tests/python/test_torch.py (990c47f's fallback under torch.compile on
#    the GPU).
# 4. The rest of runtime_gpu_test (every run goes through the changed
#    enqueue), swap-AB shapes last, as far as the call's time goes.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> "$summary"
gpu_suite split runtime_gpu_test 150 --gtest_filter='Runtime.RunsPastOneLaunchsRowTilesAreSplitIntoCalls'
split=k=8,hidden=64,intermediate=64,experts=8
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 120 ./$b/moejit bench --shape $split --tokens 2500000 \
  --runs 5 --combine deterministic --combine fast > "$logs/bench_split.log" 2>&1
echo "bench split rc=$? $SECONDS s" >> "$summary"
grep -E " (yes|NO) " "$logs/bench_split.log" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/moejit bench --shape $split --tokens 2500000 \
  --runs 2 --stages gemm1 > "$logs/bench_split_stages.log" 2>&1
echo "bench split --stages rc=$? (1 expected): $(tail -1 "$logs/bench_split_stages.log")" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 150 compute-sanitizer --tool memcheck --print-limit 5 \
  ./$b/moejit bench --shape $split --tokens 2500000 --runs 1 > "$logs/memcheck_split.log" 2>&1
echo "memcheck split rc=$? $SECONDS s $(grep -E 'ERROR SUMMARY' "$logs/memcheck_split.log")" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) PYTHONPATH=$PWD/$b/py timeout 150 python3 tests/python/test_torch.py \
  > "$logs/python_torch.log" 2>&1
echo "test_torch.py rc=$? $SECONDS s $(tail -1 "$logs/python_torch.log")" >> "$summary"
left=$((570 - SECONDS))
[ $left -gt 30 ] && gpu_suite runtime runtime_gpu_test $left \
  --gtest_filter='-Shapes/SwapAbMatchesReference.*:Runtime.RunsPastOneLaunchsRowTilesAreSplitIntoCalls'
