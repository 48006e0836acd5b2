#!/usr/bin/env bash
# GEMM2 with smaller row tiles than GEMM1 (split list tiles), NOTES.md.
big=(bm256_bn64_s4_wgmma_f1:bm256_bn128_s4_wgmma_f1
     bm256_bn64_s4_wgmma_f1:bm128_bn128_s3_wgmma
     bm256_bn64_s4_wgmma_f1:bm128_bn64_s3_wgmma
     bm256_bn64_s4_wgmma_f1:bm64_bn128_s4_wgmma
     bm256_bn64_s4_wgmma_f1:bm128_bn128_s3_wgmma_f1)
mid=(bm128_bn64_s3_wgmma:bm128_bn128_s3_wgmma
     bm128_bn64_s3_wgmma:bm64_bn128_s4_wgmma
     bm128_bn64_s3_wgmma:bm128_bn64_s3_wgmma
     bm256_bn64_s4_wgmma_f1:bm128_bn128_s3_wgmma)
bash tools/bench/variants.sh "8192 16384 32768" "${big[@]}"
for e in 8 64; do
  ./build/moejit bench --tokens 8192 --shape e=$e $(printf -- "--config %s " "${big[@]}") --runs 20 2>&1 |
    awk -v e=$e '/custom/ {print $1"_e"e, $4, $5, $8, $10, $11}'
done
bash tools/bench/variants.sh "1024 2048 4096" "${mid[@]}"
