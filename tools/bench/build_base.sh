#!/usr/bin/env bash
# Builds the `moejit` command of another commit, to A/B against
# (tools/bench/bundle.sh BINARY): a git worktree of COMMIT under
# ${TMPDIR:-/tmp}, configured without tests, only the command built.
# Prints the binary's path last. Run from the repository root.
#   bash tools/bench/build_base.sh 9b48ae5
set -euo pipefail
commit=$(git rev-parse --short "${1:?usage: build_base.sh COMMIT}")
dir=${TMPDIR:-/tmp}/moejit-base-$commit
[ -d "$dir" ] || git worktree add --detach "$dir" "$commit" >/dev/null
cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT=/usr/local/cuda \
  -DBUILD_TESTING=OFF -DMOEJIT_BUILD_TESTS=OFF >/dev/null
cmake --build "$dir/build" -j "$(nproc)" --target moejit_cli >/dev/null
echo "$dir/build/moejit"
