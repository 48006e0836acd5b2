#!/usr/bin/env bash
# Session 36, call 4: where a call's time goes with its launches chained as
# they run (`bench --stages`: parts of the call timed alone, interleaved
# with the whole call, 30 runs), seed shape at T=128..8192 and qwen3-235b
# at T=2048. On an H200, the done-when bench first (cold card).
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > "$logs/smi.txt" 2>&1
cat "$logs/smi.txt" >> "$summary"
export MOEJIT_CACHE_DIR=$(mktemp -d)
if grep -q H200 "$logs/smi.txt"; then
  timeout 120 ./$b/moejit bench --json "$out/bench.json" > "$logs/bench.log" 2>&1
  echo "seed bench rc=$?" >> "$summary"
  grep -E ' (yes|NO) ' "$logs/bench.log" >> "$summary"
  timeout 60 ./$b/moejit bench --combine fast --tokens 8192 --runs 30 > "$logs/fast.log" 2>&1
  grep -E " (yes|NO) " "$logs/fast.log" >> "$summary"
fi
st="--stages routing --stages routing+gemm1 --stages routing+gemm1+gemm2 --stages gemm1 --stages gemm2 --stages combine"
timeout 200 ./$b/moejit bench --tokens 128 --tokens 512 --tokens 2048 --tokens 4096 --tokens 8192 \
  $st --runs 30 > "$logs/stages.log" 2>&1
echo "stages rc=$?" >> "$summary"
grep -E '^custom' "$logs/stages.log" >> "$summary"
timeout 120 ./$b/moejit bench --shape k=8,hidden=4096,intermediate=1536,experts=128 --tokens 2048 \
  $st --runs 20 > "$logs/stages_q235.log" 2>&1
echo "stages qwen3-235b rc=$?" >> "$summary"
grep -E '^custom' "$logs/stages_q235.log" >> "$summary"
