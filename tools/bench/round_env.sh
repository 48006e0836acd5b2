# Sourced by the GPU-machine round scripts (ws_round.sh, ws_profile.sh,
# route_round.sh, ws_ab_round.sh, combine_round.sh, presets_round.sh):
# strict mode, the bundle folder ($b), $OUT ($out), a scratch folder for
# logs ($logs, packed by finish_round) and the summary,
# kept in $OUT from the start so that it comes back even if the call is
# cut short.
set -uo pipefail
b=build-gpu
out=${OUT:-out}
logs=$(mktemp -d)
mkdir -p "$out"
summary=$out/summary.txt
cp $b/commit.txt "$logs/"

# An ABBA A/B of `bench --tokens T ... --runs 30` for each T of $1 between
# build-gpu/moejit (cache $cache) and build-gpu/moejit-base ($cache_base),
# each call limited to $2 seconds: "ab BINARY T ms rel-err correct" lines.
ab_rounds() {
  local tokens="" t order bin c
  for t in $1; do tokens="$tokens --tokens $t"; done
  for order in "moejit moejit-base" "moejit-base moejit"; do
    for bin in $order; do
      c=$cache
      [ $bin = moejit-base ] && c=$cache_base
      MOEJIT_CACHE_DIR=$c timeout "$2" ./$b/$bin bench $tokens --runs 30 > "$logs/ab_$bin.log" 2>&1
      awk -v tag="ab $bin" '/^custom/ {print tag, $2, $4, $9, $10}' "$logs/ab_$bin.log" >> "$summary"
    done
  done
}

# Packs the logs into $OUT/logs.tar.gz and prints the summary.
finish_round() {
  tar czf "$out/logs.tar.gz" -C "$logs" .
  cat "$summary"
}
