#!/usr/bin/env bash
# Session 37, call 3: on an H200 the done-when bench of the head (46050a9,
# build-gpu/moejit-base) on a cold card first; then GEMM2 on GEMM1's
# written rows (signals_rows, build-gpu/moejit): the reference suites with
# debug pipelines (a wait that never ends traps after 10 s), memcheck, and
# the A/B against 46050a9.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit-base
MOEJIT_DEBUG_PIPELINES=1 gpu_suite runtime_ref runtime_gpu_test 200 \
  --gtest_filter='Seed/*:Tokens/*:KAndExperts/*:Routings/*:RoutingPaths/*:OddSizes/*:Runtime.*'
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 90 compute-sanitizer --tool memcheck --print-limit 5 ./$b/moejit bench \
  --tokens 300 --tokens 2100 --runs 1 > "$logs/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$logs/memcheck.log")" >> "$summary"
ab_interleaved "moejit moejit-base" "seed|128 512 2048 4096 8192;k=8,hidden=2048,intermediate=768,experts=8|8192;k=8,hidden=4096,intermediate=1536,experts=128|2048"
