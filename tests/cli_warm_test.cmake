# Runs `moejit warm --arch sm_90a` twice on an empty cache: the first run
# compiles every kernel (printing progress), the second finds all of them
# cached; --json, --gpu and `cache list` on the warmed cache. Then checks
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
# Where the plans come from, and progress as it happens: piped, one flushed
# line per kernel (no live '\r' line), each named as it is done, with its
# NVRTC program's time (and how many kernels shared the program).
set(seed "k=8,hidden=2048,intermediate=768,experts=128,dtype=bf16")
string(REGEX MATCHALL "\n  \\[[0-9]+/${compiled}\\] compiled moe_[a-z0-9_]+ \\([0-9]+ ms(, one program of [2-9][0-9]* kernels)?\\)"
       progress_lines "${first}")
list(LENGTH progress_lines progress_count)
# The seed shape ships no table: its tuned plans are the heuristic's.
if(NOT first MATCHES "\\[1/1\\] ${seed}  \\(workload [0-9a-f]+\\)\n  plans: heuristic \\(no shipped table for this workload on sm_90a\\)\n"
   OR NOT progress_count EQUAL compiled
   OR NOT first MATCHES "\n  \\[${compiled}/${compiled}\\] compiled moe_"
   OR first MATCHES "\r")
  message(FATAL_ERROR "first warm should name its plans and print one progress line per kernel "
                      "(${progress_count} of ${compiled}): ${first}")
endif()
execute_process(COMMAND ${MOEJIT} warm --arch sm_90a --cache-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE second ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT second MATCHES "cache hits ${compiled}, misses 0")
  message(FATAL_ERROR "second warm should only hit ${compiled}: ${second} ${err}")
endif()
# --json: one document on stdout (progress on stderr) listing every kernel.
execute_process(COMMAND ${MOEJIT} warm --json --arch sm_90a --cache-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE json ERROR_VARIABLE err)
string(JSON kernels ERROR_VARIABLE json_error LENGTH "${json}" shapes 0 kernels)
if(NOT rc EQUAL 0 OR json_error OR NOT kernels EQUAL compiled
   OR NOT err MATCHES "\\[${compiled}/${compiled}\\] cached moe_")
  message(FATAL_ERROR "warm --json should list ${compiled} kernels: ${rc} ${json_error} ${json} ${err}")
endif()
string(JSON shape GET "${json}" shapes 0 shape)
string(JSON status GET "${json}" shapes 0 kernels 0 status)
string(JSON name GET "${json}" shapes 0 kernels 0 name)
string(JSON hits GET "${json}" cache hits)
string(JSON plan GET "${json}" shapes 0 plans 0)
if(NOT shape STREQUAL seed OR NOT status STREQUAL "cached" OR NOT name MATCHES "^moe_route_count_"
   OR NOT hits EQUAL compiled OR NOT plan STREQUAL "heuristic (no shipped table for this workload on sm_90a)")
  message(FATAL_ERROR "warm --json of a warmed cache: ${json}")
endif()
# A document or report that cannot be written (a full disk) fails the warm:
# exit 1 and one line saying so, never LLVM's abort (exit 134).
foreach(mode "--json" "--check")
  execute_process(COMMAND ${MOEJIT} warm ${mode} --arch sm_90a --cache-dir ${WORK}
                  OUTPUT_FILE /dev/full RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT err MATCHES "(^|\n)moejit: error: writing stdout: No space left on device\n$")
    message(FATAL_ERROR "warm ${mode} > /dev/full should exit 1 saying why: ${rc} ${err}")
  endif()
endforeach()
# --gpu NAME: a name no shipped table has is warned about, with the names
# that do; its tuned plan is the heuristic's (all cached already).
execute_process(COMMAND ${MOEJIT} warm --gpu NOPE --arch sm_90a --cache-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err MATCHES "warning: --gpu 'NOPE' matches no shipped tuning table \\(shipped tables are for 'NVIDIA H100 80GB HBM3', 'NVIDIA H200'\\)"
   OR NOT out MATCHES "plans: heuristic \\(no tuning record or shipped table for NOPE\\)\n")
  message(FATAL_ERROR "warm --gpu NOPE should warn and list the shipped names: ${rc} ${out} ${err}")
endif()
execute_process(COMMAND ${MOEJIT} warm --gpu "NVIDIA H200" --arch sm_90a --cache-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR err MATCHES "warning"
   OR NOT out MATCHES "plans: heuristic \\(no tuning record or shipped table for NVIDIA H200\\)\n")
  message(FATAL_ERROR "warm --gpu 'NVIDIA H200' of the seed shape (no table) is the heuristic's: ${rc} ${out} ${err}")
