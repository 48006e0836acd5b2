#!/usr/bin/env bash
# On the GPU machine, over build-gpu/: re-tunes the shapes whose tables ship
# in cache/tuning/nvidia-h200/ (the five presets and the seed shape at
# E=8..64), each under its own time limit (TUNE_LIMIT seconds, mixtral-8x7b
# MIXTRAL_LIMIT: its large-T buckets are slow), into one cache root; the
# records come back in $OUT/records.tar (PRESETS_ONLY=1: the five presets only; TUNE_SPECS: a ';'-separated list), packed again after each shape so
# that a call cut short keeps what was tuned (copy each record over its
# table in cache/tuning/nvidia-h200/). Logs in $OUT/tune_logs.tar.gz.
set -uo pipefail
b=build-gpu
out=${OUT:-out}
mkdir -p "$out"
logs=$(mktemp -d)
root=$(mktemp -d)
specs=("--model qwen3-30b-a3b" "--model mixtral-8x7b" "--model qwen3-235b-a22b"
  "--model deepseek-v2-lite" "--model olmoe-1b-7b" "--shape experts=8" "--shape experts=16"
  "--shape experts=32" "--shape experts=64")
[ "${PRESETS_ONLY:-0}" = 1 ] && specs=("${specs[@]:0:5}")
# TUNE_SPECS="--model a;--shape experts=8": these instead.
[ -n "${TUNE_SPECS:-}" ] && IFS=';' read -r -a specs <<< "$TUNE_SPECS"
for spec in "${specs[@]}"; do
  name=$(echo "$spec" | tr -c 'a-z0-9\n' '_')
  limit=${TUNE_LIMIT:-100}
  [ "$spec" = "--model mixtral-8x7b" ] && limit=${MIXTRAL_LIMIT:-240}
  start=$(date +%s)
  MOEJIT_CACHE_DIR=$root timeout $limit ./$b/moejit warm --tune $spec > "$logs/tune$name.log" 2>&1
  echo "tune $spec rc=$? $(( $(date +%s) - start )) s" | tee -a "$logs/summary.txt"
  grep -E "^bucket|bucket [0-9]+" "$logs/tune$name.log" | tail -20 >> "$logs/summary.txt"
  [ -d "$root/tuning" ] && tar -C "$root" -cf "$out/records.tar" tuning
  tar czf "$out/tune_logs.tar.gz" -C "$logs" .
done
cat "$logs/summary.txt"
