#!/usr/bin/env bash
# Re-tunes one shape on the GPU machine (over build-gpu/) and times the new
# record against the shipped table, ABAB (tuned, shipped, tuned, shipped),
# at TOKENS. Records in $OUT/records.tar (copy over the table in
# cache/tuning/nvidia-h200/), logs in $OUT/logs.tar.gz, summary last.
#   [TUNE_LIMIT=s] [TOKENS="T ..."] bash tools/bench/retune_round.sh "--model NAME" SHAPE
#   (SHAPE: the same shape for bench, e.g. k=8,hidden=2048,intermediate=768,experts=128)
source "$(dirname "$0")/round_env.sh"
spec=${1:?usage: retune_round.sh "--model NAME" SHAPE}
shape=${2:?usage: retune_round.sh "--model NAME" SHAPE}
root=$(mktemp -d)
start=$(date +%s)
MOEJIT_CACHE_DIR=$root timeout ${TUNE_LIMIT:-150} ./$b/moejit warm --tune $spec \
  > "$logs/tune.log" 2>&1
echo "tune $spec rc=$? $(( $(date +%s) - start )) s" >> "$summary"
grep -E "bucket [0-9]+" "$logs/tune.log" >> "$summary"
[ -d "$root/tuning" ] && tar -C "$root" -cf "$out/records.tar" tuning
tokens=""
for t in ${TOKENS:-1 128 256 512 1024 2048 4096 8192}; do tokens="$tokens --tokens $t"; done
shipped=$(mktemp -d)
for pass in tuned shipped tuned shipped; do
  c=$root
  [ $pass = shipped ] && c=$shipped
  MOEJIT_CACHE_DIR=$c timeout 60 ./$b/moejit bench --shape "$shape" $tokens --runs 20 \
    > "$logs/bench_$pass.log" 2>&1
  awk -v tag="$pass" '/ (yes|NO) / {print tag, $2, $4, $9, $10, $NF}' "$logs/bench_$pass.log" \
    >> "$summary"
done
finish_round
