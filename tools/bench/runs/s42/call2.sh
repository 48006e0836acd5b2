#!/usr/bin/env bash
# Session 42, call 2 (any card): weights loaded with an L2 evict_first
# policy in the wss GEMMs (runs/s42/weights_evict_first.diff, built as
# build-gpu/moejit-evict) against the head (build-gpu/moejit, ab7ace0),
# interleaved: the seed shape at T=1024..8192 and qwen3-235b at T=2048,
# then DRAM bytes of the variant's GEMMs at T=2048 and 4096 under ncu.
# Prediction (call 1's ncu: GEMM1 reads 874 MB at T=2048 and 955 MB at
# 4096 against 805 MB of weights; x re-read after the weight stream pushed
# it out of L2): GEMM1 reads ~815 / ~830 MB, the call -2..-4% at
# T=2048..4096, T=8192 -1..-2%.
set -uo pipefail
O=$OUT
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader
OUT=$O/ab BINS="moejit moejit-evict" RUNS=20 ROUNDS=2 CASE_LIMIT=60 \
  CASES="seed|1024 2048 4096 8192;k=8,hidden=4096,intermediate=1536,experts=128|2048" \
  bash tools/bench/multi_ab.sh > /dev/null 2>&1
cat $O/ab/summary.txt
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
for t in 2048 4096; do
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ncu --clock-control none -k regex:"moe_gemm" -c 4 \
    --metrics $metrics ./build-gpu/moejit-evict bench --tokens $t --runs 1 > $O/ncu_evict_$t.log 2>&1
  echo "ncu evict T=$t rc=$?"
  grep -E "^  moe_|duration|dram__bytes|hit_rate" $O/ncu_evict_$t.log | tail -10
done
