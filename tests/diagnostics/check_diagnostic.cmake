# -DQUIVERC=... -DSRC=case.cpp -DOUT=unused.qfb
file(STRINGS "${SRC}" first LIMIT_COUNT 1)
string(REGEX REPLACE "^// EXPECT: " "" expected "${first}")
string(REPLACE "\\;" ";" expected "${expected}")   # file(STRINGS) escapes semicolons
if(expected STREQUAL first)
  message(FATAL_ERROR "${SRC}: first line must be `// EXPECT: line:col: error: message`")
endif()
execute_process(COMMAND "${QUIVERC}" "${SRC}" -o "${OUT}"
  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out TIMEOUT 50)
if(NOT rc STREQUAL "1")
  message(FATAL_ERROR "quiverc exited with '${rc}' (expected 1: a diagnosed error, not a crash)\n${err}")
endif()
# Source diagnostics are prefixed with the file; a target's refusal ("quiverc: error: ...") is not.
if(expected MATCHES "^quiverc: ")
  set(full "${expected}")
else()
  set(full "${SRC}:${expected}")
endif()
string(FIND "${err}" "${full}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "expected diagnostic\n  ${full}\nnot found in quiverc's output:\n${err}")
endif()
