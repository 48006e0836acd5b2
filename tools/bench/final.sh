#!/usr/bin/env bash
# The seed benchmark on a cold card first, then the GPU tests, then a
# memcheck pass over the small cases. Logs under $OUT.
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > "$out/smi.txt" 2>&1
MOEJIT_CACHE_DIR=$(mktemp -d) ./build/moejit bench --json "$out/bench.json" 2>&1 | tee "$out/bench.log"
MOEJIT_CACHE_DIR=$(mktemp -d) ./build/tests/runtime_gpu_test > "$out/gpu_test.log" 2>&1
echo "gpu tests rc=$?"; grep -E "FAILED|PASSED|Failure" "$out/gpu_test.log" | head -10
MOEJIT_CACHE_DIR=$(mktemp -d) compute-sanitizer --tool memcheck --print-limit 5 \
  ./build/tests/runtime_gpu_test --gtest_filter='OddSizes*:KAndExperts*:Routings*outofrange*:Runtime.*' \
  > "$out/memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck.log" | head -5
