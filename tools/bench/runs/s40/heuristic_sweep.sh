#!/usr/bin/env bash
# Prepared in session 40, not run yet (any card; ~5 minutes). Data for the
# heuristic on shapes that ship no table, so a new rule is not fitted to the
# tables' own buckets: per shape and T, the heuristic's ws pair against the
# two patterns the H100 and H200 tables share (NOTES.md, session 40, call
# 2-4): the 256-row swap-AB pair at ~128-192 rows per expert, and narrower
# ws tiles (GEMM1 bn96, GEMM2 bn128 s6 or bn192 s4). One `bench` per
# (shape, T) with the configs interleaved run by run ("custom" lines).
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader >> "$summary"
heuristic=bm128_bn128_s4_wss:bm128_bn256_s3_wss
configs="--config $heuristic --config bm256_bn64_s4_swap:bm256_bn128_s4_swap
  --config bm128_bn96_s4_wss:bm128_bn128_s6_wss --config bm128_bn128_s4_wss:bm128_bn192_s4_wss"
# Rows per expert: DeepSeek-V3-like and GPT-OSS-like T/32; Qwen3-Next-like
# T*10/512; a 16-expert shape T/2.
cases=(
  "k=8,hidden=7168,intermediate=2048,experts=256|2048 4096 8192 16384"
  "k=4,hidden=2880,intermediate=2880,experts=128|2048 4096 8192 16384"
  "k=10,hidden=2048,intermediate=512,experts=512|4096 8192 16384"
  "k=2,hidden=4096,intermediate=1536,experts=16|128 256 512 1024"
)
cache=$(mktemp -d)
for c in "${cases[@]}"; do
  shape=${c%%|*}
  for t in ${c#*|}; do
    MOEJIT_CACHE_DIR=$cache timeout 120 ./$b/moejit bench --shape "$shape" --tokens "$t" \
      --runs 20 $configs > "$logs/sweep_${shape//[,=]/_}_$t.log" 2>&1
    echo "$shape T=$t rc=$?" >> "$summary"
    grep -E ' (yes|NO) ' "$logs/sweep_${shape//[,=]/_}_$t.log" >> "$summary"
  done
done
