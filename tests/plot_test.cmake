# Runs tools/bench/plot.py on a sample `moejit bench --json` output and
# checks that it writes a real PNG, and that bad inputs exit 2 (its usage
# error code) rather than crashing or writing a file.
#   cmake -DPYTHON=<python with matplotlib> -DSCRIPT=tools/bench/plot.py
#         -DSAMPLE=tools/bench/runs/final_seed_head.json -DWORK=<dir> -P plot_test.cmake
foreach(var PYTHON SCRIPT SAMPLE WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "plot_test.cmake needs -D${var}=...")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

set(png ${WORK}/bench.png)
execute_process(COMMAND ${PYTHON} ${SCRIPT} -o ${png} ${SAMPLE} ${SAMPLE} --label first second
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "plot.py failed (${rc}): ${out} ${err}")
endif()
if(NOT EXISTS ${png})
  message(FATAL_ERROR "plot.py exited 0 but wrote no ${png}: ${out} ${err}")
endif()
# The PNG signature: \x89 P N G \r \n \x1a \n.
file(READ ${png} magic LIMIT 8 HEX)
if(NOT magic STREQUAL "89504e470d0a1a0a")
  message(FATAL_ERROR "${png} is not a PNG (first bytes ${magic})")
endif()

# A missing input and a file that is not JSON: exit 2, a message naming the
# file, and no output left behind.
file(WRITE ${WORK}/bad.json "{not json")
foreach(input ${WORK}/missing.json ${WORK}/bad.json)
  set(none ${WORK}/none.png)
  execute_process(COMMAND ${PYTHON} ${SCRIPT} -o ${none} ${input}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(FIND "${err}" "${input}" named)  # FIND, not MATCHES: paths aren't regexes
  if(NOT rc EQUAL 2 OR NOT err MATCHES "plot.py: error: " OR named EQUAL -1)
    message(FATAL_ERROR "${input} should exit 2 with a clear error, got ${rc}: ${out} ${err}")
  endif()
  if(EXISTS ${none})
    message(FATAL_ERROR "${input} was refused but ${none} was written anyway")
  endif()
endforeach()
