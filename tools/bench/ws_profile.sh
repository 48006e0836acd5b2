#!/usr/bin/env bash
# Issue 10 step 2 on the GPU machine, over build-gpu/: the host cost of a
# tensor-map encode, racecheck of a warp-specialised config on a small
# shape, ncu readings (duration, tensor pipe, SM clock, DRAM) of every
# kernel at T=8192 and of the GEMMs at T=128, the configs timed interleaved
# at more token counts, and a tuning run of the seed shape with the new
# candidates. Logs in $OUT/logs.tar.gz, records in it too; summary last.
#   bash tools/bench/ws_profile.sh WS_CONFIG "OTHER_CONFIGS ..."
source "$(dirname "$0")/round_env.sh"
ws=${1:?usage: ws_profile.sh WS_CONFIG "G1:G2 ..."}
others=${2:-}
export MOEJIT_CACHE_DIR=$(mktemp -d)
./$b/tensor_map_cost >> "$summary" 2>&1
timeout 120 compute-sanitizer --tool racecheck --print-limit 5 ./$b/moejit bench --tokens 5 \
  --tokens 70 --shape hidden=256,intermediate=128,experts=8 --config "$ws" --runs 1 \
  > "$logs/racecheck.log" 2>&1
echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$logs/racecheck.log" | tr '\n' ' ')" \
  >> "$summary"
metrics=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum.per_second,sm__throughput.avg.pct_of_peak_sustained_elapsed
for t in 8192 128; do
  for cfg in "$ws" planner; do
    cfgarg="--config $cfg"
    [ $cfg = planner ] && cfgarg=""
    timeout 150 ncu --clock-control none -k regex:"moe_(route|gemm|combine)" -c 12 --metrics $metrics \
      ./$b/moejit bench --tokens $t $cfgarg --runs 1 > "$logs/ncu_t${t}_${cfg//:/-}.log" 2>&1
    echo "ncu T=$t $cfg rc=$?" >> "$summary"
    awk '/^  moe_/ {name=$1} /gpu__time_duration|hmma|cycles_elapsed|dram__throughput|dram__bytes|sm__throughput/ {print "  ", substr(name,1,60), $1, $(NF)}' \
      "$logs/ncu_t${t}_${cfg//:/-}.log" | tail -36 >> "$summary"
  done
done
cfgargs="--config $ws"
for c in $others; do cfgargs="$cfgargs --config $c"; done
timeout 200 ./$b/moejit bench --tokens 1024 --tokens 4096 --tokens 16384 --tokens 32768 $cfgargs \
  --runs 20 > "$logs/time_more.log" 2>&1
echo "time rc=$?" >> "$summary"
awk '/^custom/ {print $2, $3, $4, $9, $10, $NF}' "$logs/time_more.log" >> "$summary"
tune_cache=$(mktemp -d)
MOEJIT_CACHE_DIR=$tune_cache timeout 150 /usr/bin/time -f "tune wall %e s" ./$b/moejit warm --tune \
  --model qwen3-30b-a3b > "$logs/tune.log" 2>&1
echo "tune rc=$? $(tail -2 "$logs/tune.log" | tr '\n' ' ')" >> "$summary"
tar -C "$tune_cache" -cf "$logs/records.tar" tuning 2>/dev/null
finish_round
