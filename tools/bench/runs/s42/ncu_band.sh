#!/usr/bin/env bash
# Session 42: the GEMMs of the T=2048 and T=4096 band under ncu (planner's
# configs, seed shape): time, DRAM bytes read and written against the
# weights' 805 MB (GEMM1) and 403 MB (GEMM2), L2 hit rate, DRAM and tensor
# pipe activity. Do the GEMMs read their weights once, and how near the
# DRAM peak is the stream?
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader >> "$summary"
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second
for t in 2048 4096; do
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 100 ncu --clock-control none -k regex:"moe_(gemm|combine)" -c 6 \
    --metrics $metrics ./$b/moejit bench --tokens $t --runs 1 > "$logs/ncu_t$t.log" 2>&1
  echo "ncu T=$t rc=$?" >> "$summary"
  awk '/^  moe_/ {name=$1} /gpu__time|dram__bytes|lts__t_sector|dram__throughput|hmma|cycles_elapsed/ {print "  ", substr(name,1,64), $1, $(NF-1), $(NF)}' \
    "$logs/ncu_t$t.log" | tail -21 >> "$summary"
done
