#!/usr/bin/env bash
# Times tile-config variants of the seed shape in one device call.
# Logs under $OUT.
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
export MOEJIT_CACHE_DIR=$(mktemp -d)
configs=(bm128_bn64_s3_w2x2:bm128_bn128_s3_w2x2 bm64_bn64_s3_w2x2:bm64_bn128_s3_w2x2
  bm128_bn64_s3_wgmma:bm128_bn128_s3_wgmma bm128_bn64_s4_wgmma:bm128_bn128_s4_wgmma
  bm128_bn128_s3_wgmma:bm128_bn256_s3_wgmma bm128_bn128_s4_wgmma:bm128_bn256_s4_wgmma
  bm64_bn64_s4_wgmma:bm64_bn128_s4_wgmma bm64_bn128_s4_wgmma:bm64_bn256_s4_wgmma
  bm256_bn64_s3_wgmma:bm256_bn128_s3_wgmma)
args=()
for c in "${configs[@]}"; do args+=(--config "$c"); done
./build/moejit bench --tokens 512 --tokens 1024 --tokens 2048 --tokens 4096 --tokens 8192 --tokens 32768 "${args[@]}" --runs 20 --json "$out/variants.json" 2>&1 | tee "$out/variants.log"
