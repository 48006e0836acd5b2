#!/usr/bin/env bash
# Session 37, call 1: on an H200 the done-when bench of the head (501442b's
# kernels, build-gpu/moejit-base) on a cold card first; then the A/B of
# the first tile's weights prefetched into L2 before the wait
# (build-gpu/moejit) against the head, and the reference suites on it.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit-base
ab_interleaved "moejit moejit-base" "seed|1 128 512 2048 4096 8192;k=8,hidden=4096,intermediate=1536,experts=128|128 2048"
gpu_suite runtime_ref runtime_gpu_test 200 --gtest_filter='Seed/*:Tokens/*:KAndExperts/*:Routings/*:Runtime.*'
