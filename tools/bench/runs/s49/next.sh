#!/usr/bin/env bash
# Session 49, on whatever card comes (bundle: the head with 10b7ebd as
# moejit-base, 6caa88e's CLI as moejit-6caa88e).
#   H200: s46/next.sh (the done-when figures on a cold card, the presets
#     against 6caa88e, one round of the swap256 rule).
#   Other cards: 27ff0b7's GPU tests (k above the kernel set's experts:
#     Routings and SwapAb cases, Runtime.ExpertMapShareSmallerThanK), the
#     three runtime tests session 49's call 1 did not reach, and the C ABI
#     host with the log level its CTest sets (call 1 ran it without).
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_or_done_when_round
gpu_suite k_above_e runtime_gpu_test 200 \
  --gtest_filter='*_e4_t1000_random*:*_e1_t300_random*:*_e8_t100_random*:Runtime.ExpertMapShareSmallerThanK:Shapes/SwapAbMatchesReference.EveryPlanAndMode/bf16_k8_h256_i128_e64_t1000_outofrange:Shapes/SwapAbMatchesReference.EveryPlanAndMode/*_e2_t2200_random'
MOEJIT_LOG_LEVEL=info LD_LIBRARY_PATH=$b timeout 60 ./$b/c_abi_consumer "$(mktemp -d)/c_abi" \
  > "$logs/c_abi.log" 2>&1
echo "c_abi_consumer rc=$? $(tail -1 "$logs/c_abi.log")" >> "$summary"
gpu_suite tune tune_gpu_test 120
