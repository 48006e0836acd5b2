#!/usr/bin/env bash
# Session 40, call 2. On an H200: session 39's call 3 (the done-when
# figures on a cold card, the T=2048 GEMM pairs, the seed shape and E=8
# re-tuned), then the seven other shipped shapes re-tuned. On any other
# card (an H100): the eight shapes other than the seed shape (whose H100
# tuning kept the heuristic in all 17 buckets, session 38) tuned on that
# card, to see what an H100 user loses to the heuristic. Records in
# $OUT/tune*/records.tar.
set -uo pipefail
O=$OUT
others="--shape experts=16;--shape experts=32;--shape experts=64;--model deepseek-v2-lite;--model olmoe-1b-7b;--model qwen3-235b-a22b;--model mixtral-8x7b"
if nvidia-smi --query-gpu=name --format=csv | grep -q H200; then
  bash tools/bench/runs/s39/call3.sh
  OUT=$O/tune2 TUNE_LIMIT=80 MIXTRAL_LIMIT=150 TUNE_SPECS="$others" bash tools/bench/tune_all.sh
else
  nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader
  OUT=$O/tune TUNE_LIMIT=80 MIXTRAL_LIMIT=150 TUNE_SPECS="--shape experts=8;$others" \
    bash tools/bench/tune_all.sh
fi
