#!/usr/bin/env bash
# Session 36, call 3: the done-when bench on a cold card (whatever card
# comes: smi.txt names it), then ncu durations of every kernel of the
# planner's call at T=128, 2048 and 4096 (seed shape; ncu serialises the
# kernels, so launch overlap is not in these figures).
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > "$logs/smi.txt" 2>&1
cat "$logs/smi.txt" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 120 ./$b/moejit bench --json "$out/bench.json" > "$logs/bench.log" 2>&1
echo "seed bench rc=$?" >> "$summary"
grep -E ' (yes|NO) ' "$logs/bench.log" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/moejit bench --combine fast --combine deterministic \
  --tokens 8192 --runs 30 > "$logs/fast.log" 2>&1
grep -E " (yes|NO) " "$logs/fast.log" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/moejit bench \
  --shape k=2,hidden=4096,intermediate=14336,experts=8 --tokens 4096 --runs 20 > "$logs/mixtral.log" 2>&1
grep -E " (yes|NO) " "$logs/mixtral.log" >> "$summary"
export MOEJIT_CACHE_DIR=$(mktemp -d)
for t in 128 2048 4096; do
  ./$b/moejit bench --tokens $t --runs 1 > /dev/null 2>&1
  timeout 120 ncu --clock-control none -k regex:"moe_(route|gemm|combine|zero)" -c 8 --section SpeedOfLight \
    ./$b/moejit bench --tokens $t --runs 1 > "$logs/ncu_$t.log" 2>&1
  echo "ncu T=$t rc=$?" >> "$summary"
  grep -E "^  moe_|Duration|DRAM Throughput|Compute \(SM\) Throughput" "$logs/ncu_$t.log" >> "$summary"
done
