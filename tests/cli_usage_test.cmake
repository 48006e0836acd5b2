# The command line of `moejit` itself, without a GPU and compiling nothing:
# --help on every command and --version exit 0; a command line moejit cannot
# act on exits 2 with one message on stderr, naming what is wrong.
# MOEJIT: the binary; VERSION: the project version; WORK: a scratch folder.
file(REMOVE_RECURSE ${WORK})

# Each command with an option its help must show.
foreach(case "warm|--arch" "bench|--runs" "info|--json" "codegen|--kernel" "cache|prune"
        "cache list|--json" "cache verify|--fix" "cache prune|--max-size" "settings|--help")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 command)
  list(GET case 1 option)
  separate_arguments(words UNIX_COMMAND "${command}")
  execute_process(COMMAND ${MOEJIT} ${words} --help
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "Usage: moejit ${command}" OR NOT out MATCHES "${option}")
    message(FATAL_ERROR "moejit ${command} --help should exit 0 and show ${option}: ${rc} ${out} ${err}")
  endif()
endforeach()
execute_process(COMMAND ${MOEJIT} --help RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "warm" OR NOT out MATCHES "cache" OR out MATCHES "jit-probe")
  message(FATAL_ERROR "moejit --help should list the commands (not the hidden jit-probe): ${out}")
endif()
execute_process(COMMAND ${MOEJIT} --version RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "moejit ${VERSION}\n")
  message(FATAL_ERROR "moejit --version should print 'moejit ${VERSION}': ${rc} '${out}'")
endif()
execute_process(COMMAND ${MOEJIT} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "Usage: moejit")
  message(FATAL_ERROR "moejit without a command should show the usage on stderr, exit 2: ${rc} ${err}")
endif()

# Usage errors: exit 2, one line on stderr matching the pattern, no "stoi"
# (what std::stoi's exception says), and nothing written to the cache.
set(cache ${WORK}/cache)
foreach(case
    "frob|unknown command 'frob' \\(commands: warm, bench"
    "cache frob|unknown command 'frob' \\(commands: list, verify, prune"
    "cache|a command is needed: list, verify, prune"
    "warm --frob --arch sm_90a|--frob"
    "warm --arch|--arch: 1 required"
    "warm --arch sm_90a --shape hidden=4096e3|--shape: hidden '4096e3' is not a whole number"
    "warm --arch sm_90a --shape k=99999999999|--shape: k 99999999999 is not in"
    "warm --arch sm_90a --shape hidden=100|hidden = 100 must be a positive multiple of 8"
    "warm --arch sm_90a --shape k=8,k=4|shape key 'k' is given twice"
    "warm --arch sm_90a --shape h=1024,hidden=2048|shape key 'hidden' is given twice"
    "warm --arch sm_90a --shape k=8,|shape item '' is not key=value"
    "warm --arch sm_90a --shape k=8,,e=64|shape item '' is not key=value"
    "warm --arch sm_90a --model nope|unknown model 'nope'.*known: qwen3-30b-a3b"
    "warm --tune --buckets 0-x|--buckets: bucket 'x' is not a whole number"
    "warm --tune --buckets 0-17|--buckets: bucket 17 is not in 0..16"
    "warm --tune --buckets 1,|--buckets: bucket '' is not a whole number"
    "warm --tune --buckets 1,,3|--buckets: bucket '' is not a whole number"
    "warm --buckets 0-16|--buckets requires --tune"
    "warm --check --tune|excludes"
    "bench --runs abc|--runs: 'abc' is not a whole number"
    "bench --runs 0|--runs: Value 0 not in range"
    "bench --tokens 12k|--tokens: '12k' is not a whole number"
    "bench --shape k=2|bench --shape needs --tokens"
    "bench --jit --processes 1.5|--processes: '1.5' is not a whole number"
    "bench --jit --runs 5|excludes"
    "codegen --bm 1e2|--bm: '1e2' is not a whole number"
    "codegen --stages 0x4|--stages: '0x4' is not a whole number"
    "codegen --warps 2x|--warps: warps N '' is not a whole number"
    "codegen --kernel gemm3|--kernel: gemm3 not in"
    "codegen --kernel route_count --bm 64|--kernel route_count of a bf16 shape has no tile"
    "codegen --kernel combine --config bm128_bn128_s4_ws|--kernel combine of a bf16 shape has no tile"
    "codegen --shape k=2,hidden=256,intermediate=128,experts=8,dtype=fp32 --stages 3|--kernel gemm1 of a fp32 shape has no tile"
    "cache prune --max-size 12Q|--max-size: size '12Q' is not a whole number of bytes"
    "cache prune|--max-size is required"
    "cache list --fix|--fix"
    "warm --arch sm_90a --combine sloppy|--combine: sloppy not in {deterministic,fast,batch-invariant}"
    "bench --combine fast --combine quick|--combine: quick not in"
    "bench --jit --combine fast|--jit excludes --combine"
    "bench --stages routing+gemm3|--stages: 'gemm3' is not a stage"
    "bench --stages gemm1+|--stages: '' is not a stage"
    "bench --jit --stages gemm1|--jit excludes --stages"
    "bench --stages routing+combine|--stages: 'routing\\+combine': only gemm1 can follow the routing directly"
    "bench --stages routing+gemm2|--stages: 'routing\\+gemm2': only gemm1 can follow the routing directly")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 command)
  list(GET case 1 pattern)
  separate_arguments(words UNIX_COMMAND "${command}")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env MOEJIT_CACHE_DIR=${cache} ${MOEJIT} ${words}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX MATCHALL "\n" lines "${err}")
  list(LENGTH lines lines)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "^moejit: usage error: .*${pattern}" OR NOT lines EQUAL 1
     OR err MATCHES "stoi")
    message(FATAL_ERROR "moejit ${command}: expected exit 2 and one line matching '${pattern}', "
                        "got ${rc}: ${err}${out}")
  endif()
