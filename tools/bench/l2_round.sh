#!/usr/bin/env bash
# Where the warp-specialised GEMMs lose their tensor-pipe time, on the GPU
# machine over build-gpu/: the GPU test suites first (runtime_gpu_test,
# tune_gpu_test), then ncu readings of the planner's GEMMs at T=8192, 2048
# and 128 (seed shape): tensor pipe, SM clock, DRAM, L2 throughput and the
# bytes L2 hands the SMs, plus the warp-state section (stall reasons).
# Logs in $OUT/logs.tar.gz; summary last.
source "$(dirname "$0")/round_env.sh"
export MOEJIT_CACHE_DIR=$(mktemp -d)
timeout 200 ./$b/runtime_gpu_test > "$logs/runtime_gpu_test.log" 2>&1
echo "runtime_gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$logs/runtime_gpu_test.log" | tr '\n' ' ')" >> "$summary"
timeout 150 ./$b/tune_gpu_test > "$logs/tune_gpu_test.log" 2>&1
echo "tune_gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$logs/tune_gpu_test.log" | tr '\n' ' ')" >> "$summary"
metrics=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum.per_second,l1tex__m_xbar2l1tex_read_bytes.sum.per_second,lts__t_sector_hit_rate.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct,smsp__warp_issue_stalled_membar_per_warp_active.pct,smsp__warp_issue_stalled_sleeping_per_warp_active.pct,smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct
for t in 8192 2048 128; do
  timeout 120 ncu --clock-control none -k regex:"moe_gemm" -c 2 --metrics $metrics \
    ./$b/moejit bench --tokens $t --runs 1 > "$logs/ncu_t$t.log" 2>&1
  echo "ncu T=$t rc=$?" >> "$summary"
  awk '/^  moe_/ {name=$1} /gpu__|sm__|dram__|lts__|l1tex__|smsp__/ {print "  ", substr(name,1,64), $1, $(NF-1), $(NF)}' \
    "$logs/ncu_t$t.log" >> "$summary"
done
finish_round
