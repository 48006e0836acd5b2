# Into the virtual environment python_package made (WORK/venv): torch and
# transformers from PyPI, pinned to the versions of the H200 machine; then
# the torch op and Transformers backend tests, which on a machine without
# a GPU run the op's PyTorch reference through the same argument checks,
# opcheck and compile trace; then expert parallelism on gloo (1-3
# processes) and the example under torchrun with two CPU processes.
include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)
# torch 2.11 and transformers 5.17 install to ~5 GB and peak ~2.6 GB more
# while pip unpacks them (measured on Debian 12, Python 3.11).
skip_unless_free(${WORK}/venv/bin/python ${WORK} 9 "installing torch and transformers")
pip_install(${WORK}/venv/bin/python ${WORK}/pip-scratch "torch==2.11.*" "transformers==5.17.*")
run(${WORK}/venv/bin/python ${SOURCE}/tests/python/test_torch.py)
run(${WORK}/venv/bin/python ${SOURCE}/tests/python/test_distributed.py)
run(${WORK}/venv/bin/python -m torch.distributed.run --standalone --nproc-per-node 2
    ${SOURCE}/examples/expert_parallel.py --backend gloo --uneven --tokens 24 --hidden 128
    --intermediate 64 --experts 9 --top-k 3 --steps 2)
