#!/usr/bin/env bash
# Session 32's prepared device call (none was lent in session 32; run it
# first thing in the next one, `carry: ["build-gpu"]`, about 12 minutes):
#  1. the 13 seed cases on a cold card and the headline in fast mode, on
#     15f034e (moejit-lead: f7fdcdd's kernels), the issue's done-when run;
#  2. is the T=8192 loss of tiles by claim the workspace layout?
#     f7fdcdd put the claim counters between num_tiles and sorted_ids,
#     which moved sorted_ids, sorted_weights, h and the partial buffer 256
#     bytes later; moejit-tail (runs/s32/claims_last.diff) puts them after
#     the partial buffer, every other offset as in a6b17b8 (moejit-base).
#  3. the lead found offline in session 32 (SASS, no GPU): since claims,
#     the GEMM2 producers (ws and swap-AB) take the tile from an atomic, a
#     value ptxas cannot prove uniform, so every TMA issue moves its
#     coordinates into uniform registers first (4 R2UR inside each ELECT
#     loop; seed GEMM2 bn256: 51 R2UR against a6b17b8's 19); GEMM2 is
#     where call E found the loss (+5.4% cycles, GEMM1 +0.8%).
#     moejit-uni (runs/s32/warp_uniform.diff: the claimed index through
#     redux.sync) has base's TMA issue again (21 R2UR). Its GPU suite first.
#     Interleaved, seed T=8192 and 2048, E=8 T=8192.
source "$(dirname "$0")/../../round_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader \
  >> "$summary" 2>&1
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 120 ./$b/moejit-lead bench --json "$out/bench.json" \
  > "$logs/bench.log" 2>&1
echo "seed bench rc=$? $SECONDS s" >> "$summary"
grep -E ' (yes|NO) ' "$logs/bench.log" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/moejit-lead bench --combine fast \
  --combine deterministic --tokens 8192 --runs 30 > "$logs/fast.log" 2>&1
echo "fast rc=$? $SECONDS s" >> "$summary"
grep -E ' (yes|NO) ' "$logs/fast.log" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 150 ./$b/runtime_gpu_test_uni \
  --gtest_filter='-Shapes/SwapAbMatchesReference.*' > "$logs/gpu_tests_uni.log" 2>&1
echo "gpu_tests_uni rc=$? $SECONDS s $(grep -E '^\[  (PASSED|FAILED) ' "$logs/gpu_tests_uni.log" |
  tr '\n' ' ')" >> "$summary"
# Six of the twelve swap-AB shapes (T=1, short pipelines, tails, one hot
# expert, out-of-range ids), as in runs/s31/ring_round.sh.
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 120 ./$b/runtime_gpu_test_uni --gtest_filter=$(printf \
  'Shapes/SwapAbMatchesReference.EveryPlanAndMode/%s:' bf16_k8_h2048_i768_e128_t1_random \
  fp16_k6_h512_i256_e64_t300_random bf16_k2_h8_i8_e3_t17_random fp16_k1_h264_i200_e64_t10272_tails \
  bf16_k4_h256_i128_e16_t1000_oneexpert bf16_k8_h256_i128_e64_t1000_outofrange) \
  > "$logs/gpu_swap_uni.log" 2>&1
echo "gpu_swap_uni rc=$? $SECONDS s $(grep -E '^\[  (PASSED|FAILED) ' "$logs/gpu_swap_uni.log" |
  tr '\n' ' ')" >> "$summary"
OUT=$logs/ab BINS="moejit-base moejit-lead moejit-uni moejit-tail" RUNS=20 ROUNDS=2 CASE_LIMIT=60 \
  CASES="seed|8192 2048;experts=8|8192" bash "$(dirname "$0")/../../multi_ab.sh" > /dev/null
echo "ab $SECONDS s" >> "$summary"
grep "^ab" "$logs/ab/summary.txt" >> "$summary"
finish_round
