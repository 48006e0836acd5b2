#!/usr/bin/env bash
# On the GPU machine: autotune shapes into the cache root $MOEJIT_CACHE_DIR
# (default $OUT/cache; records come back in $OUT/records.tar), then the seed
# benchmark with the tuned plans and the heuristic's interleaved, and
# `bench --jit` (all cores, then 2 cores).
# Usage: tune.sh [warm options] (default: --model qwen3-30b-a3b), e.g.
#   tune.sh --model all      tune.sh --shape experts=8 --shape experts=16
# SKIP_BENCH=1 stops after tuning.
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
git log --oneline -1 > "$out/commit.txt" 2>&1 || true
export MOEJIT_CACHE_DIR="${MOEJIT_CACHE_DIR:-$out/cache}"
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--model qwen3-30b-a3b)
/usr/bin/time -f "tune wall %e s" ./build/moejit warm --tune "${args[@]}" 2>&1 | tee "$out/tune.log"
# The records in one archive (the device tool brings back few, shallow files).
tar -C "$MOEJIT_CACHE_DIR" -cf "$out/records.tar" tuning
[ "${SKIP_BENCH:-0}" = 1 ] && exit 0
./build/moejit bench --compare-heuristic --runs 30 --json "$out/bench_compare.json" 2>&1 |
  tee "$out/bench_compare.log"
MOEJIT_CACHE_DIR= ./build/moejit bench --jit 2>&1 | tee "$out/jit.log"
MOEJIT_CACHE_DIR= taskset -c 0,1 ./build/moejit bench --jit 2>&1 | tee "$out/jit_2cores.log"
[ "$MOEJIT_CACHE_DIR" = "$out/cache" ] && rm -rf "$out/cache"
