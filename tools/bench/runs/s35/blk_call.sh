#!/usr/bin/env bash
# Session 35: GEMM2 writes partial in sorted order, blocked by its column
# tiles, one bulk copy per warpgroup (blk = head + the change, built here as
# moejit-blk / runtime_gpu_test_blk; base = moejit-quick, the head f9d77e1).
# About 9 minutes: blk's GPU suite, sanitizers on wss GEMM2 configs, ncu of
# GEMM2 and the combine at T=8192 for both, then base and blk interleaved.
source "$(dirname "$0")/../../round_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader \
  >> "$summary" 2>&1
gpu_suite blk runtime_gpu_test_blk 300
small="--shape hidden=256,intermediate=128,experts=8"
cfg=bm128_bn128_s4_ws:bm128_bn256_s3_wss
for tool in memcheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --print-limit 5 ./$b/moejit-blk bench --tokens 37 \
    --tokens 300 --config bm128_bn128_s4_wss:bm128_bn256_s3_wss --runs 1 > "$logs/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY' "$logs/$tool.log")" >> "$summary"
done
timeout 60 compute-sanitizer --tool racecheck --print-limit 5 ./$b/moejit-blk bench --tokens 5 \
  --tokens 70 $small --config $cfg --runs 1 > "$logs/racecheck.log" 2>&1
echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$logs/racecheck.log" | tr '\n' ' ')" \
  >> "$summary"
grep -E " (yes|NO) " "$logs/memcheck.log" "$logs/racecheck.log" | head -8 >> "$summary"
for bin in moejit-quick moejit-blk; do
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 ncu --clock-control none -k regex:"moe_(gemm2|combine)" \
    --launch-skip 4 -c 4 --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    ./$b/$bin bench --tokens 8192 --runs 3 > "$logs/ncu_$bin.log" 2>&1
  echo "ncu $bin rc=$?" >> "$summary"
  grep -E "moe_|duration|tensor_op|dram__" "$logs/ncu_$bin.log" | sed 's/  */ /g' >> "$summary"
done
ab_interleaved "moejit-quick moejit-blk" \
  "seed|1024 2048 4096 8192 16384;experts=8|8192;k=2,hidden=4096,intermediate=14336,experts=8|4096"
BENCH_ARGS="--combine batch-invariant" OUT=$out/ab_inv BINS="moejit-quick moejit-blk" RUNS=20 \
  ROUNDS=1 CASE_LIMIT=60 CASES="seed|8192" bash "$(dirname "$0")/../../multi_ab.sh" > /dev/null
grep "^ab" "$out/ab_inv/summary.txt" | sed 's/^ab/ab-inv/' >> "$summary"
finish_round
