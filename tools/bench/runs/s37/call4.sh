#!/usr/bin/env bash
# Session 37, call 4: GEMM2 on GEMM1's written rows (build-gpu/moejit),
# the same code with signals_rows never set (moejit-off: the cost of the
# code alone) and 46050a9 (moejit-base), interleaved; then where the time
# goes at T=8192 (E=128 and E=8) for moejit and moejit-base.
# On an H200 the done-when bench of 46050a9 on a cold card first.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit-base nomixtral
ab_interleaved "moejit moejit-off moejit-base" "seed|128 2048 8192;k=8,hidden=2048,intermediate=768,experts=8|8192;k=8,hidden=4096,intermediate=1536,experts=128|2048"
st="--stages gemm1 --stages routing+gemm1 --stages routing+gemm1+gemm2 --stages gemm2"
for bin in moejit moejit-base; do
  for shape in "" "--shape k=8,hidden=2048,intermediate=768,experts=8"; do
    MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/$bin bench $shape --tokens 8192 $st --runs 20 \
      > "$logs/stages_$bin.log" 2>&1
    echo "stages $bin $shape rc=$?" >> "$summary"
    grep -E '^custom' "$logs/stages_$bin.log" >> "$summary"
  done
done
