#!/usr/bin/env bash
# Builds what runs/s34/next_call.sh needs, here (2 cores: ~20 minutes):
# main's bundle (build-gpu/, tools/bench/bundle.sh), then the branch
# quick-routing as this folder's quick-routing.patch on main, in its own
# work tree (../qr, build ../qr/build), whose CLI and GPU tests join the
# bundle as moejit-quick and runtime_gpu_test_quick. Run from the
# repository root after tools/setup.sh.
set -euo pipefail
cmake --build build -j "$(nproc)"
bash tools/bench/bundle.sh
tree=$(realpath ..)/qr
git worktree remove --force "$tree" 2>/dev/null || true
git worktree add --detach "$tree" HEAD
git -C "$tree" apply "$(realpath tools/bench/runs/s34/quick-routing.patch)"
cmake -S "$tree" -B "$tree/build" -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT=/usr/local/cuda
cmake --build "$tree/build" -j "$(nproc)" --target moejit_cli runtime_gpu_test
cp "$tree/build/moejit" build-gpu/moejit-quick
cp "$tree/build/tests/runtime_gpu_test" build-gpu/runtime_gpu_test_quick
echo "quick-routing: $(git log --oneline -1) + runs/s34/quick-routing.patch" >> build-gpu/commit.txt
du -sh build-gpu
