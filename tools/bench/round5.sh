#!/usr/bin/env bash
# wgmma pipeline variants: groups in flight, stages, tile widths (NOTES.md).
cfg=(bm128_bn64_s3_wgmma:bm128_bn128_s3_wgmma
     bm128_bn64_s4_wgmma_f1:bm128_bn128_s4_wgmma_f1
     bm128_bn64_s5_wgmma_f1:bm128_bn128_s5_wgmma_f1
     bm128_bn64_s3_wgmma_f1:bm128_bn128_s3_wgmma_f1
     bm128_bn128_s4_wgmma_f1:bm128_bn256_s4_wgmma_f1
     bm256_bn64_s4_wgmma_f1:bm256_bn128_s4_wgmma_f1
     bm128_bn64_s3_wgmma:bm128_bn64_s3_wgmma
     bm128_bn64_s3_wgmma:bm128_bn256_s4_wgmma_f1)
bash tools/bench/variants.sh "2048 8192 32768" "${cfg[@]}"
./build/moejit bench --tokens 8192 --shape e=8 $(printf -- "--config %s " "${cfg[@]}") --runs 20 2>&1 |
  awk '/custom/ {print $1"_e8", $4, $5, $8, $10, $11}'
