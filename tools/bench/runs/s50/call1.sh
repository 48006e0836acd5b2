#!/usr/bin/env bash
# Session 50, call 1, on whatever card comes (bundle: the head, plus
# 6caa88e's CLI as build-gpu/moejit-6caa88e).
#   H200: the done-when figures on a cold card first (card_and_done_when),
#     then the presets against 6caa88e at T=256..16384 (as far as 220 s go).
#   Every card: runs/s49/verify2.sh (the Python op's GPU tests after
#     session 49's review fixes, and the four checks of the cli_gpu CTest),
#     its summary under $OUT/verify2.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
if grep -q H200 "$logs/smi.txt"; then
  OUT=$out/presets BASE=moejit-6caa88e TOKENS="256 512 1024 2048 4096 8192 16384" RUNS=10 \
    timeout 220 bash "$(dirname "$0")/../../presets_round.sh" > /dev/null 2>&1
  echo "presets rc=$? $SECONDS s" >> "$summary"
  cat "$out/presets/summary.txt" >> "$summary" 2>/dev/null
fi
OUT=$out/verify2 bash "$(dirname "$0")/../s49/verify2.sh" > /dev/null 2>&1
echo "verify2 rc=$? $SECONDS s" >> "$summary"
cat "$out/verify2/summary.txt" >> "$summary"
