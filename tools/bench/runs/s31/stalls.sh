#!/usr/bin/env bash
# Session 31, device call E: where the tickets cost at T=8192. ncu's
# warp-state sampling (SourceCounters, WarpStateStats) of both GEMMs at
# T=8192 (seed shape) for fb7f89e (moejit-base) and claims_switch.diff
# (moejit-switch: fixed walk above 16 waves, tickets always), SASS source
# pages as CSV, compared off the GPU.
set -uo pipefail
b=build-gpu; O=$OUT
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader
for bin in moejit-base moejit-switch; do
  export MOEJIT_CACHE_DIR=$(mktemp -d)
  ./$b/$bin bench --tokens 8192 --runs 1 > $O/warm_$bin.log 2>&1
  timeout 200 ncu --clock-control none -k regex:moe_gemm -c 2 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    -o $O/stall_$bin ./$b/$bin bench --tokens 8192 --runs 1 > $O/ncu_$bin.log 2>&1
  echo "$bin ncu rc=$? $SECONDS s"
  ncu -i $O/stall_$bin.ncu-rep --page source --csv --print-source sass > $O/sass_$bin.csv 2>&1
  ncu -i $O/stall_$bin.ncu-rep --page details > $O/details_$bin.txt 2>&1
  grep -E "^  moe_|Duration|Warp Cycles Per Issued|Elapsed Cycles" $O/details_$bin.txt
done
cd $O && tar czf logs.tgz *.csv *.txt *.log && rm -f *.csv
