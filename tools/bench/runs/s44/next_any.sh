#!/usr/bin/env bash
# For the next session, on any card: the presets that session 44 did not
# time against the x rows' evict_last (1726cdf), the head against b601fd9,
# interleaved (2 rounds, 20 runs). Bundle: `bash tools/bench/bundle.sh
# $(bash tools/bench/build_base.sh b601fd9 | tail -1)`; carry build-gpu.
# The risk: with few experts and many rows each (mixtral, T=4096: 33.5 MB
# of distinct x against a 50 MB L2), rows kept evict_last could push out
# the weights that an expert's row tiles share. Prediction: mixtral and
# deepseek-v2-lite within +-1%, olmoe like the seed shape (-0.5..-1%).
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
RUNS=20 ROUNDS=2 CASE_LIMIT=90 ab_interleaved "moejit moejit-base" \
  "k=2,hidden=4096,intermediate=14336,experts=8|1024 4096 8192;k=6,hidden=2048,intermediate=1408,experts=64|1024 2048 4096 8192;k=8,hidden=2048,intermediate=1024,experts=64|1024 2048 4096 8192;k=8,hidden=4096,intermediate=1536,experts=128|1024 4096 8192"
