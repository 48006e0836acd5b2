#!/usr/bin/env bash
# Session 37, call 5: on an H200 the done-when bench of the head (46050a9)
# on a cold card first; then GEMM1's weight boxes sent by warp 3 instead of
# thread 0 (which also claims and writes tickets), interleaved with the head.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
ab_interleaved "moejit moejit-w3" "seed|128 2048 4096 8192;k=8,hidden=2048,intermediate=768,experts=8|8192;k=8,hidden=4096,intermediate=1536,experts=128|2048"
