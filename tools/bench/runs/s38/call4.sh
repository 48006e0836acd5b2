#!/usr/bin/env bash
# Session 38, call 4: on an H200 the done-when figures of the head (the
# kernels of 42e2eb2); on an H100 instead the seed shape's buckets tuned
# (records in $OUT/records.tar: the tuner's pick against the heuristic on
# this card, not for shipping without an A/B).
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
if ! grep -q H200 "$logs/smi.txt"; then
  root=$(mktemp -d)
  MOEJIT_CACHE_DIR=$root timeout 150 ./$b/moejit warm --tune --model qwen3-30b-a3b > "$logs/tune.log" 2>&1
  echo "tune qwen3-30b-a3b rc=$? $SECONDS s" >> "$summary"
  [ -d "$root/tuning" ] && tar -C "$root" -cf "$out/records.tar" tuning
fi
