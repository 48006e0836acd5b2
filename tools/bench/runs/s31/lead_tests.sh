#!/usr/bin/env bash
# Session 31, call G: every runtime GPU test on the lead build
# (claims_lead.diff on a6b17b8).
set -uo pipefail
O=$OUT; b=build-gpu
export MOEJIT_CACHE_DIR=$(mktemp -d)
timeout 560 ./$b/runtime_gpu_test_lead > $O/runtime_gpu.log 2>&1
echo "runtime_gpu rc=$? $SECONDS s"; grep -E "PASSED|FAILED|tests ran" $O/runtime_gpu.log
