# libmoejit.so exports moejit's public API alone: every defined dynamic
# symbol is in namespace moejit (functions, typeinfo, vtables) or a moejit_
# C function, under the MOEJIT_ version node. LIBRARY is the path of
# libmoejit.so.
execute_process(COMMAND nm -D --defined-only -C ${LIBRARY} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed: ${err}")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(count 0)
foreach(line ${lines})
  string(REGEX REPLACE "^[0-9a-f]+ [A-Za-z] " "" symbol "${line}")
  if(symbol MATCHES "^MOEJIT_[0-9.]+$")
    continue()
  endif()
  if(NOT symbol MATCHES "^((typeinfo|typeinfo name|vtable) for )?moejit::.*@@MOEJIT_[0-9.]+$" AND
     NOT symbol MATCHES "^moejit_[a-z_]+@@MOEJIT_[0-9.]+$")
    message(FATAL_ERROR "libmoejit.so exports a symbol that is not moejit's: ${symbol}")
  endif()
  math(EXPR count "${count} + 1")
endforeach()
if(count LESS 10)
  message(FATAL_ERROR "only ${count} moejit symbols exported:\n${out}")
endif()
message(STATUS "${count} symbols, all moejit's")
