#!/usr/bin/env bash
# Expert parallelism on the GPU machine over build-gpu/py (tools/bench/bundle.sh),
# with as many ranks as the machine has GPUs (NPROC, default: all):
# examples/expert_parallel.py on NCCL at the seed shape in the batch-invariant
# combine (the two modes must agree bit for bit on two ranks) and in the
# default one, uneven; tools/bench/ep_bench.py (EP_TOKENS, default
# "128 1024 8192" per rank); then the expert-parallel tests (NCCL on the
# GPUs, gloo) and the torch op's tests on the GPU. Logs in
# $OUT/logs.tar.gz; summary last.
source "$(dirname "$0")/round_env.sh"
export PYTHONPATH=$PWD/$b/py MOEJIT_CACHE_DIR=$(mktemp -d)
# NVLink multicast stays off (the device notes: it can take the host's GPUs down).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nproc=${NPROC:-$(nvidia-smi -L | wc -l)}
ranks="python3 -m torch.distributed.run --standalone --nproc-per-node $nproc"
timeout 120 $ranks examples/expert_parallel.py --combine batch-invariant --tokens 512 \
  --steps 10 > "$logs/example_invariant.log" 2>&1
echo "example batch-invariant rc=$?" >> "$summary"
grep -E "^rank|^  " "$logs/example_invariant.log" >> "$summary"
timeout 120 $ranks examples/expert_parallel.py --uneven --tokens 2048 --steps 10 \
  > "$logs/example_uneven.log" 2>&1
echo "example uneven rc=$?" >> "$summary"
grep -E "^rank|^  " "$logs/example_uneven.log" >> "$summary"
timeout 240 $ranks tools/bench/ep_bench.py --tokens ${EP_TOKENS:-128 1024 8192} \
  --json "$out/ep_bench.json" > "$logs/ep_bench.log" 2>&1
echo "ep_bench rc=$?" >> "$summary"
grep -E "^\|" "$logs/ep_bench.log" >> "$summary"
timeout 200 python3 tests/python/test_distributed.py > "$logs/test_distributed.log" 2>&1
echo "test_distributed.py rc=$? $(tail -1 "$logs/test_distributed.log")" >> "$summary"
timeout 200 python3 tests/python/test_torch.py > "$logs/test_torch.log" 2>&1
echo "test_torch.py rc=$? $(tail -1 "$logs/test_torch.log")" >> "$summary"
finish_round
