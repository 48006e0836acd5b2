#!/usr/bin/env bash
# Where the planner's kernels stall, instruction by instruction: ncu's
# warp-state sampling (SourceCounters) of the kernels matching KERNEL
# (default the GEMMs) at T tokens (default 8192), seed shape or SHAPE,
# over build-gpu/moejit. Keeps the report ($OUT/logs.tar.gz: stall.ncu-rep)
# and its source page as CSV with the SASS (stall_sass.csv), read off the
# GPU with any CSV tool. Logs come back however the call ends.
source "$(dirname "$0")/round_env.sh"
trap finish_round EXIT
export MOEJIT_CACHE_DIR=$(mktemp -d)
t=${T:-8192}
shape_arg=""
[ -n "${SHAPE:-}" ] && shape_arg="--shape $SHAPE"
./$b/moejit bench --tokens $t $shape_arg --runs 1 > "$logs/warm.log" 2>&1 # compile first
timeout ${NCU_LIMIT:-240} ncu --clock-control none -k regex:"${KERNEL:-moe_gemm}" -c ${COUNT:-2} \
  --section SourceCounters --section WarpStateStats --section SpeedOfLight \
  -o "$logs/stall" ./$b/moejit bench --tokens $t $shape_arg --runs 1 > "$logs/ncu.log" 2>&1
echo "ncu rc=$?" >> "$summary"
ncu -i "$logs/stall.ncu-rep" --page source --csv --print-source sass > "$logs/stall_sass.csv" 2>&1
echo "source page rc=$? $(wc -l < "$logs/stall_sass.csv") lines" >> "$summary"
ncu -i "$logs/stall.ncu-rep" --page details > "$logs/details.txt" 2>&1
grep -E "^  moe_|Duration|Warp Cycles Per Issued|Stall" "$logs/details.txt" | head -60 >> "$summary"
