#!/usr/bin/env bash
# For the next session's first call: the tree with runs/s38/ticket_by_warp3.diff
# applied and built, bundled against the head (`bash tools/bench/bundle.sh
# $(bash tools/bench/build_base.sh HEAD | tail -1)`; carry build-gpu). On an
# H200 the done-when figures first; then the patched build's suite with
# debug pipelines (a wait that never ends traps after 10 s), the three
# sanitizers on a ws and a swap-AB config, and an A/B against the head.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
landing_checks 300
ab_interleaved "moejit moejit-base" "seed|128 2048 8192"
