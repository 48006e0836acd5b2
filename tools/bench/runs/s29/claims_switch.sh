#!/usr/bin/env bash
# Session 30, device call D: claims_switch.diff (moejit-switch: the lead
# variant, claims_lead.diff, with a fixed every-gridDim.x-th walk above 16
# waves) against claims_lead.diff (moejit-lead) and fb7f89e (moejit-base).
# If switch recovers T=8192, the loss was the claimed order; if not, the
# tickets. Then the rerun and repeatability tests on switch.
set -uo pipefail
O=$OUT; b=build-gpu
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader
OUT=$O/ab BINS="moejit-base moejit-lead moejit-switch" RUNS=20 ROUNDS=2 CASE_LIMIT=60 CASES="seed|128 1024 2048 4096 8192 16384;experts=8|8192;k=8,hidden=4096,intermediate=1536,experts=128|2048 8192;k=2,hidden=4096,intermediate=14336,experts=8|4096" bash tools/bench/multi_ab.sh > /dev/null
echo "ab $SECONDS s"
grep "^ab" $O/ab/summary.txt > $O/ab_summary.txt; cat $O/ab_summary.txt
timeout 120 ./$b/runtime_gpu_test_switch --gtest_filter='Runtime.PersistentGemmsRerun*:Runtime.BitwiseRepeatable:*Tails*' > $O/gpu_tests.log 2>&1
echo "gpu_tests rc=$? $SECONDS s"; grep -cE "^\[       OK" $O/gpu_tests.log; grep -E "FAILED|Failure" $O/gpu_tests.log | head
tar czf $O/logs.tgz -C $O --exclude logs.tgz . 2>/dev/null
