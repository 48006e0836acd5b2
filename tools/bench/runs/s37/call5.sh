#!/usr/bin/env bash
# Session 37, call 5: on an H200 the done-when bench of the head (46050a9)
# on a cold card first; then GEMM1's weight boxes sent by warp 3 instead of
# thread 0 (which also claims and writes tickets), interleaved with the head.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > "$logs/smi.txt" 2>&1
cat "$logs/smi.txt" >> "$summary"
if grep -q H200 "$logs/smi.txt"; then
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 150 ./$b/moejit bench --json "$out/bench.json" > "$logs/bench.log" 2>&1
  echo "seed bench (head) rc=$?" >> "$summary"
  grep -E ' (yes|NO) ' "$logs/bench.log" >> "$summary"
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/moejit bench --combine fast --tokens 8192 --runs 30 > "$logs/fast.log" 2>&1
  grep -E " (yes|NO) " "$logs/fast.log" >> "$summary"
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/moejit bench --shape k=2,hidden=4096,intermediate=14336,experts=8 --tokens 4096 --runs 20 > "$logs/mixtral.log" 2>&1
  grep -E " (yes|NO) " "$logs/mixtral.log" >> "$summary"
fi
ab_interleaved "moejit moejit-w3" "seed|128 2048 4096 8192;k=8,hidden=2048,intermediate=768,experts=8|8192;k=8,hidden=4096,intermediate=1536,experts=128|2048"
