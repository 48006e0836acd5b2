#!/usr/bin/env bash
# On the GPU machine, over build-gpu/: re-tunes the shapes whose tables ship
# in cache/tuning/nvidia-h200/ (the five presets and the seed shape at
# E=8..64), each under its own time limit, into one cache root; the records
# come back in $OUT/records.tar (tools/bench/ship_tables.sh puts them in
# cache/tuning/). Logs in $OUT/tune_logs.tar.gz.
set -uo pipefail
b=build-gpu
out=${OUT:-out}
mkdir -p "$out"
logs=$(mktemp -d)
root=$(mktemp -d)
for spec in "--model qwen3-30b-a3b" "--model qwen3-235b-a22b" "--model mixtral-8x7b" \
  "--model deepseek-v2-lite" "--model olmoe-1b-7b" "--shape experts=8" "--shape experts=16" \
  "--shape experts=32" "--shape experts=64"; do
  name=$(echo "$spec" | tr -c 'a-z0-9\n' '_')
  start=$(date +%s)
  MOEJIT_CACHE_DIR=$root timeout ${TUNE_LIMIT:-100} ./$b/moejit warm --tune $spec > "$logs/tune$name.log" 2>&1
  echo "tune $spec rc=$? $(( $(date +%s) - start )) s" | tee -a "$logs/summary.txt"
done
tar -C "$root" -cf "$out/records.tar" tuning
tar czf "$out/tune_logs.tar.gz" -C "$logs" .
