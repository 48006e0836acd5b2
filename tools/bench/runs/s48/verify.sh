#!/usr/bin/env bash
# Session 48, the short form of next.sh for the last of the device budget:
# the runtime suite's Runtime and Combine tests (c859782's context scope
# and its new test among them) and the Python op's tests, on any card.
# FILTER, LIMIT and NO_PYTHON cut it down for a shorter call.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> "$summary"
gpu_suite runtime_quick runtime_gpu_test "${LIMIT:-150}" --gtest_filter="${FILTER:-Runtime.*:Combine.*}"
[ -n "${NO_PYTHON:-}" ] && exit 0
MOEJIT_CACHE_DIR=$(mktemp -d) PYTHONPATH=$PWD/$b/py timeout 90 python3 tests/python/test_torch.py \
  > "$logs/python_torch.log" 2>&1
echo "test_torch.py rc=$? $SECONDS s $(tail -1 "$logs/python_torch.log")" >> "$summary"
