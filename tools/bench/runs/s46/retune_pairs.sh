#!/usr/bin/env bash
# Session 46, H100: the buckets where the re-tune with the tie margins
# (0052644) picked another pair than the shipped H100 table of the seed
# shape at E=8/16/32 (or than the heuristic, where the table had it), the
# two pairs in one `bench --config A --config B` process, both orders
# (ABBA), 50 runs. "pairs ..." lines: shape, order, bench's lines.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> "$summary"
s9=bm32_bn64_s9_swap:bm32_bn128_s9_swap s7=bm64_bn64_s7_swap:bm64_bn128_s7_swap
wss=bm128_bn128_s4_wss:bm128_bn256_s3_wss
cases=(
  "8|1 2|$s7|$s9"
  "8|64|bm64_bn64_s9_swap:bm64_bn128_s7_swap|$s7"
  "8|256|bm128_bn96_s5_wss:bm128_bn128_s6_wss|bm128_bn96_s5_wss:bm128_bn256_s3_wss"
  "16|32|$s9|$s7"
  "16|128 256|bm128_bn96_s4_wss:bm128_bn128_s6_wss|bm128_bn96_s5_wss:bm128_bn128_s6_wss"
  "32|256|$wss|bm128_bn64_s5_swap:bm128_bn128_s6_wss"
)
cache=$(mktemp -d)
for c in "${cases[@]}"; do
  IFS='|' read -r e ts old new <<< "$c"
  tokens=""
  for t in $ts; do tokens="$tokens --tokens $t"; done
  for order in "$old $new" "$new $old"; do
    set -- $order
    log=$logs/e${e}_${ts// /_}_$1.log
    MOEJIT_CACHE_DIR=$cache timeout 60 ./$b/moejit bench --shape experts=$e $tokens \
      --config "$1" --config "$2" --runs 50 > "$log" 2>&1
    echo "pairs E=$e T=$ts old=$old first=$1 rc=$?" >> "$summary"
    grep -E " (yes|NO) " "$log" >> "$summary"
  done
done
