#!/usr/bin/env bash
# The five presets at every power-of-two T from 1 to 16384 against another
# build (build-gpu/moejit-base, e.g. main 6caa88e: tools/bench/build_base.sh
# then bundle.sh BASE; BASE=NAME names another binary of build-gpu), on the
# GPU machine. Per preset the two binaries run
# one after the other, the first alternating from preset to preset so that
# heat weighs on both; each has its own cache. RUNS timed runs per case
# (default 15); PRESETS (names) and TOKENS narrow the round. Logs in
# $OUT/logs.tar.gz, summary in $OUT/summary.txt: "preset T binary ms
# %floor correct".
source "$(dirname "$0")/round_env.sh"
presets=(
  "qwen3-30b-a3b k=8,hidden=2048,intermediate=768,experts=128"
  "qwen3-235b-a22b k=8,hidden=4096,intermediate=1536,experts=128"
  "mixtral-8x7b k=2,hidden=4096,intermediate=14336,experts=8"
  "deepseek-v2-lite k=6,hidden=2048,intermediate=1408,experts=64"
  "olmoe-1b-7b k=8,hidden=2048,intermediate=1024,experts=64"
)
tokens=""
for t in ${TOKENS:-1 2 4 8 16 32 64 128 256 512 1024 2048 4096 8192 16384}; do
  tokens="$tokens --tokens $t"
done
base=${BASE:-moejit-base}
cache=$(mktemp -d) cache_base=$(mktemp -d)
i=0
for entry in "${presets[@]}"; do
  name=${entry%% *} shape=${entry#* }
  [ -z "${PRESETS:-}" ] || [[ " $PRESETS " == *" $name "* ]] || continue
  order="moejit $base"
  [ $((i % 2)) = 1 ] && order="$base moejit"
  for bin in $order; do
    c=$cache
    [ $bin = "$base" ] && c=$cache_base
    MOEJIT_CACHE_DIR=$c timeout 150 ./$b/$bin bench --shape "$shape" $tokens --runs "${RUNS:-15}" \
      > "$logs/${name}_$bin.log" 2>&1
    echo "$name $bin rc=$?" >> "$summary"
    awk -v tag="$name" -v bin="$bin" '/^custom/ {print tag, $2, bin, $4, $8, $10}' \
      "$logs/${name}_$bin.log" >> "$summary"
  done
  i=$((i + 1))
done
finish_round
