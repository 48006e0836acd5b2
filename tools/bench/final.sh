#!/usr/bin/env bash
# GPU tests, a memcheck pass over the small cases, then the seed benchmark.
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
bash tools/bench/gpu_run.sh 2>&1 | grep -vE "^\[       OK" | tail -22
MOEJIT_CACHE_DIR=$(mktemp -d) compute-sanitizer --tool memcheck --print-limit 5 \
  ./build/tests/runtime_gpu_test --gtest_filter='OddSizes*:KAndExperts*:Routings*outofrange*:Runtime.*' \
  > "$out/memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck.log" | head -5
