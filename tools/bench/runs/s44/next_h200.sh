#!/usr/bin/env bash
# For the next session's first H200 (kind nvidia-h200; on another card it
# only names the card). Bundle: the head, with 6caa88e as the base
# (`bash tools/bench/bundle.sh $(bash tools/bench/build_base.sh 6caa88e |
# tail -1)`; carry build-gpu).
#   1. The done-when figures on a cold card: the 13 seed cases, fast mode
#      at T=8192, mixtral T=4096 (card_and_done_when).
#   2. T=2048 and 4096: the swap256 pair against the wss pair the heuristic
#      runs, ABBA. Is the tail tiles' tensor work what the H200 pays for
#      at T=2048? Its tensor pipe was 78% active there (session 39).
#   3. The presets against 6caa88e (presets_round.sh), T=256..16384, as
#      far as the call's limit lets it go.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
grep -q H200 "$logs/smi.txt" || exit 0
swap=bm256_bn64_s4_swap:bm256_bn128_s4_swap wss=bm128_bn128_s4_wss:bm128_bn256_s3_wss
cache=$(mktemp -d)
for pair in "$wss $swap" "$swap $wss"; do
  set -- $pair
  MOEJIT_CACHE_DIR=$cache timeout 90 ./$b/moejit bench --tokens 2048 --tokens 4096 \
    --config "$1" --config "$2" --runs 30 > "$logs/pairs_$1.log" 2>&1
  echo "pairs rc=$?" >> "$summary"
  grep -E " (yes|NO) " "$logs/pairs_$1.log" >> "$summary"
done
OUT=$out/presets TOKENS="256 512 1024 2048 4096 8192 16384" RUNS=10 \
  timeout 240 bash "$(dirname "$0")/../../presets_round.sh" > /dev/null 2>&1
echo "presets rc=$?" >> "$summary"
cat "$out/presets/summary.txt" >> "$summary" 2>/dev/null
