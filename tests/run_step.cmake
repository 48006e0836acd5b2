# run(COMMAND...): one step of a test script; its output on success, a
# fatal error with the command and its output otherwise.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN}\nfailed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${out}${err}")
endfunction()

# pip_install(PYTHON SCRATCH REQUIREMENT...): pip install into PYTHON's
# environment with no download cache and its temporary files under SCRATCH
# (removed after), not in /tmp or the home folder: torch's wheels and their
# nvidia-* dependencies unpack to ~5 GB, which a small /tmp or a cache on
# another disk cannot hold.
function(pip_install python scratch)
  file(MAKE_DIRECTORY ${scratch})
  run(${CMAKE_COMMAND} -E env TMPDIR=${scratch} PIP_NO_CACHE_DIR=1
      ${python} -m pip install --quiet --disable-pip-version-check ${ARGN})
  file(REMOVE_RECURSE ${scratch})
endfunction()

# skip_unless_free(PYTHON DIR GIB WHAT): ends the test as skipped (the
# test's SKIP_REGULAR_EXPRESSION matches "moejit-test-skipped") when DIR's
# file system has less than GIB GiB free, as the GPU tests skip without a
# GPU: a machine that cannot hold WHAT cannot run the test, which says so.
macro(skip_unless_free python dir gib what)
  execute_process(COMMAND ${python} -c
                  "import shutil, sys; print(shutil.disk_usage(sys.argv[1]).free >> 30)" ${dir}
                  RESULT_VARIABLE _free_rc OUTPUT_VARIABLE _free_gib
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _free_rc EQUAL 0 OR NOT _free_gib MATCHES "^[0-9]+$")
    message(FATAL_ERROR "could not read the free space of ${dir} (${_free_rc}): ${_free_gib}")
  endif()
  if(_free_gib LESS ${gib})
    message("moejit-test-skipped: ${what} needs ${gib} GiB free on the disk of ${dir}, "
            "which has ${_free_gib} GiB")
    return()
  endif()
endmacro()
