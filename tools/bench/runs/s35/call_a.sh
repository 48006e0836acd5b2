#!/usr/bin/env bash
# Session 35, device call A (`carry: ["build-gpu"]` after runs/s34/prep.sh;
# about 8 minutes):
#  1. the 13 seed cases on a cold card with moejit-quick (its GEMMs are
#     main's: the first figure of tiles by claim, f7fdcdd, on whatever card
#     came), then the headline in fast mode;
#  2. main's swap-AB shapes (warp_uniform, 36ba5e1);
#  3. quick-routing's whole GPU suite, then memcheck and racecheck on its
#     routing at small T.
source "$(dirname "$0")/../../round_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader \
  >> "$summary" 2>&1
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 120 ./$b/moejit-quick bench --json "$out/bench.json" \
  > "$logs/bench.log" 2>&1
echo "seed bench rc=$? $SECONDS s" >> "$summary"
grep -E ' (yes|NO) ' "$logs/bench.log" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/moejit-quick bench --combine fast \
  --combine deterministic --tokens 8192 --runs 30 > "$logs/fast.log" 2>&1
echo "fast rc=$? $SECONDS s" >> "$summary"
grep -E " (yes|NO) " "$logs/fast.log" >> "$summary"
gpu_suite swap_main runtime_gpu_test 120 --gtest_filter='Shapes/SwapAbMatchesReference.*'
gpu_suite quick runtime_gpu_test_quick 300
for tool in memcheck racecheck; do
  timeout 80 compute-sanitizer --tool $tool --print-limit 5 ./$b/moejit-quick bench \
    --shape hidden=256,intermediate=128,experts=64 --tokens 5 --tokens 300 --runs 1 \
    > "$logs/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/$tool.log" | tr '\n' ' ')" \
    >> "$summary"
done
finish_round
