#!/usr/bin/env bash
# Session 44, call 1 (any card; on an H200 the done-when figures first):
# session 43's call1.sh with a fourth build and the swap-AB buckets.
# moejit-evict3 = runs/s44/evict_swap_too.diff: evict2 (wss weights
# evict_first, gathered x rows evict_last) and the swap-AB kernels' weight
# boxes evict_first too (T <= 1024, where every weight tile reads the
# expert's x rows again). moejit-evict4 = runs/s44/evict_partial_keep.diff:
# evict3, and GEMM2's h boxes and its partial rows (bulk stores) evict_last,
# so that the combine reads the partial from L2. Two rounds, seed
# T=256..8192 and qwen3-235b T=2048; then ncu's DRAM bytes of GEMM1, GEMM2
# and the combine of each build at T=2048.
# Prediction: evict3 = evict2 from T=2048 up (same wss kernels); at
# T=256..1024 -1..-3% against the head if x is re-read from DRAM there.
# evict4: the combine's 67 MB at T=2048 read half from L2 (~-8 us on the
# H100, -1.5% of the call), GEMM2's h re-reads (28 MB) gone.
set -uo pipefail
here=$(dirname "$0")
O=$OUT
bins=${BINS:-moejit moejit-evict2 moejit-evict3 moejit-evict4}
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  (OUT=$O/done source "$here/../../round_env.sh"; trap finish_round EXIT; card_and_done_when moejit) \
    > /dev/null 2>&1
  cat $O/done/summary.txt
  # The done-when run takes up to ~270 s: three builds, not four.
  bins=${BINS:-moejit moejit-evict3 moejit-evict4}
fi
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader
OUT=$O/ab BINS="$bins" RUNS=20 ROUNDS=${ROUNDS:-2} CASE_LIMIT=${CASE_LIMIT:-60} \
  CASES="seed|${SEED_T:-256 1024 2048 4096 8192};k=8,hidden=4096,intermediate=1536,experts=128|2048" \
  bash tools/bench/multi_ab.sh > /dev/null 2>&1
grep -v "^ab " $O/ab/summary.txt
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
mkdir -p $O/ncu
for bin in $bins; do
  for t in ${NCU_T:-2048}; do
    MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ncu --clock-control none -k regex:"moe_(gemm|combine)" -c 6 \
      --metrics $metrics ./build-gpu/$bin bench --tokens $t --runs 1 > $O/ncu/${bin}_$t.log 2>&1
    echo "ncu $bin T=$t rc=$?"
    awk '/^  moe_/ {name=$1} /gpu__time|dram__bytes|lts__t_sector/ {print "  ", substr(name,1,40), $1, $(NF-1), $(NF)}' \
      $O/ncu/${bin}_$t.log | tail -12
  done
done
tar czf $O/ncu.tar.gz -C $O ncu && rm -rf $O/ncu
