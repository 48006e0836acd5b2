#!/usr/bin/env bash
# s26 call 1: why the swap-AB GEMM2 streams slower than GEMM1 at T=128
# (ncu), the routing kernels at --Ofast-compile=min (build-gpu/moejit)
# against HEAD (moejit-base), and 64-step token widths for 256-row swap
# tiles (moejit-wide).
set -uo pipefail
O=$OUT; b=build-gpu
nvidia-smi --query-gpu=temperature.gpu,clocks.sm --format=csv,noheader
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,launch__grid_size,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
nc() { # name, bench args
  local n=$1; shift
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 ncu --clock-control none -k regex:"moe_gemm" -c 2 --metrics $M \
    ./$b/moejit-base bench --runs 1 "$@" > $O/ncu_$n.log 2>&1
  echo "ncu $n rc=$? $SECONDS s"; grep -E "^  moe_gemm|duration|dram__|lts__|cycles_active|grid_size|tensor" $O/ncu_$n.log | sed 's/  */ /g' | head -24
}
nc seed128 --tokens 128
nc swapHI128 --tokens 128 --shape k=8,hidden=768,intermediate=2048,experts=128 --config bm32_bn64_s9_swap:bm32_bn128_s9_swap
nc seed128_s11 --tokens 128 --config bm32_bn64_s9_swap:bm32_bn128_s11_swap
nc seed128_s6 --tokens 128 --config bm32_bn64_s9_swap:bm32_bn128_s6_swap
OUT=$O/ab BINS="moejit moejit-base moejit-wide" RUNS=20 ROUNDS=2 CASE_LIMIT=60 CASES="seed|1 16 128 2048 8192;k=8,hidden=4096,intermediate=1536,experts=128|2048;k=6,hidden=2048,intermediate=1408,experts=64|2048;k=8,hidden=2048,intermediate=1024,experts=64|1024;experts=32|512" bash tools/bench/multi_ab.sh > /dev/null
echo "ab $SECONDS s"
OUT=$O/abcfg BINS="moejit-base moejit-wide" RUNS=20 ROUNDS=2 CASE_LIMIT=60 BENCH_ARGS="--config bm256_bn64_s4_swap:bm256_bn128_s4_swap" CASES="seed|1024 2048 3072" bash tools/bench/multi_ab.sh > /dev/null
echo "abcfg $SECONDS s"
cat $O/ab/summary.txt $O/abcfg/summary.txt | grep "^ab"
