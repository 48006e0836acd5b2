#!/usr/bin/env bash
# Session 43, call 2: call1.sh cut to fit what was left of the device
# budget after seven failed or refused starts (~330 s): on an H200 the
# done-when figures first; then the three builds interleaved twice on the
# seed shape at T=2048, 4096 and 8192 and qwen3-235b at T=2048, and ncu's
# DRAM bytes at T=2048 only. Builds and prediction as in call1.sh.
set -uo pipefail
here=$(dirname "$0")
O=$OUT
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  (OUT=$O/done source "$here/../../round_env.sh"; trap finish_round EXIT; card_and_done_when moejit) \
    > /dev/null 2>&1
  cat $O/done/summary.txt
fi
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader
OUT=$O/ab BINS="moejit moejit-evict moejit-evict2" RUNS=20 ROUNDS=2 CASE_LIMIT=45 \
  CASES="seed|2048 4096 8192;k=8,hidden=4096,intermediate=1536,experts=128|2048" \
  bash tools/bench/multi_ab.sh > /dev/null 2>&1
cat $O/ab/summary.txt
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
mkdir -p $O/ncu
for bin in moejit moejit-evict moejit-evict2; do
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 40 ncu --clock-control none -k regex:"moe_gemm" -c 4 \
    --metrics $metrics ./build-gpu/$bin bench --tokens 2048 --runs 1 > $O/ncu/${bin}_2048.log 2>&1
  echo "ncu $bin T=2048 rc=$?"
  grep -E "^  moe_|duration|dram__bytes|hit_rate" $O/ncu/${bin}_2048.log | tail -8
done
tar czf $O/ncu.tar.gz -C $O ncu && rm -rf $O/ncu
