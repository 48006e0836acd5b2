#!/usr/bin/env bash
# Session 39, call 1: runs/s38/ticket_by_warp3.diff applied and built
# (build-gpu/moejit, runtime_gpu_test), the head fd8b731 as moejit-base.
# On an H200 the done-when figures first (nomixtral: this call is full)
# and the T=2048 GEMM pairs;
# then the three sanitizers on a ws and a swap-AB config (the change is a
# memory-ordering one), the suite with debug pipelines (a wait that never
# ends traps after 10 s), and an A/B against the head.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit nomixtral
# On an H200: the T=2048 GEMM pairs of session 38 (the table's, the
# swap128 GEMM1 with the table's GEMM2, the swap256 pair), interleaved.
if grep -q H200 "$logs/smi.txt"; then
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 ./$b/moejit bench --tokens 2048 --runs 30 \
    --config bm128_bn128_s4_wss:bm128_bn256_s3_wss --config bm128_bn64_s7_swap:bm128_bn256_s3_wss \
    --config bm256_bn64_s4_swap:bm256_bn128_s4_swap > "$logs/pairs2048.log" 2>&1
  echo "pairs2048 rc=$?" >> "$summary"
  grep -E '^custom' "$logs/pairs2048.log" >> "$summary"
fi
for cfg in bm128_bn128_s4_wss:bm128_bn256_s3_wss bm32_bn64_s9_swap:bm64_bn128_s7_swap; do
  config_sanitizers $cfg
  mkdir -p "$logs/san_${cfg%%:*}" && mv "$logs"/{memcheck,synccheck,racecheck}.log "$logs/san_${cfg%%:*}/"
done
MOEJIT_DEBUG_PIPELINES=1 gpu_suite runtime runtime_gpu_test 240
ab_interleaved "moejit moejit-base" "seed|128 2048 8192"
