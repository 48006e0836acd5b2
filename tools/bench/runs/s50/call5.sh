#!/usr/bin/env bash
# Session 50, the budget's last minutes (H100): the swap-AB shapes of
# runtime_gpu_test through 80e298d's enqueue, as far as 140 s go.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
nvidia-smi --query-gpu=name --format=csv,noheader >> "$summary"
gpu_suite swapab runtime_gpu_test 140 --gtest_filter='Shapes/SwapAbMatchesReference.*'
