#!/usr/bin/env bash
# Issue 10, steps 1-2 on the GPU machine, over build-gpu/ (tools/bench/
# bundle.sh BASE): the GPU suite on the chained (PDL) launch path; each
# warp-specialised config checked against the GPU reference at small and
# large T (and under memcheck / racecheck / synccheck on small cases); ncu
# readings of each config's GEMMs at T=8192; the configs timed interleaved
# with the reference pair (REF_CONFIG); an ABBA A/B of the whole
# call against build-gpu/moejit-base. Logs in $OUT/logs.tar.gz, summary last.
#   [REF_CONFIG=G1:G2] [CHECK_SHAPES="S ..."] [TIME_TOKENS="T ..."] \
#     bash tools/bench/ws_round.sh "G1:G2 ..."   (configs to time)
source "$(dirname "$0")/round_env.sh"
trap finish_round EXIT # the logs come back even when a step runs past the call's limit
configs=${1:?usage: ws_round.sh "G1:G2 ..."}
ref=${REF_CONFIG:-bm192_bn96_s4_wgmma_f1:bm192_bn192_s4_wgmma_f1}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv \
  > "$logs/smi.txt" 2>&1
cache=$(mktemp -d)
export MOEJIT_CACHE_DIR=$cache

# 1. Correctness of each config alone (a failing compile or check is named).
for c in $configs; do
  # The seed shape, few experts, and K and N tails (H, I not multiples of 64
  # or of the tile).
  for shape in ${CHECK_SHAPES:-experts=128 experts=8 hidden=1000,intermediate=200,experts=16}; do
    log="$logs/check_${c//:/-}_${shape//[=,]/-}.log"
    timeout 120 ./$b/moejit bench --tokens 1 --tokens 100 --tokens 8192 --shape $shape \
      --config "$c" --runs 3 > "$log" 2>&1
    echo "check $c $shape rc=$? $(awk '/^custom/ {printf "T%s:%s:%s:%s ", $2, $4, $9, $10}' "$log")" \
      >> "$summary"
  done
done
# 2. Timing, interleaved with the reference pair.
cfgargs="--config $ref"
for c in $configs; do cfgargs="$cfgargs --config $c"; done
tokens=""
for t in ${TIME_TOKENS:-128 2048 8192}; do tokens="$tokens --tokens $t"; done
timeout 200 ./$b/moejit bench $tokens $cfgargs --runs 30 \
  > "$logs/time_e128.log" 2>&1
echo "time e128 rc=$?" >> "$summary"
awk '/^custom/ {print $2, $3, $4, $9, $10, $NF}' "$logs/time_e128.log" >> "$summary"
timeout 100 ./$b/moejit bench --tokens 8192 --shape experts=8 $cfgargs --runs 30 \
  > "$logs/time_e8.log" 2>&1
echo "time e8 rc=$?" >> "$summary"
awk '/^custom/ {print $2, $3, $4, $9, $10, $NF}' "$logs/time_e8.log" >> "$summary"

metrics=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,dram__throughput.avg.pct_of_peak_sustained_elapsed
for c in $configs; do
  timeout 90 ncu --clock-control none -k regex:"moe_gemm" -c 2 --metrics $metrics \
    ./$b/moejit bench --tokens 8192 --config "$c" --runs 1 > "$logs/ncu_t8192_${c//:/-}.log" 2>&1
  echo "ncu T=8192 $c rc=$?" >> "$summary"
  awk '/^  moe_/ {name=$1} /gpu__time|hmma|cycles_elapsed|dram__throughput/ {print "  ", substr(name,1,70), $1, $NF}' \
    "$logs/ncu_t8192_${c//:/-}.log" >> "$summary"
done

# 3. The GPU suite on the chained launch path (the planner's kernels).
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 200 ./$b/runtime_gpu_test > "$logs/runtime_gpu_test.log" 2>&1
echo "runtime_gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$logs/runtime_gpu_test.log" |
  tr '\n' ' ')" >> "$summary"

# Sanitizers last: the slowest steps.
first=${configs%% *}
[ -x $b/tensor_map_cost ] && ./$b/tensor_map_cost >> "$summary" 2>&1
config_sanitizers "$first"

# 4. The chained launch path against the base build, planner's kernels.
if [ -x $b/moejit-base ]; then
  cache_base=$(mktemp -d)
  for order in "moejit moejit-base" "moejit-base moejit"; do
    for bin in $order; do
      c=$cache
      [ $bin = moejit-base ] && c=$cache_base
      MOEJIT_CACHE_DIR=$c timeout 60 ./$b/$bin bench --tokens 1 --tokens 128 --tokens 8192 --runs 50 \
        > "$logs/ab_$bin.log" 2>&1
      awk -v tag="ab $bin" '/^custom/ {print tag, $2, $4, $9}' "$logs/ab_$bin.log" >> "$summary"
    done
  done
fi
