#!/usr/bin/env bash
# Session 40, call 3: on an H200, session 39's call 3 first (done-when,
# pairs, seed and E=8 re-tuned). On any card: the H100 tables of call 2
# (cache/tuning/nvidia-h100-80gb-hbm3/) checked by `bench
# --compare-heuristic` at the buckets where the tuner beat the heuristic
# (on an H100 the tuned plan is the shipped table; on an H200 its own).
set -uo pipefail
O=$OUT
if nvidia-smi --query-gpu=name --format=csv | grep -q H200; then
  OUT=$O/h200 bash tools/bench/runs/s39/call3.sh
fi
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm --format=csv,noheader >> "$summary"
cases=(
  "experts=8|1 16 64 128 256 512"
  "experts=16|128 256 512 1024"
  "experts=32|256 512 1024"
  "experts=64|512"
  "k=6,hidden=2048,intermediate=1408,experts=64|1024 2048"
  "k=8,hidden=2048,intermediate=1024,experts=64|512 1024"
  "k=8,hidden=4096,intermediate=1536,experts=128|2048 4096"
  "k=2,hidden=4096,intermediate=14336,experts=8|512 1024 2048 16384"
)
for i in "${!cases[@]}"; do
  c=${cases[i]} tokens=""
  for t in ${c#*|}; do tokens="$tokens --tokens $t"; done
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 120 ./$b/moejit bench --shape "${c%%|*}" $tokens \
    --runs 30 --compare-heuristic > "$logs/cmp_$i.log" 2>&1
  echo "${c%%|*} rc=$?" >> "$summary"
  grep -E ' (yes|NO) ' "$logs/cmp_$i.log" >> "$summary"
done