endforeach()
# An empty value is refused, not read as "not given": --cache-dir "$UNSET"
# once meant the default root (and prune emptied it), --arch '' GPU 0's.
# Each is run by sh, which passes '' as an empty argument.
foreach(case
    "warm --arch sm_90a --cache-dir ''|--cache-dir: must not be empty"
    "warm --arch ''|--arch: must not be empty"
    "warm --arch sm_90a --gpu ''|--gpu: must not be empty"
    "cache list --cache-dir ''|--cache-dir: must not be empty"
    "cache verify --cache-dir ''|--cache-dir: must not be empty"
    "cache prune --max-size 0 --cache-dir ''|--cache-dir: must not be empty"
    "bench --json ''|--json: must not be empty"
    "jit-probe --cache-dir ''|--cache-dir: must not be empty")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 command)
  list(GET case 1 pattern)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env MOEJIT_CACHE_DIR=${cache}
                          sh -c "exec \"$0\" ${command}" ${MOEJIT}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "^moejit: usage error: ${pattern}")
    message(FATAL_ERROR "moejit ${command}: expected exit 2 and '${pattern}', got ${rc}: ${err}${out}")
  endif()
endforeach()
if(EXISTS ${cache})
  message(FATAL_ERROR "a usage error wrote the cache root")
endif()

# A bad MOEJIT_COMBINE is the environment's error (exit 1), named, and
# writes nothing.
execute_process(COMMAND ${CMAKE_COMMAND} -E env MOEJIT_COMBINE=sloppy ${MOEJIT} warm --arch sm_90a
                        --cache-dir ${cache}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "MOEJIT_COMBINE=sloppy: expected one of" OR EXISTS ${cache})
  message(FATAL_ERROR "MOEJIT_COMBINE=sloppy should fail before anything is written: ${rc} ${err}")
endif()

# So is a bad MOEJIT_COMPILE_THREADS: nothing compiles, nothing is written.
execute_process(COMMAND ${CMAKE_COMMAND} -E env MOEJIT_COMPILE_THREADS=0 ${MOEJIT} warm
                        --arch sm_90a --cache-dir ${cache}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "MOEJIT_COMPILE_THREADS=0: expected a whole number"
   OR out MATCHES "compiled" OR EXISTS ${cache})
  message(FATAL_ERROR "MOEJIT_COMPILE_THREADS=0 should fail before anything compiles: ${rc} ${err}")
endif()

