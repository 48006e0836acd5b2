#!/usr/bin/env bash
# 192-row wgmma tiles against the 256-row ones (NOTES.md).
cfg=(bm256_bn64_s4_wgmma_f1:bm256_bn128_s4_wgmma_f1
     bm192_bn96_s4_wgmma_f1:bm192_bn192_s4_wgmma_f1
     bm192_bn96_s3_wgmma_f1:bm192_bn192_s3_wgmma_f1
     bm192_bn96_s4_wgmma:bm192_bn192_s4_wgmma)
bash tools/bench/variants.sh "4096 8192 16384 32768" "${cfg[@]}"
for e in 8 64; do
  ./build/moejit bench --tokens 8192 --shape e=$e $(printf -- "--config %s " "${cfg[@]}") --runs 20 2>&1 |
    awk -v e=$e '/custom/ {print $1"_e"e, $4, $5, $8, $10, $11}'
done
