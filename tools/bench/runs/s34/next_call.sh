#!/usr/bin/env bash
# The next device call (`carry: ["build-gpu"]` after runs/s34/prep.sh;
# about 8 minutes):
#  1. main's swap-AB shapes (warp_uniform, 36ba5e1, ran on the rest of the
#     GPU suite only);
#  2. quick-routing (runs/s34/quick-routing.patch: routing at
#     --Ofast-compile=min, route_wide count batch 8, one-width 32/64-row
#     swap-AB): its whole GPU suite, then memcheck and racecheck on its
#     routing at small T;
#  3. main against quick-routing interleaved at the seed T=1..8192, E=8
#     T=128 and qwen3-235b T=128 (session 33's A/B of the same kernels,
#     H100: within noise but T=1 +0.3 us).
# If 1-3 hold: land the patch (git apply; its CPU suite passed, session 34).
source "$(dirname "$0")/../../round_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader \
  >> "$summary" 2>&1
gpu_suite swap_main runtime_gpu_test 150 --gtest_filter='Shapes/SwapAbMatchesReference.*'
gpu_suite quick runtime_gpu_test_quick 330
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --print-limit 5 ./$b/moejit-quick bench \
    --shape hidden=256,intermediate=128,experts=64 --tokens 5 --tokens 300 --runs 1 \
    > "$logs/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/$tool.log" | tr '\n' ' ')" \
    >> "$summary"
done
ab_interleaved "moejit moejit-quick" \
  "seed|1 16 128 512 1024 2048 8192;experts=8|128;k=8,hidden=4096,intermediate=1536,experts=128|128"
finish_round
