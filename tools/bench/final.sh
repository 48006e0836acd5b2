#!/usr/bin/env bash
# The seed benchmark on a cold card first (SKIP_BENCH=1: not), then
# `ctest -L gpu`, then a memcheck pass over the small cases. Logs under $OUT.
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > "$out/smi.txt" 2>&1
git log --oneline -1 > "$out/commit.txt" 2>&1 || true
[ "${SKIP_BENCH:-0}" = 1 ] ||
  MOEJIT_CACHE_DIR=$(mktemp -d) ./build/moejit bench --json "$out/bench.json" 2>&1 |
  tee "$out/bench.log"
# CTest files hold the absolute paths of the build machine's checkout.
src=$(grep -m1 'CMAKE_HOME_DIRECTORY' build/CMakeCache.txt | cut -d= -f2)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
(cd "$src" && ctest --test-dir build -L gpu -j 4 --output-on-failure) > "$out/ctest_gpu.log" 2>&1
echo "ctest -L gpu rc=$?"; grep -E "tests passed|Failed|\*\*\*" "$out/ctest_gpu.log" | head -10
MOEJIT_CACHE_DIR=$(mktemp -d) compute-sanitizer --tool memcheck --print-limit 5 \
  ./build/tests/runtime_gpu_test --gtest_filter='OddSizes*:KAndExperts*:Routings*outofrange*:Runtime.*' \
  > "$out/memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck.log" | head -5
