#!/usr/bin/env bash
# On the GPU machine: autotune some shapes into a cache root under $OUT
# (their tuning records come back with it), then, for the seed shape, the
# benchmark with the heuristic and with the tuned plan, and `bench --jit`
# (all cores, then 2 cores). Usage: tune.sh [MODEL...] (default: the seed).
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
git log --oneline -1 > "$out/commit.txt" 2>&1 || true
export MOEJIT_CACHE_DIR="$out/cache"
models=("${@:-qwen3-30b-a3b}")
args=()
for m in "${models[@]}"; do args+=(--model "$m"); done
/usr/bin/time -f "tune wall %e s" ./build/moejit warm --tune "${args[@]}" 2>&1 | tee "$out/tune.log"
# The records in one archive (the device tool brings back few, shallow files).
tar -C "$out/cache" -cf "$out/records.tar" tuning
[ "${SKIP_BENCH:-0}" = 1 ] && exit 0
./build/moejit bench --compare-heuristic --runs 30 --json "$out/bench_compare.json" 2>&1 |
  tee "$out/bench_compare.log"
MOEJIT_CACHE_DIR= ./build/moejit bench --jit 2>&1 | tee "$out/jit.log"
MOEJIT_CACHE_DIR= taskset -c 0,1 ./build/moejit bench --jit 2>&1 | tee "$out/jit_2cores.log"
rm -rf "$out/cache"
