# Into the virtual environment python_package made (WORK/venv): torch and
# transformers from PyPI, pinned to the versions of the H200 machine, and
# matplotlib for tools/bench/plot.py; then the torch op and Transformers
# backend tests, which on a machine without a GPU run the op's PyTorch
# reference through the same argument checks, opcheck and compile trace.
include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)
run(${WORK}/venv/bin/python -m pip install --quiet "torch==2.11.*" "transformers==5.17.*"
    matplotlib)
run(${WORK}/venv/bin/python ${SOURCE}/tests/python/test_torch.py)
