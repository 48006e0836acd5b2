#!/usr/bin/env bash
# After idle-warpgroup skipping: bm128 vs bm256 near the switch, then the
# full GPU tests + memcheck + seed benchmark (final.sh).
cfg=(bm256_bn64_s4_wgmma_f1:bm256_bn128_s4_wgmma_f1 bm128_bn64_s3_wgmma:bm128_bn128_s3_wgmma)
bash tools/bench/variants.sh "2048 4096 8192" "${cfg[@]}"
bash tools/bench/final.sh
