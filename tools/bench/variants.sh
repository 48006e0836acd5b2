#!/usr/bin/env bash
# Times tile-config variants of the seed shape in one device call, plus an
# ncu per-kernel split of the planner's choice at T=8192. Logs under $OUT.
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
export MOEJIT_CACHE_DIR=$(mktemp -d)
big=(bm128_bn64_s3_w2x2:bm128_bn128_s3_w2x2 bm128_bn128_s3_w2x4:bm128_bn256_s3_w2x4
     bm128_bn128_s4_w2x4:bm128_bn256_s4_w2x4 bm256_bn64_s3_w4x2:bm256_bn128_s3_w4x2
     bm128_bn64_s4_w2x2:bm128_bn128_s4_w2x2)
mid=(bm64_bn64_s4_w2x2:bm64_bn128_s4_w2x2 bm64_bn128_s4_w2x4:bm64_bn256_s4_w2x4
     bm32_bn64_s4_w1x4:bm32_bn128_s4_w1x4 bm128_bn128_s3_w2x4:bm128_bn256_s3_w2x4
     bm16_bn64_s4_w1x4:bm16_bn128_s4_w1x4 bm64_bn64_s3_w2x2:bm64_bn128_s3_w2x2
     bm128_bn64_s3_w2x2:bm128_bn128_s3_w2x2)
args=()
for c in "${big[@]}"; do args+=(--config "$c"); done
./build/moejit bench --tokens 8192 --tokens 32768 "${args[@]}" --runs 30 2>&1 | tee "$out/big.log"
./build/moejit bench --tokens 8192 --shape e=8 "${args[@]}" --runs 30 2>&1 | grep custom | tee "$out/big_e8.log"
args=()
for c in "${mid[@]}"; do args+=(--config "$c"); done
./build/moejit bench --tokens 128 --tokens 256 --tokens 512 --tokens 1024 --tokens 2048 --tokens 4096 "${args[@]}" --runs 30 2>&1 | tee "$out/mid.log"
./build/moejit bench --json "$out/seed.json" 2>&1 | tee "$out/seed.log"
ncu --clock-control none -k regex:"moe_(route|gemm|combine)" -c 6 --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum.per_second,dram__bytes.sum.per_second ./build/moejit bench --tokens 8192 --runs 1 > "$out/ncu.log" 2>&1
grep -E "moe_|duration|throughput|per_second" "$out/ncu.log" | head -40
