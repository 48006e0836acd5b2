#!/usr/bin/env bash
# Session 40, call 1 (any card; made for the H100 that every call since
# session 26 got): the baseline, main 6caa88e, rerun on the same
# card as the head, interleaved. build-gpu/moejit = the head,
# build-gpu/moejit-base = 6caa88e (build_base.sh 6caa88e; bundle.sh BASE).
# 1. The 13 seed cases, 20 runs x 2 rounds, ABBA (multi_ab.sh).
# 2. The five presets at every power-of-two T from 1 to 16384
#    (presets_round.sh, 15 runs).
set -uo pipefail
O=$OUT
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader
OUT=$O/seed BINS="moejit moejit-base" RUNS=20 ROUNDS=2 CASE_LIMIT=120 \
  CASES="seed|128 256 512 1024 2048 4096 8192 16384 32768;experts=8|8192;experts=16|8192;experts=32|8192;experts=64|8192" \
  bash tools/bench/multi_ab.sh
echo "seed done $SECONDS s"
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader
OUT=$O/presets bash tools/bench/presets_round.sh
echo "presets done $SECONDS s"
