#!/usr/bin/env bash
# ncu view of the planner's kernels at T=8192 (seed shape): time, SOL, stalls.
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
export MOEJIT_CACHE_DIR=$(mktemp -d)
./build/moejit warm --shape e=128 > /dev/null
ncu --clock-control none -k regex:"moe_(route|gemm|combine)" -c 6 \
  --section SpeedOfLight --section WarpStateStats --section Occupancy \
  --section MemoryWorkloadAnalysis --section LaunchStats \
  ./build/moejit bench --tokens 8192 --runs 1 > "$out/ncu_full.log" 2>&1
grep -E "^  moe_|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Achieved Occupancy|Stall|Warp Cycles Per Issued|Issued Warp|Registers Per|Waves Per SM|Block Limit" "$out/ncu_full.log" | grep -v "^    ---" | head -120
