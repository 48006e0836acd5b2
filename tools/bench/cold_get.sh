#!/usr/bin/env bash
# Cold get of the seed shape on this machine, no GPU needed: each binary
# given (a `moejit` CLI) runs `warm --arch sm_90a` into an empty cache, the
# binaries interleaved, RUNS rounds (default 3). One line per run: binary,
# wall s, CPU s (user + sys), kernels compiled. Run on an idle machine:
# the wall is what the issue's "under 1 s on the 2-core machine" reads.
#   bash tools/bench/cold_get.sh build/moejit /tmp/moejit-other
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: cold_get.sh MOEJIT..." >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for ((r = 0; r < ${RUNS:-3}; r++)); do
  for bin in "$@"; do
    root=$scratch/cache
    rm -rf "$root"
    TIMEFORMAT='%R %U %S'
    # A binary whose warm fails (a kernel refused, an older CLI without
    # --json) gets a line saying so; the others still run.
    rc=0
    { time MOEJIT_CACHE_DIR=$root "$bin" warm --arch sm_90a --json > "$scratch/warm.json" \
        2> "$scratch/err"; } 2> "$scratch/time" || rc=$?
    if [ $rc -ne 0 ]; then
      printf '%s failed rc=%s: %s\n' "$bin" $rc "$(tail -1 "$scratch/err")"
      continue
    fi
    read -r wall user sys < "$scratch/time"
    compiled=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(d["cache"]["compiles"])' "$scratch/warm.json" 2>/dev/null || echo "?")
    printf '%s wall %s cpu %.2f compiled %s\n' "$bin" "$wall" "$(echo "$user + $sys" | bc)" \
      "$compiled"
  done
done
