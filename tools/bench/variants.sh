#!/usr/bin/env bash
# Times tile-config variants of the seed shape in one device call.
# Usage: tools/bench/variants.sh "T1 T2 ..." CONFIG... ; logs under $OUT.
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
export MOEJIT_CACHE_DIR=${MOEJIT_CACHE_DIR:-$(mktemp -d)}
tokens=()
for t in $1; do tokens+=(--tokens "$t"); done
shift
args=()
for c in "$@"; do args+=(--config "$c"); done
./build/moejit bench "${tokens[@]}" "${args[@]}" --runs 20 2>&1 | tee -a "$out/variants.log" |
  awk '/custom/ {print $1, $4, $5, $8, $10, $11}'
