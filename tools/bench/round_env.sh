# Sourced by the GPU-machine round scripts (ws_round.sh, ws_profile.sh,
# route_round.sh, ws_ab_round.sh, combine_round.sh, presets_round.sh):
# strict mode, the bundle folder ($b), $OUT ($out), a scratch folder for
# logs ($logs, packed by finish_round) and the summary,
# kept in $OUT from the start so that it comes back even if the call is
# cut short.
set -uo pipefail
b=build-gpu
out=${OUT:-out}
logs=$(mktemp -d)
mkdir -p "$out"
summary=$out/summary.txt
cp $b/commit.txt "$logs/"

# An ABBA A/B of `bench --tokens T ... --runs 30` for each T of $1 between
# build-gpu/moejit (cache $cache) and build-gpu/moejit-base ($cache_base),
# each call limited to $2 seconds: "ab BINARY T ms rel-err correct" lines.
ab_rounds() {
  local tokens="" t order bin c
  for t in $1; do tokens="$tokens --tokens $t"; done
  for order in "moejit moejit-base" "moejit-base moejit"; do
    for bin in $order; do
      c=$cache
      [ $bin = moejit-base ] && c=$cache_base
      MOEJIT_CACHE_DIR=$c timeout "$2" ./$b/$bin bench $tokens --runs 30 > "$logs/ab_$bin.log" 2>&1
      awk -v tag="ab $bin" '/^custom/ {print tag, $2, $4, $9, $10}' "$logs/ab_$bin.log" >> "$summary"
    done
  done
}

# compute-sanitizer memcheck and synccheck (T=37 and 300, seed shape) and
# racecheck (T=5 on a small shape: it is slow) on one G1:G2 config.
config_sanitizers() {
  local tool
  for tool in memcheck synccheck; do
    timeout 90 compute-sanitizer --tool $tool --print-limit 5 ./$b/moejit bench --tokens 37 \
      --tokens 300 --config "$1" --runs 1 > "$logs/$tool.log" 2>&1
    echo "$tool $1 rc=$? $(grep -E 'ERROR SUMMARY' "$logs/$tool.log")" >> "$summary"
  done
  timeout 120 compute-sanitizer --tool racecheck --print-limit 5 ./$b/moejit bench --tokens 5 \
    --shape hidden=256,intermediate=128,experts=8 --config "$1" --runs 1 \
    > "$logs/racecheck.log" 2>&1
  echo "racecheck $1 rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$logs/racecheck.log" |
    tr '\n' ' ')" >> "$summary"
}

# The checks a kernel change lands on: the GPU suite with debug pipelines (a
# wait that never ends traps after 10 s) under a limit of $1 seconds
# (default 450: 70 tests took over 300 s in session 44), then the three
# sanitizers on a ws and a swap-AB config.
landing_checks() {
  MOEJIT_DEBUG_PIPELINES=1 gpu_suite runtime runtime_gpu_test "${1:-450}"
  local cfg
  for cfg in bm128_bn128_s4_wss:bm128_bn256_s3_wss bm32_bn64_s9_swap:bm64_bn128_s7_swap; do
    config_sanitizers $cfg
  done
}

# One GPU test binary under a limit: gpu_suite LABEL BINARY LIMIT [gtest
# args]; "LABEL rc=... ok N failed M" (and the first failures) in the
# summary, which is copied into the logs so that a call cut short keeps it.
gpu_suite() {
  local label=$1 bin=$2 limit=$3
  shift 3
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout "$limit" ./$b/$bin "$@" > "$logs/$label.log" 2>&1
  echo "$label rc=$? $SECONDS s ok $(grep -c '^\[       OK \]' "$logs/$label.log")" \
    "failed $(grep -c '^\[  FAILED  \]' "$logs/$label.log")" >> "$summary"
  grep -E '^\[  FAILED  \]' "$logs/$label.log" | head -5 >> "$summary"
  cp "$summary" "$logs/summary_at_$label.txt"
}

# Builds of `moejit` interleaved (multi_ab.sh; RUNS, ROUNDS and CASE_LIMIT
# from the caller's environment, else 30 runs, 2 rounds, 60 s a case):
# ab_interleaved "BIN BIN..." "CASES" (multi_ab.sh's form); its "ab ..."
# and "mean ..." lines join the summary, its logs come back in $OUT/ab.
ab_interleaved() {
  OUT=$out/ab BINS="$1" RUNS=${RUNS:-30} ROUNDS=${ROUNDS:-2} CASE_LIMIT=${CASE_LIMIT:-60} \
    CASES="$2" bash "$(dirname "${BASH_SOURCE[0]}")/multi_ab.sh" > /dev/null 2> "$logs/ab.err"
  echo "ab $SECONDS s" >> "$summary"
  grep -E "^(ab|mean) " "$out/ab/summary.txt" >> "$summary"
}

# The card's name into the summary; on an H200 the issue's done-when
# figures of build-gpu/BIN ($1) on a cold card, before anything else runs:
# the 13 seed cases ($OUT/bench.json), the headline in fast mode, mixtral
# at T=4096 (without $2 = nomixtral). Other cards run nothing here.
card_and_done_when() {
  nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > "$logs/smi.txt" 2>&1
  cat "$logs/smi.txt" >> "$summary"
  grep -q H200 "$logs/smi.txt" || return 0
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 150 ./$b/$1 bench --json "$out/bench.json" > "$logs/bench.log" 2>&1
  echo "seed bench ($1) rc=$?" >> "$summary"
  grep -E ' (yes|NO) ' "$logs/bench.log" >> "$summary"
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/$1 bench --combine fast --tokens 8192 --runs 30 > "$logs/fast.log" 2>&1
  grep -E " (yes|NO) " "$logs/fast.log" >> "$summary"
  [ "${2:-}" = nomixtral ] && return 0
  MOEJIT_CACHE_DIR=$(mktemp -d) timeout 60 ./$b/$1 bench --shape k=2,hidden=4096,intermediate=14336,experts=8 \
    --tokens 4096 --runs 20 > "$logs/mixtral.log" 2>&1
  grep -E " (yes|NO) " "$logs/mixtral.log" >> "$summary"
}

# The card's name into the summary; on an H200 the done-when round
# (runs/s46/next.sh: the figures on a cold card, the presets against
# 6caa88e) takes the call over instead of the caller's script.
card_or_done_when_round() {
  nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> "$summary"
  grep -q H200 "$summary" || return 0
  trap - EXIT
  exec bash "$(dirname "${BASH_SOURCE[0]}")/runs/s46/next.sh"
}

# Packs the logs into $OUT/logs.tar.gz and prints the summary.
finish_round() {
  tar czf "$out/logs.tar.gz" -C "$logs" .
  cat "$summary"
}
