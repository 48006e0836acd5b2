#!/usr/bin/env bash
# On the GPU machine, over build-gpu/ (tools/bench/bundle.sh): the GPU test
# suite, the Python package (op and Transformers tests, the op's figures),
# an A/B of T=1, 128 and 8192 (E=128) against build-gpu/moejit-base where it
# exists (A B then B A, so that heat and drift hit both; one cache per binary,
# so only the first round compiles), the 13 seed cases as JSON (bench.json,
# for tools/bench/plot.py), the C ABI host, the tuner's tests, a memcheck
# pass over small cases and a racecheck of the warp-specialised GEMMs
# (WS_CONFIG). Each step has a time limit so that one call stays
# under the device tool's 10 minutes. Logs go to $OUT/logs.tar.gz; a
# summary is printed last.
set -uo pipefail
b=build-gpu
out=${OUT:-out}
logs=$(mktemp -d)
mkdir -p "$out"
cp $b/commit.txt "$logs/"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv \
  > "$logs/smi.txt" 2>&1
summary=$logs/summary.txt
cache_new=$(mktemp -d)
cache_base=$(mktemp -d)

MOEJIT_CACHE_DIR=$(mktemp -d) timeout 180 ./$b/runtime_gpu_test > "$logs/runtime_gpu_test.log" 2>&1
echo "runtime_gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$logs/runtime_gpu_test.log" |
  tr '\n' ' ')" >> "$summary"

# The Python package as bundle.sh lays it out (build-gpu/py: the sources and
# this build's libmoejit.so) with the machine's torch and transformers.
if [ -d $b/py ]; then
  site=$PWD/$b/py
  MOEJIT_CACHE_DIR=$(mktemp -d) PYTHONPATH=$site timeout 180 python3 tests/python/test_torch.py \
    > "$logs/python_torch.log" 2>&1
  echo "test_torch.py rc=$? $(tail -1 "$logs/python_torch.log")" >> "$summary"
  MOEJIT_CACHE_DIR=$cache_new PYTHONPATH=$site timeout 120 python3 tools/bench/torch_op.py \
    --json "$logs/torch_op.json" > "$logs/torch_op.log" 2>&1
  echo "torch_op.py rc=$?" >> "$summary"
  cat "$logs/torch_op.log" >> "$summary"
fi

# A B, then B A: the order within a round (first after the Python steps,
# or second) weighs on both alike.
order1=moejit order2=moejit
if [ -x $b/moejit-base ]; then
  order1="moejit moejit-base" order2="moejit-base moejit"
fi
for round in 1 2; do
  order=$order1
  [ $round = 2 ] && order=$order2
  for bin in $order; do
    cache=$cache_new
    [ $bin = moejit-base ] && cache=$cache_base
    MOEJIT_CACHE_DIR=$cache timeout 120 ./$b/$bin bench --tokens 1 --tokens 128 --tokens 8192 --runs 50 \
      > "$logs/ab_${round}_$bin.log" 2>&1
    awk -v tag="$round $bin" '/^custom/ {print tag, $2, $4, $5, $8, $9, $10}' \
      "$logs/ab_${round}_$bin.log" >> "$summary"
  done
done

MOEJIT_CACHE_DIR=$cache_new timeout 150 ./$b/moejit bench --json "$logs/bench.json" \
  > "$logs/bench_seed.log" 2>&1
echo "seed bench rc=$?" >> "$summary"
awk '/^t[0-9]+_e[0-9]+/ {print "seed", $1, $2, $3, $4, $5, $6}' "$logs/bench_seed.log" \
  >> "$summary"

# The C ABI host on a machine with a GPU (its runtime is created for real).
LD_LIBRARY_PATH=$b MOEJIT_LOG_LEVEL=info timeout 60 ./$b/c_abi_consumer "$(mktemp -d)/c_abi" \
  > "$logs/c_abi.log" 2>&1
echo "c_abi_consumer rc=$? $(tail -1 "$logs/c_abi.log")" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 150 ./$b/tune_gpu_test > "$logs/tune_gpu_test.log" 2>&1
echo "tune_gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$logs/tune_gpu_test.log" |
  tr '\n' ' ')" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 150 compute-sanitizer --tool memcheck --print-limit 5 \
  ./$b/runtime_gpu_test --gtest_filter='Tokens*:OddSizes*:Routings*outofrange*:Runtime.*' \
  > "$logs/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$logs/memcheck.log")" >> "$summary"

# racecheck is slow: the warp-specialised pipelines on a small shape.
ws=${WS_CONFIG:-bm128_bn128_s4_ws:bm128_bn256_s3_wss}
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 120 compute-sanitizer --tool racecheck --print-limit 5 \
  ./$b/moejit bench --tokens 5 --tokens 70 --shape hidden=256,intermediate=128,experts=8 \
  --config "$ws" --runs 1 > "$logs/racecheck.log" 2>&1
echo "racecheck $ws rc=$? $(grep -E 'RACECHECK SUMMARY' "$logs/racecheck.log")" >> "$summary"

tar czf "$out/logs.tar.gz" -C "$logs" .
cat "$summary"
