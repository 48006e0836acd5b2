#!/usr/bin/env bash
# Session 37, call 2: on an H200 the done-when bench of the head (46050a9)
# on a cold card first; then the prefetch depth (STAGES against 2 x STAGES
# k-tiles) A/B with 501442b, and the head's stage split at T=128 / 2048.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
ab_interleaved "moejit moejit-d2 moejit-base" "seed|128 512 2048 4096 8192"
st="--stages routing --stages routing+gemm1 --stages gemm1 --stages routing+gemm1+gemm2 --stages gemm2 --stages combine"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 100 ./$b/moejit bench --tokens 128 --tokens 2048 $st --runs 30 > "$logs/stages.log" 2>&1
echo "stages rc=$?" >> "$summary"
grep -E '^custom' "$logs/stages.log" >> "$summary"
