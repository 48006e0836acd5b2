#!/usr/bin/env bash
# Session 42, call 1 (build: head 7d3eb01 + runs/s40/tuner_three_draws.diff,
# moejit-base = 6caa88e, the baseline; the diff touches only the
# tuner). On an H200: the done-when figures on a cold card (seed cases,
# fast mode, mixtral T=4096), then the five presets against 6caa88e
# interleaved (presets_round.sh), as far as the call's limit lets it go.
# Both: tools/bench/stream_probe.cu (build-gpu/stream_probe, nvcc here).
# On any other card: the GEMMs of T=2048 and 4096 under ncu (ncu_band.sh),
# then s40's heuristic sweep (call 2 runs s40/call5.sh).
here=$(dirname "$0")
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  (OUT=$OUT/done source "$here/../../round_env.sh"; trap finish_round EXIT; card_and_done_when moejit)
  mkdir -p $OUT/probe && timeout 60 ./build-gpu/stream_probe 9 > $OUT/probe/stream.txt 2>&1
  OUT=$OUT/presets bash "$here/../../presets_round.sh"
  exit 0
fi
mkdir -p $OUT/probe && timeout 60 ./build-gpu/stream_probe 9 > $OUT/probe/stream.txt 2>&1
OUT=$OUT/ncu bash "$here/ncu_band.sh"
OUT=$OUT/sweep bash "$here/../s40/heuristic_sweep.sh"
