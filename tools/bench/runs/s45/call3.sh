#!/usr/bin/env bash
# Session 45, call 3, any card: the tuner with tie margins (81aff27: each
# finalist timed twice, ABC CBA; a finalist must beat a preferred plan by
# the widest spread of one plan's two timings, at least 1%).
# tune_gpu_test, then the seed shape at E=16 re-tuned. Prediction: E=16
# T=512 and 1024 keep the heuristic (session 40's picks there gained 4.8%
# and 1.8% by the tuner and nothing in bench's ABAB); T=256 still takes
# wss bn96 : wss bn128 s6 (13%).
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader >> "$summary"
gpu_suite tune tune_gpu_test 120
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 ./$b/moejit warm --tune --shape experts=16 \
  > "$logs/tune_e16.log" 2>&1
echo "tune experts=16 rc=$? $SECONDS s" >> "$summary"
grep -E "^ +[0-9]+ bm|tie margin" "$logs/tune_e16.log" >> "$summary"
