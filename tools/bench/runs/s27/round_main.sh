#!/usr/bin/env bash
# Device call A of session 27's plan: the landing commit (kernels compiled
# several to an NVRTC program) on the GPU. ~8 min.
#  1. The seed cases from a cache warmed on the 2-core build machine
#     (build-gpu/warm-cache: four NVRTC programs for the seed shape's eleven
#     kernels), nothing compiled: each checked against the GPU reference.
#  2. tune_gpu_test (the tuner's ~170 candidates group into 32 programs on
#     16 cores) and runtime_gpu_test, this commit's.
set -uo pipefail
O=$OUT; b=build-gpu/main
nvidia-smi --query-gpu=temperature.gpu,clocks.sm --format=csv,noheader
root=$(mktemp -d); cp -r build-gpu/warm-cache/. "$root"/; chmod -R go-w "$root"
MOEJIT_CACHE_DIR=$root ./$b/moejit warm --check --gpu 'NVIDIA H200' > $O/check.log 2>&1
echo "warm --check rc=$?"; tail -2 $O/check.log
MOEJIT_CACHE_DIR=$root MOEJIT_NO_COMPILE=1 timeout 240 ./$b/moejit bench --runs 20 > $O/bench_grouped.log 2>&1
echo "bench rc=$? $SECONDS s"; cat $O/bench_grouped.log | tail -20
timeout 120 ./$b/tune_gpu_test > $O/tune_gpu.log 2>&1
echo "tune_gpu rc=$? $SECONDS s"; grep -E "PASSED|FAILED|Failure" $O/tune_gpu.log | head
timeout 420 ./$b/runtime_gpu_test > $O/runtime_gpu.log 2>&1
echo "runtime_gpu rc=$? $SECONDS s"; grep -E "PASSED|FAILED|Failure" $O/runtime_gpu.log | head
