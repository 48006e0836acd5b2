#!/usr/bin/env bash
# Session 48, on whatever card comes (bundle: the head with 10b7ebd as
# moejit-base, 6caa88e's CLI as moejit-6caa88e).
#   H200: s46/next.sh (the done-when figures on a cold card, the presets
#     against 6caa88e, one round of the swap256 rule).
#   Other cards: the head's GPU suites (runtime, Python op, C ABI host,
#     tuner). The kernels are 33c7bc8's, but the embedding script (136b172)
#     and the H100 tables (10f16f1) have not met a GPU suite yet.
here=$(dirname "$0")
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  exec bash "$here/../s46/next.sh"
fi
source "$here/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> "$summary"
gpu_suite runtime runtime_gpu_test 330
gpu_suite tune tune_gpu_test 90
MOEJIT_CACHE_DIR=$(mktemp -d) PYTHONPATH=$PWD/$b/py timeout 150 python3 tests/python/test_torch.py \
  > "$logs/python_torch.log" 2>&1
echo "test_torch.py rc=$? $SECONDS s $(tail -1 "$logs/python_torch.log")" >> "$summary"
LD_LIBRARY_PATH=$b timeout 60 ./$b/c_abi_consumer "$(mktemp -d)/c_abi" > "$logs/c_abi.log" 2>&1
echo "c_abi_consumer rc=$? $(tail -1 "$logs/c_abi.log")" >> "$summary"
