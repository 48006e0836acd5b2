#!/usr/bin/env bash
# Probe builds (each missing one part of a kernel, say) against the head: multi_ab.sh over
# BINS, then per binary an ncu reading of the GEMMs (time, tensor pipe,
# DRAM) at each T of NCU_T (seed shape). Summary lines "ncu BINARY T
# kernel us tensor% dram%".
here=$(dirname "$0")
bash "$here/multi_ab.sh" > /dev/null
source "$here/round_env.sh"
for bin in ${BINS:-moejit moejit-base}; do
  cache=$(mktemp -d)
  for t in ${NCU_T:-2048 8192}; do
    MOEJIT_CACHE_DIR=$cache ./$b/$bin bench --tokens $t --runs 1 > /dev/null 2>&1
    MOEJIT_CACHE_DIR=$cache timeout 120 ncu --clock-control none -k regex:"moe_gemm" -c 4 \
      --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed \
      ./$b/$bin bench --tokens $t --runs 1 > "$logs/ncu_${bin}_$t.log" 2>&1
    awk -v tag="ncu $bin $t" '/^  moe_gemm/ {k=$1} /dram__throughput/ {r=$NF}
      /gpu__time_duration/ {d=$NF $(NF-1)} /hmma_cycles_active/ {print tag, k, d, $NF, r}' \
      "$logs/ncu_${bin}_$t.log" >> "$summary"
  done
done
finish_round
