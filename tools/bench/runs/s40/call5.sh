#!/usr/bin/env bash
# Session 40, call 5 (any card; not run: no device time was left): the
# tuner that times its finalists over three routing draws
# (runs/s40/tuner_three_draws.diff: `git apply` it, build, bundle.sh). tune_gpu_test, then the seed shape at E=16 and E=32
# re-tuned (on an H100: predicted to keep the heuristic at E=16 T=512 and
# E=32 T=1024, where one-draw picks lost in `bench`, and still to take
# wss bn96 : wss bn128 at E=16 T=256 and the swap256 pair at E=32 T=512).
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader >> "$summary"
gpu_suite tune tune_gpu_test 150
for e in 16 32; do
  start=$SECONDS
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 70 ./$b/moejit warm --tune --shape experts=$e \
    > "$logs/tune_e$e.log" 2>&1
  echo "tune experts=$e rc=$? $((SECONDS - start)) s" >> "$summary"
  grep -E "^ +[0-9]+ bm" "$logs/tune_e$e.log" >> "$summary"
done
