# `pip install SOURCE` into a fresh virtual environment in WORK (as a user
# would; the build backend comes from PyPI), then the package's tests with
# that environment's Python. The environment is the fixture of the other
# Python tests: it gets matplotlib too, for tools/bench/plot.py (bench_plot).
file(REMOVE_RECURSE ${WORK})
include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)
run(${PYTHON} -m venv ${WORK}/venv)
pip_install(${WORK}/venv/bin/python ${WORK}/pip-scratch ${SOURCE} matplotlib)
run(${WORK}/venv/bin/python ${SOURCE}/tests/python/test_package.py)
# The wheel's own libmoejit.so (built by pip, not by this build) loads on
# glibc 2.35 and exports moejit's symbols alone, as the build's does.
file(GLOB wheel_library ${WORK}/venv/lib/python3*/site-packages/moejit/libmoejit.so)
if(NOT wheel_library)
  message(FATAL_ERROR "pip installed no moejit/libmoejit.so under ${WORK}/venv")
endif()
run(${CMAKE_COMMAND} -DBINARIES=${wheel_library} -P ${CMAKE_CURRENT_LIST_DIR}/glibc_versions_test.cmake)
run(${CMAKE_COMMAND} -DLIBRARY=${wheel_library} -P ${CMAKE_CURRENT_LIST_DIR}/exported_symbols_test.cmake)
