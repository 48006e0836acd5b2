# Session 22: re-tune the seed shape's table (qwen3-30b-a3b) with the
# stmatrix epilogue, then the seed cases with the new record against the
# shipped table, interleaved (one cache root each).
set -u
mkdir -p $OUT; root=$(mktemp -d); shipped=$(mktemp -d)
MOEJIT_CACHE_DIR=$root timeout 120 ./build-gpu/moejit warm --tune --model qwen3-30b-a3b > $OUT/tune.log 2>&1
echo "tune rc=$?" >> $OUT/summary.txt
grep -E "bucket [0-9]+" $OUT/tune.log >> $OUT/summary.txt
[ -d $root/tuning ] && tar -C $root -cf $OUT/records.tar tuning
for r in 0 1; do for c in $root $shipped; do
  tag=new; [ $c = $shipped ] && tag=shipped
  MOEJIT_CACHE_DIR=$c timeout 60 ./build-gpu/moejit bench --tokens 128 --tokens 512 --tokens 2048 --tokens 4096 --tokens 8192 --runs 20 2>&1 | grep -E " (yes|NO) " | awk -v t=$tag '{print "ab", t, $2, $4, $9, $10, $NF}' >> $OUT/summary.txt
done; done
cat $OUT/summary.txt