# Every setting is checked before warm or bench does anything, the ones the
# library only warns about or reads later too: MOEJIT_TUNING=bogus passed
# the warm and failed the application, MOEJIT_DEBUG_PIPELINES=ture (a
# warning) warmed the wrong keys.
foreach(case
    "MOEJIT_TUNING=bogus|warm --arch sm_90a --check|MOEJIT_TUNING=bogus: expected one of records"
    "MOEJIT_DEBUG_PIPELINES=ture|warm --arch sm_90a|MOEJIT_DEBUG_PIPELINES=ture: expected 1, 0"
    "MOEJIT_LOG_LEVEL=verbose|warm --arch sm_90a|MOEJIT_LOG_LEVEL=verbose: expected one of trace"
    "MOEJIT_CACHE_TRUST=sharde|warm --arch sm_90a|MOEJIT_CACHE_TRUST=sharde: expected one of owner"
    "MOEJIT_LOG_LEVEL=verbose|bench --runs 1|MOEJIT_LOG_LEVEL=verbose: expected one of trace"
    "MOEJIT_TUNING=bogus|bench --jit|MOEJIT_TUNING=bogus: expected one of records")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 setting)
  list(GET case 1 command)
  list(GET case 2 pattern)
  separate_arguments(words UNIX_COMMAND "${command}")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${setting} MOEJIT_CACHE_DIR=${cache}
                          ${MOEJIT} ${words}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT err MATCHES "^moejit: error: ${pattern}[^\n]*\n$" OR EXISTS ${cache})
    message(FATAL_ERROR "${setting} moejit ${command} should fail at once naming it: ${rc} ${err}${out}")
  endif()
endforeach()

# A run-time failure stays exit 1 ("moejit: error: ..."): a target NVRTC
# does not support is the library's refusal, not a usage error.
execute_process(COMMAND ${MOEJIT} warm --arch sm_70 --cache-dir ${cache}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "^moejit: error: .*unsupported target 'sm_70'")
  message(FATAL_ERROR "warm --arch sm_70 should fail at run time (exit 1): ${rc} ${err}")
endif()

# Output that does not reach stdout is a failure: exit 1 and one line on
# stderr naming it, in text and --json modes (--json once aborted in LLVM's
# stream destructor, exit 134; text exited 0), and with stdout closed.
set(listed ${WORK}/listed)
file(MAKE_DIRECTORY ${listed})
execute_process(COMMAND chmod 700 ${listed}) # trusted whatever the umask
foreach(case "codegen" "settings" "cache list --json --cache-dir ${listed}"
        "cache list --cache-dir ${listed}")
  separate_arguments(words UNIX_COMMAND "${case}")
  execute_process(COMMAND ${MOEJIT} ${words} OUTPUT_FILE /dev/full
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT err STREQUAL "moejit: error: writing stdout: No space left on device\n")
    message(FATAL_ERROR "moejit ${case} > /dev/full should exit 1 with one line: ${rc} ${err}")
  endif()
endforeach()
execute_process(COMMAND sh -c "exec \"$0\" codegen >&-" ${MOEJIT}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err STREQUAL "moejit: error: writing stdout: Bad file descriptor\n")
  message(FATAL_ERROR "moejit codegen with stdout closed should exit 1 with one line: ${rc} ${err}")
endif()

# bench --json FILE is opened before any case runs (and before the GPU is
# looked for): a path that cannot be written was found out after the run.
execute_process(COMMAND ${MOEJIT} bench --tokens 4 --json ${WORK}/nowhere/results.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err STREQUAL
   "moejit: error: cannot write ${WORK}/nowhere/results.json: No such file or directory\n")
  message(FATAL_ERROR "bench --json to a missing folder should fail first: ${rc} ${err}${out}")
endif()

# A cache root asked about by name must exist: a mistyped --cache-dir once
# "verified" and "pruned" clean (exit 0).
foreach(command "list" "verify" "prune --max-size 1G")
  separate_arguments(words UNIX_COMMAND "${command}")
  execute_process(COMMAND ${MOEJIT} cache ${words} --cache-dir ${WORK}/nowhere
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT err STREQUAL "moejit: error: cache root ${WORK}/nowhere does not exist\n"
     OR EXISTS ${WORK}/nowhere)
    message(FATAL_ERROR "cache ${command} of a missing root should exit 1 naming it: ${rc} ${err}${out}")
  endif()
endforeach()
# Prune of a root with a folder it refuses (v1 writable by others) has not
# pruned it: exit 1, the size a lower bound, and no talk of entries in use.
set(refusing ${WORK}/refusing)
file(MAKE_DIRECTORY ${refusing}/v1)
execute_process(COMMAND chmod 700 ${refusing})
execute_process(COMMAND chmod 777 ${refusing}/v1)
execute_process(COMMAND ${MOEJIT} cache prune --max-size 0 --cache-dir ${refusing}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT out MATCHES "\nrefused \\(left alone\\) v1: .*not trusted"
   OR NOT out MATCHES "\nfinal size: at least 0 \\(0 bytes\\) in 0 entries; limit 0\n"
   OR NOT out MATCHES "\nnot pruned: 1 refused paths" OR out MATCHES "in use")
  message(FATAL_ERROR "cache prune with a refused folder should exit 1 and say so: ${rc} ${out}${err}")
endif()
