#!/usr/bin/env bash
# Session 38, call 3: the seed table with the 256-row swap-AB pair at
# T=2048 and GEMM2 wss bn256 s3 at T=1024 (build-gpu/moejit-swapt,
# runs/s38/seed_swap256_table.diff) interleaved with the head's table; on an
# H200 the head's done-when figures first.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
ab_interleaved "moejit moejit-swapt" "seed|512 1024 1536 2048 3072 4096"
