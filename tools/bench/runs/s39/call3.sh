#!/usr/bin/env bash
# Session 39, call 3: only for an H200 (any other card: the card's name,
# nothing else). The done-when figures of the head (2ad1e5b) on a cold
# card, the T=2048 GEMM pairs interleaved (the table's, swap128 GEMM1 with
# the table's GEMM2, the swap256 pair), then the seed shape and its E=8
# form re-tuned (records in $OUT/records.tar).
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
grep -q H200 "$logs/smi.txt" || exit 0
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 ./$b/moejit bench --tokens 2048 --runs 30 \
  --config bm128_bn128_s4_wss:bm128_bn256_s3_wss --config bm128_bn64_s7_swap:bm128_bn256_s3_wss \
  --config bm256_bn64_s4_swap:bm256_bn128_s4_swap > "$logs/pairs2048.log" 2>&1
echo "pairs2048 rc=$?" >> "$summary"
grep -E '^custom' "$logs/pairs2048.log" >> "$summary"
OUT=$out/tune TUNE_SPECS="--model qwen3-30b-a3b;--shape experts=8" bash tools/bench/tune_all.sh \
  >> "$summary" 2>&1
