#!/usr/bin/env bash
# Session 36, call 11: the head's seed cases on a cold card (the done-when
# bench if an H200 comes), fast mode, then the routing suites on the
# route_scatter refactor (f94164a + working tree).
source "$(dirname "$0")/../../round_env.sh"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 120 ./$b/moejit bench --json "$out/bench.json" > "$logs/bench.log" 2>&1
echo "seed bench rc=$?" >> "$summary"
grep -E ' (yes|NO) ' "$logs/bench.log" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/moejit bench --combine fast --tokens 8192 --runs 30 \
  > "$logs/fast.log" 2>&1
grep -E " (yes|NO) " "$logs/fast.log" >> "$summary"
gpu_suite routing runtime_gpu_test 150 --gtest_filter='RoutingPaths/*:Routings/*:Seed/*'
finish_round
