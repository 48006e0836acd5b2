#!/usr/bin/env bash
# Session 45, call 1, any card. Bundle: a289a51 as moejit, b601fd9 (no L2
# policy) as moejit-base, fa7f2a9 (x rows evict_last at every T) as
# moejit-always. a289a51 keeps the rows evict_last only while x <= L2/3.
# Prediction: where x > L2/3 (qwen3-235b and mixtral at T=4096, 8192; olmoe,
# deepseek-v2-lite and the seed shape at 8192) moejit runs like
# moejit-base, i.e. qwen3-235b T=4096 ~2% under moejit-always; where x <=
# L2/3 (seed and qwen3-235b at T=2048) like moejit-always.
# Then the sanitizers on the wss config and the GPU suite in what is left.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
RUNS=20 ROUNDS=3 CASE_LIMIT=90 ab_interleaved "moejit moejit-always moejit-base" \
  "k=8,hidden=4096,intermediate=1536,experts=128|2048 4096 8192;k=2,hidden=4096,intermediate=14336,experts=8|4096 8192;k=8,hidden=2048,intermediate=1024,experts=64|4096 8192;k=6,hidden=2048,intermediate=1408,experts=64|4096 8192;seed|2048 8192"
config_sanitizers bm128_bn128_s4_wss:bm128_bn256_s3_wss
left=$((575 - SECONDS))
[ $left -gt 30 ] && gpu_suite runtime runtime_gpu_test $left
