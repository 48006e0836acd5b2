#!/usr/bin/env bash
# A/B: the committed build against a second binary (argument), same cases.
set -uo pipefail
other=$1
cases=${AB_CASES:-"--tokens 2048 --tokens 8192 --tokens 32768"}
for bin in ./build/moejit "$other" ./build/moejit "$other"; do  # alternate: heat hits both
  export MOEJIT_CACHE_DIR=$(mktemp -d)
  echo "== $bin"
  $bin bench $cases --runs 30 2>&1 | awk '/custom/ {print $1, $4, $5, $8, $10}'
  for e in 8 64; do
    $bin bench --tokens 8192 --shape e=$e --runs 30 2>&1 | awk -v e=$e '/custom/ {print $1"_e"e, $4, $5, $8, $10}'
  done
done
