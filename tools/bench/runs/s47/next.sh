#!/usr/bin/env bash
# Session 47, on whatever card comes (bundle: the head with 10b7ebd as
# moejit-base, 6caa88e's CLI as moejit-6caa88e).
#   H200: s46/next.sh (the done-when figures on a cold card, the presets
#     against 6caa88e, one round of the swap256 rule).
#   Other cards: does `bench` favour a slot? (Session 47's paired run:
#     at E=8 and E=16 T=256 the pair timed second ran 3-5% faster in both
#     orders.) The same pair twice in one process (--config X --config X),
#     at those two cases and the seed shape at T=256, 50 runs, twice; then
#     three copies. Prediction: equal within 1% if bench has no slot bias.
here=$(dirname "$0")
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  exec bash "$here/../s46/next.sh"
fi
source "$here/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> "$summary"
wss_e8=bm128_bn96_s5_wss:bm128_bn128_s6_wss
wss_e16=bm128_bn96_s4_wss:bm128_bn128_s6_wss
seed=bm128_bn128_s4_wss:bm128_bn256_s3_wss
for c in "8 $wss_e8 2" "16 $wss_e16 2" "128 $seed 2" "8 $wss_e8 3" "16 $wss_e16 3"; do
  set -- $c
  configs=""
  for i in $(seq $3); do configs="$configs --config $2"; done
  for round in 1 2; do
    log=$logs/slots_e$1_x$3_r$round.log
    MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/moejit bench --shape experts=$1 --tokens 256 \
      $configs --runs 50 > "$log" 2>&1
    echo "slots E=$1 copies $3 round $round rc=$?" >> "$summary"
    grep -E " (yes|NO) " "$log" >> "$summary"
  done
done
