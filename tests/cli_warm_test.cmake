# Runs `moejit warm --arch sm_90a` twice on an empty cache: the first run
# compiles every kernel, the second finds all of them cached. Then checks
# that a bad target and a bad tile config are refused, and codegen prints.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${MOEJIT} warm --arch sm_90a --cache-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE first ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "first warm failed (${rc}): ${first} ${err}")
endif()
if(NOT first MATCHES "cache hits 0, misses ([1-9][0-9]*)")
  message(FATAL_ERROR "first warm should only miss: ${first}")
endif()
set(compiled ${CMAKE_MATCH_1})
execute_process(COMMAND ${MOEJIT} warm --arch sm_90a --cache-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE second ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT second MATCHES "cache hits ${compiled}, misses 0")
  message(FATAL_ERROR "second warm should only hit ${compiled}: ${second} ${err}")
endif()
execute_process(COMMAND ${MOEJIT} warm --arch sm_70 --cache-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "unsupported target 'sm_70'")
  message(FATAL_ERROR "sm_70 must be refused with a clear error: ${err}")
endif()
execute_process(COMMAND ${MOEJIT} codegen --kernel gemm1 --bm 192 --bn 96 --stages 4 --wgmma
                RESULT_VARIABLE rc OUTPUT_VARIABLE src ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT src MATCHES "moe_gemm1_bf16_k8_h2048_i768_e128_bm192_bn96_s4_wgmma")
  message(FATAL_ERROR "codegen should print the wgmma unit: ${src} ${err}")
endif()
execute_process(COMMAND ${MOEJIT} codegen --kernel gemm1 --bm 24
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "16-row warp tiles")
  message(FATAL_ERROR "an invalid tile config must be refused with its rule: ${err}")
endif()
# Presets: warming one compiles the kernels of its shipped H200 table too
# (mixtral's tuned T=65536 plan uses 256-row tiles the heuristic never picks).
execute_process(COMMAND ${MOEJIT} warm --arch sm_90a --model mixtral-8x7b --cache-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "k=2,hidden=4096,intermediate=14336,experts=8"
   OR NOT out MATCHES "moe_gemm1_bf16_k2_h4096_i14336_e8_bm256_bn96_s3_wgmma_f1")
  message(FATAL_ERROR "warm --model should warm the preset and its shipped table: ${out} ${err}")
endif()
execute_process(COMMAND ${MOEJIT} warm --arch sm_90a --model no-such-model --cache-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "unknown model 'no-such-model'")
  message(FATAL_ERROR "an unknown model must be refused by name: ${err}")
endif()
# --check (and MOEJIT_NO_COMPILE=1) compiles nothing: the warmed cache is
# complete; an empty one lists what is missing, exits 1 and stays empty.
execute_process(COMMAND ${MOEJIT} warm --check --arch sm_90a --cache-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "all ${compiled} kernels are in the cache")
  message(FATAL_ERROR "warm --check of the warmed cache: ${rc} ${out} ${err}")
endif()
foreach(check "--check" "MOEJIT_NO_COMPILE=1")
  if(check STREQUAL "--check")
    set(command ${MOEJIT} warm --check)
  else()
    set(command ${CMAKE_COMMAND} -E env ${check} ${MOEJIT} warm)
  endif()
  execute_process(COMMAND ${command} --arch sm_90a --cache-dir ${WORK}-empty
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT err MATCHES "${compiled} of ${compiled} kernels are missing"
     OR NOT err MATCHES "missing: no-compile mode: kernel moe_route_count" OR out MATCHES "compiles [1-9]")
    message(FATAL_ERROR "${check} of an empty cache must list the missing kernels and compile none: ${rc} ${out} ${err}")
  endif()
  if(EXISTS ${WORK}-empty)
    message(FATAL_ERROR "${check} created the cache root")
  endif()
endforeach()
