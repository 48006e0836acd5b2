# Session 22: the heuristic's plan against the shipped tables' at the
# buckets it changed (17..95 rows per expert), new build (moejit) and the
# previous heuristic (moejit-base), one bench per shape, --compare-heuristic.
set -u
mkdir -p $OUT
cases=("k=8,hidden=2048,intermediate=768,experts=128|512 1024"
  "k=6,hidden=2048,intermediate=1408,experts=64|256 512"
  "k=8,hidden=2048,intermediate=1024,experts=64|256 512"
  "k=8,hidden=4096,intermediate=1536,experts=128|512 1024"
  "k=2,hidden=4096,intermediate=14336,experts=8|128 256"
  "k=8,hidden=2048,intermediate=768,experts=64|256 512"
  "k=8,hidden=2048,intermediate=768,experts=8|32 64")
for bin in moejit moejit-base; do c=$(mktemp -d)
  for cs in "${cases[@]}"; do
    tok=""; for t in ${cs#*|}; do tok="$tok --tokens $t"; done
    MOEJIT_CACHE_DIR=$c timeout 40 ./build-gpu/$bin bench --shape ${cs%%|*} $tok --compare-heuristic --runs 20 2>&1 | grep -E " (yes|NO) " | awk -v b=$bin -v s=${cs%%|*} '{print b, s, $2, $4, $10, $NF}' >> $OUT/summary.txt
  done
done
cat $OUT/summary.txt
