#!/usr/bin/env bash
# Session 35, second blocked-partial call (about 9 minutes): blk3 = partial
# in groups of 64 sorted rows (runtime_gpu_test_blk3, moejit-blk3; the
# routing writes -1 for unrouted assignments and the combine reads sorted
# rows only); blk2 = column tiles T*k rows apart (/tmp blk2.diff, the first
# call's layout with that combine); base = moejit-quick (head f9d77e1).
# Suite without the swap-AB shapes (kernels unchanged; ~100 s), sanitizers,
# odd-H checks on wss GEMM2 configs, ncu of GEMM2 and the combine at T=8192,
# then base and blk3 interleaved (device time allowed no more).
source "$(dirname "$0")/../../round_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader \
  >> "$summary" 2>&1
gpu_suite blk3 runtime_gpu_test_blk3 150 --gtest_filter='-Shapes/SwapAbMatchesReference.*'
for tool in memcheck; do
  timeout 60 compute-sanitizer --tool $tool --print-limit 5 ./$b/moejit-blk3 bench --tokens 37 \
    --tokens 300 --config bm128_bn128_s4_wss:bm128_bn256_s3_wss --runs 1 > "$logs/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY' "$logs/$tool.log")" >> "$summary"
done
timeout 60 compute-sanitizer --tool racecheck --print-limit 5 ./$b/moejit-blk3 bench --tokens 5 \
  --tokens 70 --shape hidden=256,intermediate=128,experts=8 \
  --config bm128_bn128_s4_ws:bm128_bn256_s3_wss --runs 1 > "$logs/racecheck.log" 2>&1
echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$logs/racecheck.log" | tr '\n' ' ')" \
  >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 ./$b/moejit-blk3 bench \
  --shape k=2,hidden=1032,intermediate=584,experts=8 --tokens 1 --tokens 77 --tokens 2000 \
  --config bm128_bn64_s4_wss:bm128_bn192_s4_wss --config bm128_bn64_s4_wss:bm128_bn256_s3_wss \
  --combine deterministic --combine batch-invariant --combine fast --runs 3 > "$logs/oddh.log" 2>&1
echo "odd H rc=$?" >> "$summary"
grep -E " (yes|NO) " "$logs/memcheck.log" "$logs/oddh.log" | sed 's/^[^:]*://' >> "$summary"
for bin in moejit-quick moejit-blk2 moejit-blk3; do
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ncu --clock-control none -k regex:"moe_(gemm2|combine)" \
    --launch-skip 4 -c 2 --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    ./$b/$bin bench --tokens 8192 --runs 3 > "$logs/ncu_$bin.log" 2>&1
  echo "ncu $bin rc=$?" >> "$summary"
  grep -E "^  moe_|duration|tensor_op|dram__" "$logs/ncu_$bin.log" | sed 's/  */ /g' >> "$summary"
done
cp "$summary" "$logs/summary_before_ab.txt"
OUT=$out/ab BINS="moejit-quick moejit-blk3" RUNS=20 ROUNDS=2 CASE_LIMIT=40 \
  CASES="seed|1024 8192;k=2,hidden=4096,intermediate=14336,experts=8|4096" \
  bash "$(dirname "$0")/../../multi_ab.sh" > /dev/null
grep "^ab" "$out/ab/summary.txt" >> "$summary"
finish_round
