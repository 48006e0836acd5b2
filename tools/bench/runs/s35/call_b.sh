#!/usr/bin/env bash
# Session 35, device call B, right after call A on the same machine (about
# 6 minutes): main against quick-routing interleaved at the seed T=1..8192,
# E=8 T=128 and qwen3-235b T=128, then mixtral-8x7b at T=1024..8192.
source "$(dirname "$0")/../../round_env.sh"
ab_interleaved "moejit moejit-quick" \
  "seed|1 16 128 512 1024 2048 8192;experts=8|128;k=8,hidden=4096,intermediate=1536,experts=128|128"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 ./$b/moejit-quick bench \
  --shape k=2,hidden=4096,intermediate=14336,experts=8 --tokens 1024 --tokens 2048 \
  --tokens 4096 --tokens 8192 --runs 20 > "$logs/mixtral.log" 2>&1
echo "mixtral rc=$? $SECONDS s" >> "$summary"
grep -E " (yes|NO) " "$logs/mixtral.log" >> "$summary"
finish_round
