#!/usr/bin/env bash
# Session 43, call 2: call1.sh cut to fit what was left of the device
# budget after failed and refused starts (~330 s): two rounds, the seed
# shape at T=2048..8192, ncu at T=2048 only.
ROUNDS=2 SEED_T="2048 4096 8192" NCU_T=2048 CASE_LIMIT=45 bash "$(dirname "$0")/call1.sh"
