#!/usr/bin/env bash
# Installs what moejit needs on Debian 12 (CUDA 13 toolkit expected in
# /usr/local/cuda) and builds it into ./build. Run from the repository root.
set -euo pipefail
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends \
  cmake make g++ pkg-config python3 python3-venv python3-pip \
  llvm-14-dev libspdlog-dev libfmt-dev libgtest-dev libcli11-dev >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT=/usr/local/cuda
cmake --build build -j "$(nproc)"
