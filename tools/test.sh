#!/usr/bin/env bash
# Every test, after tools/setup.sh: the Release build's suite (GPU tests skip
# with a message where there is no GPU), then the CPU tests once more in an
# ASan + UBSan build (build-asan/; any report fails the test). Run from the
# repository root.
set -euo pipefail
ctest --test-dir build --output-on-failure
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMOEJIT_SANITIZE=address,undefined -DCUDAToolkit_ROOT=/usr/local/cuda
cmake --build build-asan -j "$(nproc)"
ctest --test-dir build-asan -LE "gpu|consumer" --output-on-failure
