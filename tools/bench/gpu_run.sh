#!/usr/bin/env bash
# One device call: GPU tests, then the benchmark. Logs go to $OUT (or ./out).
# Usage: tools/bench/gpu_run.sh [gtest filter]
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > "$out/smi.txt" 2>&1
export MOEJIT_CACHE_DIR=$(mktemp -d)
./build/tests/runtime_gpu_test --gtest_filter="${1:-*}" 2>&1 | tee "$out/gpu_test.log" | grep -E "FAILED|OK \]|PASSED|Failure|error" | tail -60
./build/moejit bench --json "$out/bench.json" 2>&1 | tee "$out/bench.log"
