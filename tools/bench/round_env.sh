# Sourced by the GPU-machine round scripts (ws_round.sh, ws_profile.sh,
# route_round.sh): strict mode, the bundle folder ($b), $OUT ($out), a
# scratch folder for logs ($logs, packed by finish_round) and the summary,
# kept in $OUT from the start so that it comes back even if the call is
# cut short.
set -uo pipefail
b=build-gpu
out=${OUT:-out}
logs=$(mktemp -d)
mkdir -p "$out"
summary=$out/summary.txt
cp $b/commit.txt "$logs/"

# Packs the logs into $OUT/logs.tar.gz and prints the summary.
finish_round() {
  tar czf "$out/logs.tar.gz" -C "$logs" .
  cat "$summary"
}
