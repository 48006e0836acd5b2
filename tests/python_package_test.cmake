# `pip install SOURCE` into a fresh virtual environment in WORK (as a user
# would; the build backend comes from PyPI), then the package's tests with
# that environment's Python.
file(REMOVE_RECURSE ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN}\nfailed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${out}${err}")
endfunction()
run(${PYTHON} -m venv ${WORK}/venv)
run(${WORK}/venv/bin/python -m pip install --quiet ${SOURCE})
run(${WORK}/venv/bin/python ${SOURCE}/tests/python/test_package.py)
