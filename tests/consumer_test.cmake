# Builds and runs tests/consumer the way a user would, in WORK:
#   MODE=find_package: cmake --install BUILD to WORK/prefix, then find_package
#   MODE=pkgconfig:    the same install, then c++ with `pkg-config moejit`
#   MODE=subdirectory: add_subdirectory(SOURCE) in a fresh project
# Each program must print moejit's version and either a device or the typed
# NoDevice error.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(prefix ${WORK}/prefix)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN}\nfailed (${rc}):\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

function(check_program program)
  run(${program})
  if(NOT out MATCHES "moejit ${VERSION}\n" OR NOT out MATCHES "(device 0: |error 5: )")
    message(FATAL_ERROR "${program} printed:\n${out}")
  endif()
  message(STATUS "${program}: ${out}")
endfunction()

if(MODE STREQUAL "find_package" OR MODE STREQUAL "pkgconfig")
  run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix})
  foreach(f include/moejit/moejit.hpp lib/libmoejit.so lib/libmoejit.a
            lib/cmake/moejit/moejitConfig.cmake lib/cmake/moejit/moejitConfigVersion.cmake
            lib/pkgconfig/moejit.pc)
    if(NOT EXISTS ${prefix}/${f})
      message(FATAL_ERROR "cmake --install did not install ${f}")
    endif()
  endforeach()
endif()

if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} -S ${SOURCE}/tests/consumer -B ${WORK}/build -DMOEJIT_CONSUME=find_package
      -DCMAKE_PREFIX_PATH=${prefix})
  run(${CMAKE_COMMAND} --build ${WORK}/build)
  check_program(${WORK}/build/consumer_shared)
  check_program(${WORK}/build/consumer_static)
elseif(MODE STREQUAL "pkgconfig")
  set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
  run(pkg-config --cflags --libs moejit)
  string(STRIP "${out}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run(c++ -std=c++17 ${SOURCE}/tests/consumer/main.cpp ${flags} -o ${WORK}/consumer_pc)
  check_program(${WORK}/consumer_pc)
elseif(MODE STREQUAL "subdirectory")
  run(${CMAKE_COMMAND} -S ${SOURCE}/tests/consumer -B ${WORK}/build
      -DMOEJIT_CONSUME=subdirectory -DMOEJIT_SOURCE_DIR=${SOURCE}
      -DCUDAToolkit_ROOT=${CUDA_ROOT} -DCMAKE_BUILD_TYPE=Release)
  run(${CMAKE_COMMAND} --build ${WORK}/build -j ${JOBS})
  check_program(${WORK}/build/consumer_shared)
  check_program(${WORK}/build/consumer_static)
else()
  message(FATAL_ERROR "unknown MODE ${MODE}")
endif()
