#!/usr/bin/env bash
# Session 45, call 2, any card. Call 1 found a289a51's evict_normal policy
# (where x > L2/3) 4-11% slower than no hint. Bundle: 33c7bc8 as moejit
# (no hint there: a uniform branch per stage between hinted and plain
# cp.async), a289a51 + runs/s45/unchanged_policy.diff as moejit-unchanged
# (an evict_unchanged policy there), fa7f2a9 (evict_last at every T) as
# moejit-always, b601fd9 (no hint) as moejit-base.
# Prediction: moejit like moejit-base where x > L2/3 (qwen3-235b T=4096
# 2.56, not 2.84) and like moejit-always where x <= L2/3 (qwen3-235b
# T=2048 1.79); moejit-unchanged unknown.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
RUNS=20 ROUNDS=3 CASE_LIMIT=90 ab_interleaved "moejit moejit-unchanged moejit-always moejit-base" \
  "k=8,hidden=4096,intermediate=1536,experts=128|2048 4096 8192;k=2,hidden=4096,intermediate=14336,experts=8|4096 8192;k=8,hidden=2048,intermediate=1024,experts=64|8192;k=6,hidden=2048,intermediate=1408,experts=64|8192;seed|2048 8192"
config_sanitizers bm128_bn128_s4_wss:bm128_bn256_s3_wss
config_sanitizers bm32_bn64_s9_swap:bm64_bn128_s7_swap
left=$((580 - SECONDS))
[ $left -gt 30 ] && gpu_suite runtime runtime_gpu_test $left
