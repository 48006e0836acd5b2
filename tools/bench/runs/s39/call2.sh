#!/usr/bin/env bash
# Session 39, call 2 (same bundle as call 1, on the machine call 1 left
# warm): the swap-AB shapes that call 1's suite under debug pipelines had
# no time left for, without debug pipelines, and tune_gpu_test.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
gpu_suite runtime runtime_gpu_test 400 --gtest_filter='Shapes/SwapAb*'
gpu_suite tune tune_gpu_test 100
