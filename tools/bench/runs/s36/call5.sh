#!/usr/bin/env bash
# Session 36, call 5: ncu stall sampling of the routing kernels (seed shape)
# at T=128 (route_block), 2048 (route_wide, counting every assignment) and
# 8192 (route_count + route_wide over the counts).
set -u
out=${OUT:-out}
for t in 128 2048 8192; do
  OUT=$out/t$t T=$t KERNEL=moe_route COUNT=2 NCU_LIMIT=100 bash tools/bench/stall_round.sh > /dev/null 2>&1
  echo "T=$t"; cat $out/t$t/summary.txt
done
