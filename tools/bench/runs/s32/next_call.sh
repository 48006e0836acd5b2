#!/usr/bin/env bash
# Session 32's prepared device call (none was lent in session 32; run it
# first thing in the next one, `carry: ["build-gpu"]`, about 8 minutes):
#  1. the 13 seed cases on a cold card and the headline in fast mode, on
#     15f034e (moejit-lead: f7fdcdd's kernels), the issue's done-when run;
#  2. is the T=8192 loss of tiles by claim the workspace layout?
#     f7fdcdd put the claim counters between num_tiles and sorted_ids,
#     which moved sorted_ids, sorted_weights, h and the partial buffer 256
#     bytes later; moejit-tail (runs/s32/claims_last.diff) puts them after
#     the partial buffer, every other offset as in a6b17b8 (moejit-base).
#     Interleaved, seed T=8192 and 2048, E=8 T=8192.
source "$(dirname "$0")/../../round_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader \
  >> "$summary" 2>&1
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 120 ./$b/moejit-lead bench --json "$out/bench.json" \
  > "$logs/bench.log" 2>&1
echo "seed bench rc=$? $SECONDS s" >> "$summary"
grep -E ' (yes|NO) ' "$logs/bench.log" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/moejit-lead bench --combine fast \
  --combine deterministic --tokens 8192 --runs 30 > "$logs/fast.log" 2>&1
echo "fast rc=$? $SECONDS s" >> "$summary"
grep -E ' (yes|NO) ' "$logs/fast.log" >> "$summary"
OUT=$logs/ab BINS="moejit-base moejit-lead moejit-tail" RUNS=20 ROUNDS=2 CASE_LIMIT=60 \
  CASES="seed|8192 2048;experts=8|8192" bash "$(dirname "$0")/../../multi_ab.sh" > /dev/null
echo "ab $SECONDS s" >> "$summary"
grep "^ab" "$logs/ab/summary.txt" >> "$summary"
finish_round
