#!/usr/bin/env bash
# Session 36, call 8: GEMM2's blocked partial stored with an L2 evict_last
# policy and dropped from L2 by the combine once read (discard.global.L2:
# never written back), runs/s36/l2_keep_partial.diff (moejit) against
# 97e65fd (moejit-base): whole calls checked, and the call without its
# combine (--stages routing+gemm1+gemm2), interleaved ABBA, 30 runs.
nvidia-smi --query-gpu=name --format=csv,noheader
OUT=${OUT:-out} BINS="moejit moejit-base" ROUNDS=2 CASE_LIMIT=120 \
  BENCH_ARGS="--stages routing+gemm1+gemm2" \
  CASES="seed|512 1024 2048 3072 4096 8192;k=8,hidden=4096,intermediate=1536,experts=128|1024 2048;k=6,hidden=2048,intermediate=1408,experts=64|1024 2048" \
  bash tools/bench/multi_ab.sh
