#!/usr/bin/env bash
# Builds the `moejit` command of another commit, to A/B against
# (tools/bench/bundle.sh BINARY): a git worktree of COMMIT under
# ${TMPDIR:-/tmp}, configured without tests, only the command built;
# with a patch (a variant kept in tools/bench/runs/*.diff), that patch
# applied on COMMIT, in a worktree of its own. Prints the binary's path
# last. Run from the repository root.
#   bash tools/bench/build_base.sh 9b48ae5
#   bash tools/bench/build_base.sh HEAD tools/bench/runs/fast_silu_s21.diff
set -euo pipefail
commit=$(git rev-parse --short "${1:?usage: build_base.sh COMMIT [PATCH]}")
patch=${2:-}
dir=${TMPDIR:-/tmp}/moejit-base-$commit
[ -z "$patch" ] || dir=$dir-$(basename "$patch" .diff)
if [ ! -d "$dir" ]; then
  git worktree add --detach "$dir" "$commit" >/dev/null
  [ -z "$patch" ] || git -C "$dir" apply "$(realpath "$patch")"
fi
cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT=/usr/local/cuda \
  -DBUILD_TESTING=OFF -DMOEJIT_BUILD_TESTS=OFF >/dev/null
cmake --build "$dir/build" -j "$(nproc)" --target moejit_cli >/dev/null
echo "$dir/build/moejit"
