#!/usr/bin/env bash
# Session 33's prepared device call for the next session (`carry:
# ["build-gpu"]`, about 8 minutes; build-gpu/commit.txt names the builds):
#  1. the swap-AB shapes on main's kernels (36ba5e1, warp_uniform landed
#     on the rest of the GPU suite only: runtime_gpu_test_uni);
#  2. the quick-routing branch (b6fcf88: routing at --Ofast-compile=min,
#     route_wide count batch 8, one-width 32/64-row swap-AB): its whole GPU
#     suite (runtime_gpu_test_quick2), then memcheck and racecheck on its
#     routing at small T;
#  3. main against quick2 interleaved at the seed T=1..8192, E=8 T=128 and
#     qwen3-235b T=128. Session 33's A/B of the same kernels (H100): within
#     noise but T=1 +0.3 us. If 1-3 hold: merge quick-routing.
source "$(dirname "$0")/../../round_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader \
  >> "$summary" 2>&1
gpu_suite swap_main runtime_gpu_test_uni 150 --gtest_filter='Shapes/SwapAbMatchesReference.*'
gpu_suite quick2 runtime_gpu_test_quick2 330
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --print-limit 5 ./$b/moejit-quick2 bench \
    --shape hidden=256,intermediate=128,experts=64 --tokens 5 --tokens 300 --runs 1 \
    > "$logs/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/$tool.log" | tr '\n' ' ')" \
    >> "$summary"
done
OUT=$out/ab BINS="moejit-main moejit-quick2" RUNS=30 ROUNDS=2 CASE_LIMIT=60 \
  CASES="seed|1 16 128 512 1024 2048 8192;experts=8|128;k=8,hidden=4096,intermediate=1536,experts=128|128" \
  bash "$(dirname "$0")/../../multi_ab.sh" > /dev/null
echo "ab $SECONDS s" >> "$summary"
grep "^ab" "$out/ab/summary.txt" >> "$summary"
finish_round
