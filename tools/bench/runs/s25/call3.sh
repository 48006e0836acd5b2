#!/usr/bin/env bash
# s25 call 3: the swap-AB GEMM2's staged row stores (working tree) against
# a416904 (build-gpu/moejit-base): GPU suites, sanitizers, A/B, ncu.
set -uo pipefail
O=$OUT; b=build-gpu
nvidia-smi --query-gpu=temperature.gpu,clocks.sm --format=csv,noheader
timeout 240 ./$b/runtime_gpu_test --gtest_filter='Shapes/SwapAbMatchesReference.*:Runtime.BitwiseRepeatable:Seed/*:Combine.*' > $O/gpu_test.log 2>&1
echo "gpu_test rc=$? $SECONDS s"; tail -3 $O/gpu_test.log
C="--shape k=8,hidden=512,intermediate=256,experts=16 --tokens 300 --runs 1 --config bm64_bn64_s7_swap:bm64_bn128_s7_swap --config bm256_bn64_s4_swap:bm256_bn128_s4_swap"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 150 compute-sanitizer --tool racecheck ./$b/moejit bench $C > $O/racecheck.log 2>&1
echo "racecheck rc=$? $SECONDS s"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|yes|NO" $O/racecheck.log | tail -4
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 100 compute-sanitizer --tool memcheck ./$b/moejit bench $C > $O/memcheck.log 2>&1
echo "memcheck rc=$? $SECONDS s"; grep -E "ERROR SUMMARY" $O/memcheck.log
OUT=$O/ab BINS="moejit moejit-base" RUNS=20 ROUNDS=2 CASE_LIMIT=60 CASES="seed|512 2048;k=8,hidden=4096,intermediate=1536,experts=128|2048;k=6,hidden=2048,intermediate=1408,experts=64|2048;k=8,hidden=2048,intermediate=1024,experts=64|1024;experts=32|512;experts=64|1024;k=2,hidden=4096,intermediate=14336,experts=8|512" bash tools/bench/multi_ab.sh > /dev/null
echo "ab $SECONDS s"
OUT=$O/abcfg BINS="moejit moejit-base" RUNS=20 ROUNDS=2 CASE_LIMIT=60 BENCH_ARGS="--config bm256_bn64_s4_swap:bm256_bn128_s4_swap" CASES="seed|1024 2048 3072" bash tools/bench/multi_ab.sh > /dev/null
echo "abcfg $SECONDS s"
for bin in moejit moejit-base; do
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 ncu --clock-control none -k regex:"moe_gemm" -c 4 \
    --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    ./$b/$bin bench --tokens 2048 --runs 1 --config bm256_bn64_s4_swap:bm256_bn128_s4_swap > $O/ncu_$bin.log 2>&1
  echo "ncu $bin"; grep -E "^  moe_gemm|duration|tensor|dram__" $O/ncu_$bin.log | head -16
done
echo "end $SECONDS s"
cat $O/ab/summary.txt $O/abcfg/summary.txt | grep "^ab"
