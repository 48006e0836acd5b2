#!/usr/bin/env bash
# Session 41, call 1 (build: head 833b175 + runs/s40/tuner_three_draws.diff;
# the diff touches only the tuner, so bench and the kernels are the head's).
# On an H200: s39/call3.sh (the done-when figures first, then the T=2048
# pairs and the seed shape re-tuned). On any other card: s40's
# heuristic_sweep.sh (the data for the heuristic on shapes with no table),
# then s40/call5.sh (tune_gpu_test, the seed shape at E=16 and E=32
# re-tuned over three draws) into $OUT/tuner, as far as the call's limit
# lets it go.
here=$(dirname "$0")
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  exec bash "$here/../s39/call3.sh"
fi
OUT=$OUT/sweep bash "$here/../s40/heuristic_sweep.sh"
OUT=$OUT/tuner bash "$here/../s40/call5.sh"
