set -u
BINS="moejit moejit-base" CASES="seed|128 512 2048 4096 8192;k=6,hidden=2048,intermediate=1408,experts=64|2048 8192" NCU_T=8192 OUT=$OUT/ab bash tools/bench/probe_round.sh > /dev/null 2>&1
mkdir -p $OUT/chk; c=$(mktemp -d)
for cfg in bm128_bn128_s4_wss:bm128_bn192_s4_wss bm128_bn64_s6_wss:bm128_bn128_s6_wss bm128_bn32_s8_wss:bm128_bn64_s8_wss; do
  for comb in deterministic fast; do
    MOEJIT_CACHE_DIR=$c timeout 60 ./build-gpu/moejit bench --config $cfg --combine $comb --tokens 1 --tokens 37 --tokens 300 --tokens 3000 --runs 3 2>&1 | grep -E " (yes|NO) " | sed "s/^/$cfg $comb /" >> $OUT/chk/configs.txt
  done
done
MOEJIT_CACHE_DIR=$c timeout 60 ./build-gpu/moejit bench --shape hidden=2056,intermediate=776,experts=16 --config bm128_bn128_s4_wss:bm128_bn256_s3_wss --tokens 37 --tokens 3000 --runs 3 2>&1 | grep -E " (yes|NO) " | sed "s/^/odd /" >> $OUT/chk/configs.txt
OUT=$OUT/san bash -c 'source tools/bench/round_env.sh; config_sanitizers bm128_bn128_s4_ws:bm128_bn256_s3_wss; config_sanitizers bm128_bn128_s4_wss:bm128_bn192_s4_wss; finish_round' > /dev/null 2>&1
MOEJIT_CACHE_DIR=$(mktemp -d) timeout 300 ./build-gpu/runtime_gpu_test > $OUT/chk/rt.log 2>&1; echo "runtime_gpu_test rc=$?" >> $OUT/chk/configs.txt
grep -E '^\[  (PASSED|FAILED) ' $OUT/chk/rt.log >> $OUT/chk/configs.txt
cat $OUT/ab/summary.txt | grep -v "^ab" ; cat $OUT/san/summary.txt $OUT/chk/configs.txt
