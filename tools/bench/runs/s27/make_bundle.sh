#!/usr/bin/env bash
# Packs build-gpu/ for session 27's two device calls (run from the
# repository root after building build/ at the landing commit):
#   build-gpu/main/        this commit's CLI and GPU tests (round_main.sh)
#   build-gpu/warm-cache/  the seed cases' shapes warmed here, on 2 cores, so
#                          the kernels in it were compiled several to an
#                          NVRTC program (what round_main.sh loads)
#   build-gpu/moejit, runtime_gpu_test, tune_gpu_test: this commit with
#   runs/s26/tile_claims.diff; build-gpu/moejit-base: this commit
#                          (runs/s26/claims_round.sh)
set -euo pipefail
commit=$(git rev-parse --short HEAD)
dir=${TMPDIR:-/tmp}/moejit-claims-$commit
if [ ! -d "$dir" ]; then
  git worktree add --detach "$dir" "$commit" >/dev/null
  git -C "$dir" apply "$(realpath tools/bench/runs/s26/tile_claims.diff)"
fi
cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT=/usr/local/cuda >/dev/null
cmake --build "$dir/build" -j "$(nproc)" --target moejit_cli runtime_gpu_test tune_gpu_test >/dev/null
bash tools/bench/bundle.sh build/moejit >/dev/null
mkdir -p build-gpu/main
mv build-gpu/runtime_gpu_test build-gpu/tune_gpu_test build-gpu/main/
cp build/moejit build-gpu/main/moejit
cp "$dir/build/moejit" build-gpu/moejit
cp "$dir/build/tests/runtime_gpu_test" "$dir/build/tests/tune_gpu_test" build-gpu/
rm -rf build-gpu/warm-cache
for e in 128 8 16 32 64; do
  build/moejit warm --arch sm_90a --gpu 'NVIDIA H200' --shape experts=$e \
    --cache-dir build-gpu/warm-cache | tail -1
done
echo "$commit (main, build-gpu/main and moejit-base) + runs/s26/tile_claims.diff (moejit, tests)" \
  > build-gpu/commit.txt
du -sh build-gpu