endif()
# The seed shape at E=8 ships an H200 table (warmed into a cache of its own:
# the one above is listed below with its two workloads).
file(REMOVE_RECURSE ${WORK}_e8)
execute_process(COMMAND ${MOEJIT} warm --gpu "NVIDIA H200" --shape experts=8 --arch sm_90a
                        --cache-dir ${WORK}_e8
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(REMOVE_RECURSE ${WORK}_e8)
if(NOT rc EQUAL 0 OR err MATCHES "warning" OR NOT out MATCHES "plans: heuristic, shipped table for NVIDIA H200\n")
  message(FATAL_ERROR "warm --gpu 'NVIDIA H200' should use its shipped table: ${rc} ${out} ${err}")
endif()
# Without a GPU and without --arch there is no target: say to pass --arch.
execute_process(COMMAND ${MOEJIT} info OUTPUT_VARIABLE info)
if(info MATCHES "\ngpus: 0\n")
  execute_process(COMMAND ${MOEJIT} warm --cache-dir ${WORK}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT err MATCHES "pass --arch \\(e.g. --arch sm_90a\\)")
    message(FATAL_ERROR "a GPU-less warm without --arch should say to pass --arch: ${rc} ${err}")
  endif()
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
# (mixtral's tuned T=8192 and 65536 plans stage GEMM1's epilogue, which the
# heuristic never does).
execute_process(COMMAND ${MOEJIT} warm --arch sm_90a --model mixtral-8x7b --cache-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "k=2,hidden=4096,intermediate=14336,experts=8"
   OR NOT out MATCHES "moe_gemm1_bf16_k2_h4096_i14336_e8_bm128_bn128_s4_wss")
  message(FATAL_ERROR "warm --model should warm the preset and its shipped table: ${out} ${err}")
endif()
# cache list shows each workload's shape (text and --json), recovered from
# its entries' kernel names.
execute_process(COMMAND ${MOEJIT} cache list --cache-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\n  shape ${seed}\n"
   OR NOT out MATCHES "\n  shape k=2,hidden=4096,intermediate=14336,experts=8,dtype=bf16\n")
  message(FATAL_ERROR "cache list should show the shapes: ${rc} ${out} ${err}")
endif()
execute_process(COMMAND ${MOEJIT} cache list --json --cache-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE json ERROR_VARIABLE err)
string(JSON workloads ERROR_VARIABLE json_error LENGTH "${json}" workloads)
if(NOT rc EQUAL 0 OR json_error OR NOT workloads EQUAL 2)
  message(FATAL_ERROR "cache list --json should list 2 workloads: ${rc} ${json_error} ${json} ${err}")
endif()
set(shapes "")
foreach(i 0 1)
  string(JSON shape GET "${json}" workloads ${i} shape)
  string(JSON entry GET "${json}" workloads ${i} entries 0 kernel)
  list(APPEND shapes "${shape}")
  if(NOT entry MATCHES "^moe_")
    message(FATAL_ERROR "cache list --json entries should name their kernels: ${json}")
  endif()
endforeach()
list(SORT shapes)
if(NOT shapes STREQUAL "k=2,hidden=4096,intermediate=14336,experts=8,dtype=bf16;${seed}")
  message(FATAL_ERROR "cache list --json should give both shapes: ${shapes}")
endif()
# A file whose name holds a newline and an escape sequence (a hostile
# root's): listed with those bytes as \xNN, never written raw.
string(ASCII 27 esc)
file(GLOB workload_dirs LIST_DIRECTORIES true ${WORK}/v1/*)
list(GET workload_dirs 0 workload_dir)
file(WRITE "${workload_dir}/x${esc}[2K\nforged.cubin" "")
execute_process(COMMAND ${MOEJIT} cache list --cache-dir ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${out}" "${esc}" raw_escape)
# (The key column shows a name's first 16 characters.)
if(NOT rc EQUAL 0 OR NOT out MATCHES "x\\\\x1b\\[2K\\\\x0aforg" OR NOT raw_escape EQUAL -1
   OR out MATCHES "\nforg")
  message(FATAL_ERROR "cache list should escape control bytes of file names: ${rc} ${out} ${err}")
endif()
file(REMOVE "${workload_dir}/x${esc}[2K\nforged.cubin")
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
