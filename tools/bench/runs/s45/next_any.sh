#!/usr/bin/env bash
# For the next session, on any card (on an H200 the done-when figures
# first): the heuristic's 256-row swap-AB rule (150b5c2, narrowed after
# it; bundle the head) against the commit before it (150b5c2^), on shapes that no
# table of the card holds, interleaved (2 rounds, 20 runs); then
# tune_gpu_test (0052644's tuner margins). Bundle: `bash
# tools/bench/bundle.sh $(bash tools/bench/build_base.sh 150b5c2^ | tail
# -1)`; carry build-gpu.
# Prediction (H100; session 40's sweep and tables): DeepSeek-V3-like
# T=4096 -12%, k2 H4096 I1536 E16 T=1024 -6%, E=64 T=1024 0..-2% (the
# H100 tuner called it a tie); Qwen3-Next-like T=8192 and the seed shape
# T=2048 unchanged (the rule leaves them out). On an H200 the seed shape
# and E=64 run their tables (unchanged, so equal).
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
RUNS=20 ROUNDS=2 CASE_LIMIT=120 ab_interleaved "moejit moejit-base" \
  "k=8,hidden=7168,intermediate=2048,experts=256|4096;k=10,hidden=2048,intermediate=512,experts=512|8192;k=2,hidden=4096,intermediate=1536,experts=16|1024;seed|2048;k=8,hidden=2048,intermediate=768,experts=64|1024"
gpu_suite tune tune_gpu_test 120
