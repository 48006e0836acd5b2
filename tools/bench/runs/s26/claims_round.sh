#!/usr/bin/env bash
# Persistent GEMMs taking their tiles by claims (runs/s26/tile_claims.diff
# applied and built into build-gpu/moejit) against the commit it applies
# to (build-gpu/moejit-base, `bash tools/bench/bundle.sh BASE`): the rerun
# test first (a broken pipeline hangs: short timeout), then the A/B, ncu at
# T=128 and 8192 (SM active min/avg/max: the spread the claims remove), the
# GPU suites. Written in session 26, whose device was taken away before it
# ran; ~7 min.
set -uo pipefail
O=$OUT; b=build-gpu
nvidia-smi --query-gpu=temperature.gpu,clocks.sm --format=csv,noheader
timeout 120 ./$b/runtime_gpu_test --gtest_filter='Runtime.PersistentGemmsRerun*:Runtime.BitwiseRepeatable' > $O/gpu_quick.log 2>&1
echo "quick rc=$? $SECONDS s"; grep -E "OK|FAILED|Failure" $O/gpu_quick.log | head
OUT=$O/ab BINS="moejit moejit-base" RUNS=20 ROUNDS=2 CASE_LIMIT=60 CASES="seed|1 16 128 256 512 1024 2048 4096 8192;experts=8|8192;k=8,hidden=4096,intermediate=1536,experts=128|2048 8192;k=2,hidden=4096,intermediate=14336,experts=8|4096" bash tools/bench/multi_ab.sh > /dev/null
echo "ab $SECONDS s"
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
for bin in moejit moejit-base; do for T in 128 8192; do
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 ncu --clock-control none -k regex:"moe_gemm" -c 2 --metrics $M \
    ./$b/$bin bench --tokens $T --runs 1 > $O/ncu_${bin}_$T.log 2>&1
  echo "ncu $bin $T"; grep -E "^  moe_gemm|duration|dram__|cycles_active|tensor" $O/ncu_${bin}_$T.log | sed 's/  */ /g'
done; done
echo "ncu $SECONDS s"
timeout 200 ./$b/runtime_gpu_test --gtest_filter='Shapes/SwapAbMatchesReference.*:Runtime.*:Combine.*:*Tails*' > $O/gpu_tests.log 2>&1
echo "gpu_tests rc=$? $SECONDS s"; grep -E "PASSED|FAILED|Failure" $O/gpu_tests.log | head
cat $O/ab/summary.txt | grep "^ab"
