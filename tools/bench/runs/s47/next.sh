#!/usr/bin/env bash
# Session 47, on whatever card comes (bundle: head bebe080 with 10b7ebd as
# moejit-base, 6caa88e's CLI as moejit-6caa88e).
#   H200: s46/next.sh (the done-when figures on a cold card, the presets
#     against 6caa88e, one round of the swap256 rule).
#   Other cards: s46/retune_pairs.sh (the H100 re-tune's changed buckets of
#     the seed shape at E=8/16/32, old pair against new, ABBA).
here=$(dirname "$0")
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  exec bash "$here/../s46/next.sh"
fi
exec bash "$here/../s46/retune_pairs.sh"
