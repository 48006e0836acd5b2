#!/usr/bin/env bash
# Several builds of `moejit` on the GPU machine, interleaved: every binary
# named in BINS (files in build-gpu/, default "moejit moejit-base") runs
# each case, in the order BINS then reversed, ROUNDS times (default 2), so
# that heat weighs on all. A case is "SHAPE|T T ..." (SHAPE as for bench
# --shape; "seed" for the seed shape); CASES holds them separated by ';'.
# Each binary keeps its own cache. BENCH_ARGS: more bench options for
# every case (e.g. "--combine fast"). Summary: "ab BINARY SHAPE T ms
# rel-err correct" lines, then per case and binary the mean of its rounds
# and its ratio to the first binary's ("mean BINARY SHAPE T ms ratio
# xROUNDS", ab_means.awk); logs in $OUT/logs.tar.gz (one per binary, round
# and case: the whole bench table of each).
source "$(dirname "$0")/round_env.sh"
bins=(${BINS:-moejit moejit-base})
IFS=';' read -ra cases <<< "${CASES:-seed|1 128 512 2048 8192}"
declare -A caches
for bin in "${bins[@]}"; do caches[$bin]=$(mktemp -d); done
reversed=()
for ((i = ${#bins[@]} - 1; i >= 0; i--)); do reversed+=("${bins[i]}"); done
for ((r = 0; r < ${ROUNDS:-2}; r++)); do
  order=("${bins[@]}")
  [ $((r % 2)) = 1 ] && order=("${reversed[@]}")
  for ci in "${!cases[@]}"; do
    c=${cases[ci]}
    shape=${c%%|*} tokens=""
    for t in ${c#*|}; do tokens="$tokens --tokens $t"; done
    shape_arg=""
    [ "$shape" = seed ] || shape_arg="--shape $shape"
    for bin in "${order[@]}"; do
      MOEJIT_CACHE_DIR=${caches[$bin]} timeout ${CASE_LIMIT:-90} ./$b/$bin bench $shape_arg \
        $tokens --runs ${RUNS:-30} ${BENCH_ARGS:-} > "$logs/ab_${bin}_${r}_${ci}.log" 2>&1
      awk -v tag="ab $bin $shape" '/^custom/ {print tag, $2, $4, $9, $10}' \
        "$logs/ab_${bin}_${r}_${ci}.log" >> "$summary"
    done
  done
done
awk -v bins="${bins[*]}" -f "$(dirname "$0")/ab_means.awk" "$summary" > "$logs/means.txt"
cat "$logs/means.txt" >> "$summary"
finish_round
