#!/usr/bin/env bash
# Session 44, call 3: the tree with GEMM1's gathered x rows loaded
# evict_last (runs/s44/x_keep.diff, landed as this commit), bundled against
# b601fd9 (`bash tools/bench/bundle.sh /tmp/moejit-b601fd9`). On an H200 the
# done-when figures first; then the suite with debug pipelines, the three
# sanitizers on a ws and a swap-AB config, and an A/B against b601fd9.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
landing_checks 300
ab_interleaved "moejit moejit-base" "seed|1024 2048 4096 8192;k=8,hidden=4096,intermediate=1536,experts=128|2048"
grep "^mean" "$out/ab/summary.txt" >> "$summary"
