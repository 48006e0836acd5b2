#!/usr/bin/env bash
# Session 38, call 1: on an H200 the done-when bench of the head (42e2eb2)
# on a cold card first; then the ws consumers' warpgroup lag (warpgroup 2
# starts its first main loop once warpgroup 1 has issued 2 or 4 k-tiles, by
# a named barrier: wg_lag_nb2.diff, wg_lag_nb4.diff) interleaved with the
# head, and the sanitizers on the lag-2 build.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
ab_interleaved "moejit moejit-nb2 moejit-nb4" "seed|128 2048 4096 8192;k=8,hidden=2048,intermediate=768,experts=8|8192;k=8,hidden=4096,intermediate=1536,experts=128|2048;k=2,hidden=4096,intermediate=14336,experts=8|4096"
for tool in memcheck synccheck; do
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 compute-sanitizer --tool $tool --print-limit 5 ./$b/moejit-nb2 bench \
    --tokens 37 --tokens 300 --config bm128_bn128_s4_ws:bm128_bn256_s3_wss --runs 1 > "$logs/$tool.log" 2>&1
  echo "$tool nb2 rc=$? $(grep -E 'ERROR SUMMARY' "$logs/$tool.log")" >> "$summary"
done
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 120 compute-sanitizer --tool racecheck --print-limit 5 ./$b/moejit-nb2 bench \
  --tokens 5 --tokens 70 --shape hidden=256,intermediate=128,experts=8 \
  --config bm128_bn128_s4_ws:bm128_bn256_s3_wss --runs 1 > "$logs/racecheck.log" 2>&1
echo "racecheck nb2 rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$logs/racecheck.log" | tr '\n' ' ')" >> "$summary"
