#!/usr/bin/env bash
# Session 43, call 1 (any card; on an H200 the done-when figures first).
# The wss GEMMs' L2 policies against the head (build-gpu/moejit, 254f8a8),
# interleaved (3 rounds): moejit-evict = runs/s42/weights_evict_first.diff
# (weights evict_first), moejit-evict2 = runs/s43/evict_first_x_last.diff
# (that, and GEMM1's gathered x rows evict_last); seed T=1024..8192 and
# qwen3-235b T=2048; then ncu's DRAM bytes of each at T=2048 and 4096.
# Prediction (session 42's ncu: GEMM1 reads 874 / 955 MB at T=2048 / 4096
# against 805 MB of weights; gathered x rows are 67 / 134 MB, unique x
# 8.4 / 16.8 MB): evict GEMM1 ~815 / ~830 MB, the call -2..-4% at
# T=2048..4096, -1..-2% at 8192; evict2 at least as good.
# ROUNDS, SEED_T (the seed shape's T), NCU_T and CASE_LIMIT cut it down
# (call2.sh).
set -uo pipefail
here=$(dirname "$0")
O=$OUT
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  (OUT=$O/done source "$here/../../round_env.sh"; trap finish_round EXIT; card_and_done_when moejit) \
    > /dev/null 2>&1
  cat $O/done/summary.txt
fi
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader
OUT=$O/ab BINS="moejit moejit-evict moejit-evict2" RUNS=20 ROUNDS=${ROUNDS:-3} CASE_LIMIT=${CASE_LIMIT:-60} \
  CASES="seed|${SEED_T:-1024 2048 4096 8192};k=8,hidden=4096,intermediate=1536,experts=128|2048" \
  bash tools/bench/multi_ab.sh > /dev/null 2>&1
cat $O/ab/summary.txt
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
mkdir -p $O/ncu
for bin in moejit moejit-evict moejit-evict2; do
  for t in ${NCU_T:-2048 4096}; do
    MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ncu --clock-control none -k regex:"moe_gemm" -c 4 \
      --metrics $metrics ./build-gpu/$bin bench --tokens $t --runs 1 > $O/ncu/${bin}_$t.log 2>&1
    echo "ncu $bin T=$t rc=$?"
    grep -E "^  moe_|duration|dram__bytes|hit_rate" $O/ncu/${bin}_$t.log | tail -8
  done
done
tar czf $O/ncu.tar.gz -C $O ncu && rm -rf $O/ncu
