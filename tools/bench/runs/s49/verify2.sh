#!/usr/bin/env bash
# Session 49, the last of the device budget (any card): the Python op's
# tests on the GPU after the review fixes (d277d0a..1ae61f2: in-place
# version bump, no direct path under tracing or dispatch modes, the shape
# rules), and what the cli_gpu CTest checks, without cmake: bench --jit
# started through PATH (5888ad1), bench --json to a full disk (69ee413),
# warm --tune for another --gpu (9552f4b), a case larger than the GPU
# (99db319).
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> "$summary"
shape=k=2,hidden=256,intermediate=128,experts=8
cache=$(mktemp -d)
MOEJIT_CACHE_DIR=$cache PATH=$PWD/$b:$PATH timeout 60 moejit bench --jit --shape $shape \
  --processes 2 > "$logs/jit.log" 2>&1
echo "bench --jit through PATH rc=$? $(grep -c "^$shape" "$logs/jit.log") lines" >> "$summary"
MOEJIT_CACHE_DIR=$cache timeout 60 ./$b/moejit bench --tokens 16 --shape $shape --runs 2 \
  --json /dev/full > "$logs/json_full.log" 2>&1
echo "bench --json /dev/full rc=$? (1 expected): $(tail -1 "$logs/json_full.log")" >> "$summary"
MOEJIT_CACHE_DIR=$cache timeout 60 ./$b/moejit warm --tune --shape $shape --gpu "Not This GPU" \
  > "$logs/tune_gpu.log" 2>&1
echo "warm --tune --gpu other rc=$? (1 expected): $(tail -1 "$logs/tune_gpu.log")" >> "$summary"
MOEJIT_CACHE_DIR=$cache timeout 60 ./$b/moejit bench --tokens 1 \
  --shape k=8,hidden=65536,intermediate=65536,experts=4096 > "$logs/too_large.log" 2>&1
echo "bench too large rc=$? (1 expected): $(tail -1 "$logs/too_large.log")" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) PYTHONPATH=$PWD/$b/py timeout 170 python3 tests/python/test_torch.py \
  > "$logs/python_torch.log" 2>&1
echo "test_torch.py rc=$? $SECONDS s $(tail -1 "$logs/python_torch.log")" >> "$summary"
