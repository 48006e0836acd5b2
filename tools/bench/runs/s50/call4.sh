#!/usr/bin/env bash
# Session 50, the last of the budget: on an H200 only the done-when
# figures on a cold card (card_and_done_when: the 13 seed cases, fast mode
# at T=8192, mixtral T=4096); other cards run nothing.
source "$(dirname "$0")/../../round_env.sh"
trap finish_round EXIT
card_and_done_when moejit
