#!/usr/bin/env bash
# Session 50, call 2, on whatever card comes (bundle: 990c47f, plus
# 6caa88e's CLI as build-gpu/moejit-6caa88e).
#   H200: call1.sh (the done-when figures on a cold card, the presets
#     against 6caa88e, verify2.sh).
#   Other cards: the Python op's tests on the GPU with 990c47f's fallback
#     warning (given at trace time, once).
if nvidia-smi --query-gpu=name --format=csv | grep -q H200; then
  exec bash "$(dirname "$0")/call1.sh"
fi
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) PYTHONPATH=$PWD/$b/py timeout 170 python3 tests/python/test_torch.py \
  > "$logs/python_torch.log" 2>&1
echo "test_torch.py rc=$? $SECONDS s $(tail -1 "$logs/python_torch.log")" >> "$summary"
grep -E "fall_back_under|FAIL|ERROR" "$logs/python_torch.log" | head -5 >> "$summary"
