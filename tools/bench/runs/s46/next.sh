#!/usr/bin/env bash
# Session 46, on whatever card comes. Bundle: the head with 150b5c2^ as
# moejit-base (bundle.sh), plus 6caa88e's CLI as build-gpu/moejit-6caa88e.
#   H200: the done-when figures on a cold card (card_and_done_when), then
#     the presets against 6caa88e (T=256..16384, as far as 200 s go), then
#     the swap256 rule against 150b5c2^ (one round).
#   Other cards: the swap256 rule against 150b5c2^ (2 rounds), then
#     tune_gpu_test (0052644's margins).
# Prediction for the rule (H100; session 40's sweep): DeepSeek-V3-like
# T=4096 -12%, k2 H4096 I1536 E16 T=1024 -6%, E=64 T=1024 0..-2%;
# Qwen3-Next-like T=8192 and the seed shape T=2048 unchanged.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
cases="k=8,hidden=7168,intermediate=2048,experts=256|4096;k=10,hidden=2048,intermediate=512,experts=512|8192;k=2,hidden=4096,intermediate=1536,experts=16|1024;seed|2048;k=8,hidden=2048,intermediate=768,experts=64|1024"
if grep -q H200 "$logs/smi.txt"; then
  OUT=$out/presets BASE=moejit-6caa88e TOKENS="256 512 1024 2048 4096 8192 16384" RUNS=10 \
    timeout 200 bash "$(dirname "$0")/../../presets_round.sh" > /dev/null 2>&1
  echo "presets rc=$? $SECONDS s" >> "$summary"
  cat "$out/presets/summary.txt" >> "$summary" 2>/dev/null
  RUNS=20 ROUNDS=1 CASE_LIMIT=60 ab_interleaved "moejit moejit-base" "$cases"
else
  RUNS=20 ROUNDS=2 CASE_LIMIT=120 ab_interleaved "moejit moejit-base" "$cases"
  gpu_suite tune tune_gpu_test 120
fi
