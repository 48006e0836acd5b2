# run(COMMAND...): one step of a test script; its output on success, a
# fatal error with the command and its output otherwise.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN}\nfailed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${out}${err}")
endfunction()
