#!/usr/bin/env bash
# Session 47, on whatever card comes (bundle: the head with 10b7ebd as
# moejit-base, 6caa88e's CLI as moejit-6caa88e).
#   H200: s46/next.sh (the done-when figures on a cold card, the presets
#     against 6caa88e, one round of the swap256 rule).
#   Other cards: the two H100 table buckets shipped in session 47 (seed
#     shape E=16 T=32, E=32 T=256) against the heuristic through
#     `bench --compare-heuristic` (the shipped plan as get() picks it),
#     both T of each shape in one process, 50 runs, twice. Prediction:
#     -1..-2% at E=16 T=32, -3..-6% at E=32 T=256; the other T equal.
here=$(dirname "$0")
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  exec bash "$here/../s46/next.sh"
fi
source "$here/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> "$summary"
for round in 1 2; do
  for c in "16 32 64" "32 256 512"; do
    set -- $c
    log=$logs/shipped_e$1_r$round.log
    MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/moejit bench --shape experts=$1 --tokens $2 \
      --tokens $3 --compare-heuristic --runs 50 > "$log" 2>&1
    echo "shipped E=$1 round $round rc=$?" >> "$summary"
    grep -E " (yes|NO) " "$log" >> "$summary"
  done
done
