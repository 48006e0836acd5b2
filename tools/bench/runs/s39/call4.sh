#!/usr/bin/env bash
# Session 39, call 4: runs/s39/overlap_n128.diff (ws kernels with wgmma
# N <= 128 keep two accumulator sets and issue the next tile's first
# k-tile before the last tile's epilogue) built as build-gpu/moejit, the
# head 8bfefaa as moejit-base. On an H200 the head's done-when figures
# first. Then four GEMM pairs interleaved in each bench, the two builds alternating (ABBA):
# C0 the table's pair (no kernel of it changes), C1 GEMM1 bn64 (N=128,
# overlapped in moejit), C2 GEMM2 bn128 (overlapped), C3 both; then the
# sanitizers on the overlapped pair.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit-base nomixtral
configs="--config bm128_bn128_s4_wss:bm128_bn256_s3_wss --config bm128_bn64_s6_wss:bm128_bn256_s3_wss
  --config bm128_bn128_s4_wss:bm128_bn128_s6_wss --config bm128_bn64_s6_wss:bm128_bn128_s6_wss"
declare -A caches=([moejit]=$(mktemp -d) [moejit-base]=$(mktemp -d))
for order in "moejit moejit-base" "moejit-base moejit"; do
  for bin in $order; do
    log=$logs/pairs_${bin}_$SECONDS.log
    MOEJIT_CACHE_DIR=${caches[$bin]} timeout 120 ./$b/$bin bench --tokens 2048 \
      --tokens 8192 --runs 30 $configs > "$log" 2>&1
    echo "pairs $bin rc=$? $SECONDS s" >> "$summary"
    grep -E '^custom' "$log" | sed "s/^/ab $bin /" >> "$summary"
  done
done
config_sanitizers bm128_bn64_s6_wss:bm128_bn128_s6_wss
