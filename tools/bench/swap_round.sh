#!/usr/bin/env bash
# Issue 10 step 4 on the GPU machine, over build-gpu/ (tools/bench/bundle.sh):
# the GPU suite (with the swap-AB plans in every combine mode), each swap-AB
# config checked at small and odd shapes, the configs timed interleaved and
# against the planner's kernels (ABA) at T=128..4096, ncu of the first
# config's GEMMs, then the sanitizers on it. Logs in $OUT/logs.tar.gz.
#   [TIME_TOKENS="T ..."] [NCU_TOKENS="T ..."] bash tools/bench/swap_round.sh "G1:G2 ..."
source "$(dirname "$0")/round_env.sh"
configs=${1:?usage: swap_round.sh "G1:G2 ..."}
first=${configs%% *}
export MOEJIT_CACHE_DIR=$(mktemp -d)

# 1. The GPU suite: the planner's kernels, and SwapAbMatchesReference.
timeout 240 ./$b/runtime_gpu_test > "$logs/runtime_gpu_test.log" 2>&1
echo "runtime_gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$logs/runtime_gpu_test.log" |
  tr '\n' ' ')" >> "$summary"
grep -E '^\[  FAILED  \]|Failure|rror' "$logs/runtime_gpu_test.log" | head -20 >> "$summary"

# 2. Timing: the configs interleaved, between two runs of the planner's plan.
tokens=""
for t in ${TIME_TOKENS:-128 256 512 1024 2048 4096}; do tokens="$tokens --tokens $t"; done
cfgargs=""
for c in $configs; do cfgargs="$cfgargs --config $c"; done
for pass in plan swap plan; do
  if [ $pass = plan ]; then args=""; else args=$cfgargs; fi
  timeout 150 ./$b/moejit bench $tokens $args --runs 30 > "$logs/time_$pass.log" 2>&1
  echo "time $pass rc=$?" >> "$summary"
  awk '/^custom/ {print $2, $3, $4, $9, $10, $NF}' "$logs/time_$pass.log" >> "$summary"
done

# 3. ncu of the first config's GEMMs.
metrics=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,dram__throughput.avg.pct_of_peak_sustained_elapsed
for t in ${NCU_TOKENS:-128 2048}; do
  timeout 60 ncu --clock-control none -k regex:"moe_gemm" -c 2 --metrics $metrics \
    ./$b/moejit bench --tokens $t --config "$first" --runs 1 > "$logs/ncu_t$t.log" 2>&1
  echo "ncu T=$t $first rc=$?" >> "$summary"
  awk '/^  moe_/ {name=$1} /gpu__time|hmma|cycles_elapsed|dram__throughput/ {print "  ", substr(name,1,70), $1, $NF}' \
    "$logs/ncu_t$t.log" >> "$summary"
done

# 4. Sanitizers on the first config.
config_sanitizers "$first"
finish_round
