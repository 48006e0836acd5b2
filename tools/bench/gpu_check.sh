#!/usr/bin/env bash
# On the GPU machine, over build-gpu/ (tools/bench/bundle.sh): the GPU test
# suites, the C ABI host, a memcheck pass over the small cases, and, where
# build-gpu/moejit-base exists, an A/B of T=128 and T=8192 (E=128),
# alternating the two binaries twice so heat and drift hit both. Logs go to
# $OUT/logs.tar.gz; a summary is printed last.
set -uo pipefail
b=build-gpu
out=${OUT:-out}
logs=$(mktemp -d)
mkdir -p "$out"
cp $b/commit.txt "$logs/"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv \
  > "$logs/smi.txt" 2>&1
summary=$logs/summary.txt
for t in runtime_gpu_test tune_gpu_test; do
  MOEJIT_CACHE_DIR=$(mktemp -d) ./$b/$t > "$logs/$t.log" 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$logs/$t.log" | tr '\n' ' ')" >> "$summary"
done
# The C ABI host on a machine with a GPU (its runtime is created for real).
LD_LIBRARY_PATH=$b MOEJIT_LOG_LEVEL=info ./$b/c_abi_consumer "$(mktemp -d)/c_abi" \
  > "$logs/c_abi.log" 2>&1
echo "c_abi_consumer rc=$? $(tail -1 "$logs/c_abi.log")" >> "$summary"
MOEJIT_CACHE_DIR=$(mktemp -d) compute-sanitizer --tool memcheck --print-limit 5 \
  ./$b/runtime_gpu_test --gtest_filter='OddSizes*:KAndExperts*:Routings*outofrange*:Runtime.*' \
  > "$logs/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$logs/memcheck.log")" >> "$summary"
# The Python package from its wheel (build-gpu/*.whl), with the machine's
# torch and transformers: the op and backend tests, then the op's own
# figures and `moejit bench` at the same sizes.
wheel=$(ls $b/moejit-*.whl 2>/dev/null | head -1)
if [ -n "$wheel" ]; then
  site=$(mktemp -d)
  python3 -m zipfile -e "$wheel" "$site"
  MOEJIT_CACHE_DIR=$(mktemp -d) PYTHONPATH=$site python3 tests/python/test_torch.py \
    > "$logs/python_torch.log" 2>&1
  echo "test_torch.py rc=$? $(tail -1 "$logs/python_torch.log")" >> "$summary"
  cache=$(mktemp -d)
  MOEJIT_CACHE_DIR=$cache PYTHONPATH=$site python3 tools/bench/torch_op.py \
    --json "$logs/torch_op.json" > "$logs/torch_op.log" 2>&1
  echo "torch_op.py rc=$?" >> "$summary"
  cat "$logs/torch_op.log" >> "$summary"
  MOEJIT_CACHE_DIR=$cache ./$b/moejit bench --tokens 128 --tokens 8192 --runs 50 \
    > "$logs/bench_beside_op.log" 2>&1
  awk '/^custom/ {print "bench beside op", $2, $4, $5}' "$logs/bench_beside_op.log" >> "$summary"
fi
if [ -x $b/moejit-base ]; then
  for round in 1 2; do
    for bin in moejit moejit-base; do
      MOEJIT_CACHE_DIR=$(mktemp -d) ./$b/$bin bench --tokens 128 --tokens 8192 --runs 50 \
        > "$logs/ab_${round}_$bin.log" 2>&1
      awk -v tag="$round $bin" '/^custom/ {print tag, $2, $4, $5, $8, $9, $10}' \
        "$logs/ab_${round}_$bin.log" >> "$summary"
    done
  done
fi
tar czf "$out/logs.tar.gz" -C "$logs" .
cat "$summary"
