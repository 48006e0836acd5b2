#!/usr/bin/env bash
# Session 48, on whatever card comes (bundle: the head with 10b7ebd as
# moejit-base, 6caa88e's CLI as moejit-6caa88e).
#   H200: s46/next.sh (the done-when figures on a cold card, the presets
#     against 6caa88e, one round of the swap256 rule).
#   Other cards: the head's GPU suites (runtime, Python op, C ABI host,
#     tuner): c859782 changed how every call enters the device's context
#     (ContextScope), and the embedding script (136b172) and the H100
#     tables (10f16f1) have not met a GPU suite yet. Last, as time allows,
#     which slot runs slow when two different sets share a process (session
#     47: E=16 T=256, the s4 and s5 pairs; session 48 call 1: none when
#     the sets are the same): orders A B, A A B, A B A, B A A. Prediction,
#     if a set runs slow right after a *different* set: in A A B the first
#     A and B slow, the second A fast; in A B A the first A fast.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_or_done_when_round
gpu_suite runtime_quick runtime_gpu_test 150 --gtest_filter='Runtime.*:Combine.*'
gpu_suite tune tune_gpu_test 90
MOEJIT_CACHE_DIR=$(mktemp -d) PYTHONPATH=$PWD/$b/py timeout 150 python3 tests/python/test_torch.py \
  > "$logs/python_torch.log" 2>&1
echo "test_torch.py rc=$? $SECONDS s $(tail -1 "$logs/python_torch.log")" >> "$summary"
LD_LIBRARY_PATH=$b timeout 60 ./$b/c_abi_consumer "$(mktemp -d)/c_abi" > "$logs/c_abi.log" 2>&1
echo "c_abi_consumer rc=$? $(tail -1 "$logs/c_abi.log")" >> "$summary"
gpu_suite runtime runtime_gpu_test 270 --gtest_filter='-Runtime.*:Combine.*'
A=bm128_bn96_s4_wss:bm128_bn128_s6_wss B=bm128_bn96_s5_wss:bm128_bn128_s6_wss
slot_cache=$(mktemp -d)
for order in "$A $B" "$A $A $B" "$A $B $A" "$B $A $A"; do
  configs=""
  for c in $order; do configs="$configs --config $c"; done
  for round in 1 2; do
    MOEJIT_CACHE_DIR=$slot_cache timeout 60 ./$b/moejit bench --shape experts=16 --tokens 256 \
      $configs --runs 50 > "$logs/slots.log" 2>&1
    rc=$?
    echo "slots order $(echo $order | sed "s/$A/A/g; s/$B/B/g") round $round rc=$rc" >> "$summary"
    grep -E " (yes|NO) " "$logs/slots.log" | awk '{print $4, $NF}' | sed "s/$A/A/; s/$B/B/" >> "$summary"
  done
done
