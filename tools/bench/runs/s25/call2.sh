#!/usr/bin/env bash
# s25 call 2: new tables vs old tables (same code), then presets vs 6caa88e.
set -uo pipefail
O=$OUT
nvidia-smi --query-gpu=temperature.gpu,clocks.sm --format=csv,noheader
OUT=$O/ab BINS="moejit moejit-old" RUNS=20 ROUNDS=2 CASE_LIMIT=60 CASES="k=8,hidden=2048,intermediate=1024,experts=64|1024;k=6,hidden=2048,intermediate=1408,experts=64|1024 2048;experts=16|256 512 1024 2048;experts=64|1024 2048;experts=32|512;experts=8|32 64 128 256;k=8,hidden=4096,intermediate=1536,experts=128|1 2048;k=2,hidden=4096,intermediate=14336,experts=8|128 512 2048" bash tools/bench/multi_ab.sh
echo "ab done $SECONDS s"
nvidia-smi --query-gpu=temperature.gpu,clocks.sm --format=csv,noheader
OUT=$O/presets bash tools/bench/presets_round.sh
echo "presets done $SECONDS s"
