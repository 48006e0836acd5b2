#!/usr/bin/env bash
# Packs what a GPU check needs into build-gpu/ (ignored; carry it, the whole
# build/ folder is over the device tool's 64 MiB): the CLI, the GPU test
# binaries, the C ABI host with libmoejit.so, the Python package as a folder
# (build-gpu/py) and, with an argument, a second CLI to A/B against
# (build-gpu/moejit-base).
# Run from the repository root after a build.
set -euo pipefail
rm -rf build-gpu && mkdir -p build-gpu
cp build/moejit build/tests/runtime_gpu_test build/tests/tune_gpu_test \
  build/tests/c_abi_consumer build-gpu/
cp -P build/libmoejit.so* build-gpu/
[ $# -eq 0 ] || cp "$1" build-gpu/moejit-base
# The Python package as a folder for PYTHONPATH (build-gpu/py): the
# sources, this build's libmoejit.so, _build_info.py as CMake would write it.
mkdir -p build-gpu/py
cp -r python/moejit build-gpu/py/
find build-gpu/py -name __pycache__ -prune -exec rm -rf {} +
cp -L build/libmoejit.so build-gpu/py/moejit/libmoejit.so
cuda_version=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' /usr/local/cuda/include/cuda.h)
sed "s/@CUDAToolkit_VERSION_MAJOR@/$((cuda_version / 1000))/" \
  python/moejit/_build_info.py.in > build-gpu/py/moejit/_build_info.py
rm build-gpu/py/moejit/_build_info.py.in
git log --oneline -1 > build-gpu/commit.txt
du -sh build-gpu
