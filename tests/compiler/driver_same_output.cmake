# -DQUIVERC=... -DWORK=dir -DSOURCES=a.cpp,b.cpp -DFAILING=bad.cpp
# quiverc's output does not depend on -j: the fat binary, header, embedding source, depfile and
# every --keep-temps file of a parallel build are the bytes of the serial build (-j 1), and -v
# prints the same lines in the same order (times aside). A kernel that fails in some targets
# ends both builds with the same diagnostic and exit status: the first failing target in the
# serial order, though later targets, built at the same time, fail too.
file(REMOVE_RECURSE "${WORK}")
string(REPLACE "," ";" SOURCES "${SOURCES}")

function(build jobs)
  set(dir "${WORK}/j${jobs}")
  file(MAKE_DIRECTORY "${dir}")
  execute_process(COMMAND "${QUIVERC}" ${SOURCES} -o out.qfb --emit-header out.h --namespace same
                          --emit-embed out_embed.cpp --depfile out.d --keep-temps temps -v -j ${jobs}
    WORKING_DIRECTORY "${dir}" RESULT_VARIABLE rc ERROR_VARIABLE err TIMEOUT 600)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "quiverc -j ${jobs} failed (${rc}):\n${err}")
  endif()
  # Times and the process count differ between runs; the lines themselves must not.
  string(REGEX REPLACE "done in [0-9.e+-]+ s \\(cpu [0-9.e+-]+ s\\)" "done" err "${err}")
  string(REGEX REPLACE "(front end|targets) done (in|at) [0-9.e+-]+ s;[^\n]*" "\\1 done" err "${err}")
  string(REGEX REPLACE "\\) in [0-9.e+-]+ s" ")" err "${err}")
  set(log_${jobs} "${err}" PARENT_SCOPE)
  file(GLOB_RECURSE files RELATIVE "${dir}" "${dir}/*")
  list(SORT files)
  set(files_${jobs} "${files}" PARENT_SCOPE)
endfunction()

build(1)
build(3)
if(NOT files_1 STREQUAL files_3)
  message(FATAL_ERROR "-j 1 wrote\n  ${files_1}\n-j 3 wrote\n  ${files_3}")
endif()
list(LENGTH files_1 count)
if(count LESS 10)
  message(FATAL_ERROR "expected the outputs and the kept temps of every target, got ${files_1}")
endif()
foreach(f IN LISTS files_1)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${WORK}/j1/${f}" "${WORK}/j3/${f}" RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "${f} differs between -j 1 and -j 3")
  endif()
endforeach()
if(NOT log_1 STREQUAL log_3)
  message(FATAL_ERROR "-v output differs.\n-j 1:\n${log_1}\n-j 3:\n${log_3}")
endif()

set(expected_rc "")
foreach(jobs 1 4)
  execute_process(COMMAND "${QUIVERC}" "${FAILING}" -o "${WORK}/failing${jobs}.qfb" -j ${jobs}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
  if(NOT rc STREQUAL "1" OR NOT err MATCHES "^quiverc: error: spirv: kernel 'scale': double")
    message(FATAL_ERROR "-j ${jobs}: expected spirv's refusal and status 1, got status ${rc}:\n${err}")
  endif()
  if(EXISTS "${WORK}/failing${jobs}.qfb")
    message(FATAL_ERROR "-j ${jobs}: a failed build wrote its output")
  endif()
  set(err_${jobs} "${err}")
endforeach()
if(NOT err_1 STREQUAL err_4)
  message(FATAL_ERROR "the failing build's diagnostics differ.\n-j 1:\n${err_1}\n-j 4:\n${err_4}")
endif()
