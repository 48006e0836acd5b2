#!/usr/bin/env bash
# Session 31, call F: claims_lead.diff (moejit-lead) against fb7f89e
# (moejit-base, the kernels of main a6b17b8), interleaved, on the seed
# cases and the presets; then tune_gpu_test on the lead build.
set -uo pipefail
O=$OUT; b=build-gpu
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader
OUT=$O/ab BINS="moejit-base moejit-lead" RUNS=20 ROUNDS=2 CASE_LIMIT=120 CASES="seed|1 128 512 1024 2048 4096 8192 16384 32768;experts=8|8192;experts=16|8192;experts=32|8192;experts=64|8192;k=8,hidden=4096,intermediate=1536,experts=128|2048 8192;k=2,hidden=4096,intermediate=14336,experts=8|1024 4096;k=6,hidden=2048,intermediate=1408,experts=64|2048 8192;k=8,hidden=2048,intermediate=1024,experts=64|2048 8192" bash tools/bench/multi_ab.sh > /dev/null
echo "ab $SECONDS s"
grep "^ab" $O/ab/summary.txt > $O/ab_summary.txt; cat $O/ab_summary.txt
export MOEJIT_CACHE_DIR=$(mktemp -d)
timeout 200 ./$b/tune_gpu_test_lead > $O/tune_gpu.log 2>&1
echo "tune_gpu rc=$? $SECONDS s"; grep -E "PASSED|FAILED" $O/tune_gpu.log
tar czf $O/logs.tgz -C $O --exclude logs.tgz . 2>/dev/null
