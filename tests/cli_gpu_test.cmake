# The moejit command on GPU 0 (skipped without one): bench --jit started
# through PATH, whose new processes once ran argv[0], a bare name that LLVM
# does not look up ("jit-probe failed (-1): Executable "moejit" doesn't
# exist!"); bench --json to a full disk, which aborted in LLVM's stream
# destructor (exit 134) instead of saying so; warm --tune for a --gpu that
# is not GPU 0; bench of a case larger than the GPU.
# MOEJIT: the binary; WORK: a scratch folder.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${MOEJIT} info OUTPUT_VARIABLE info)
if(NOT info MATCHES "\ngpus: [1-9]")
  message("moejit-test-skipped: no GPU: ${info}")
  return()
endif()
set(shape "k=2,hidden=256,intermediate=128,experts=8")

get_filename_component(bin ${MOEJIT} DIRECTORY)
get_filename_component(name ${MOEJIT} NAME)
execute_process(COMMAND ${CMAKE_COMMAND} -E env "PATH=${bin}:$ENV{PATH}" MOEJIT_CACHE_DIR=${WORK}/cache
                        ${name} bench --jit --shape ${shape} --processes 2
                WORKING_DIRECTORY ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\n${shape},dtype=bf16 +[0-9.]+ +[0-9]+ +[0-9.]+ ")
  message(FATAL_ERROR "moejit bench --jit, started through PATH, should time its new processes: ${rc} ${out}${err}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -E env MOEJIT_CACHE_DIR=${WORK}/cache
                        ${MOEJIT} bench --tokens 16 --shape ${shape} --runs 2 --json /dev/full
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "(^|\n)moejit: error: cannot write /dev/full: No space left on device\n$")
  message(FATAL_ERROR "bench --json /dev/full should exit 1 with one line: ${rc} ${out}${err}")
endif()

# warm --tune with --gpu naming another card: the record would be GPU 0's
# and the plans warmed the named card's, so it is refused before tuning.
execute_process(COMMAND ${CMAKE_COMMAND} -E env MOEJIT_CACHE_DIR=${WORK}/cache
                        ${MOEJIT} warm --tune --shape ${shape} --gpu "Not This GPU"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "--tune runs on GPU 0, which is '.+', not 'Not This GPU'")
  message(FATAL_ERROR "warm --tune --gpu OTHER should be refused: ${rc} ${out}${err}")
endif()

# A case that cannot fit the GPU (3 * 2^44 weight elements) is refused before
# its host tensors are filled (they were, for minutes, before the device
# allocation failed or the OOM killer came).
execute_process(COMMAND ${CMAKE_COMMAND} -E env MOEJIT_CACHE_DIR=${WORK}/cache
                        ${MOEJIT} bench --tokens 1
                        --shape k=8,hidden=65536,intermediate=65536,experts=4096
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "needs [0-9.]+ GiB of GPU memory before its workspace; the GPU has")
  message(FATAL_ERROR "bench of a case larger than the GPU should be refused: ${rc} ${out}${err}")
endif()
