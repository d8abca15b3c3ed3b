# The installed-package test (cmake -P): install the quiver build into a scratch prefix, build
# tests/package/consumer against it with find_package(quiver), run it on the CPU backend, then
# check the build's dependency tracking: a no-op rebuild must not rerun quiverc, and editing a
# header that a kernel includes (found only through the depfile) must.
# Inputs: QUIVER_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER BUILD_TYPE, and
# optionally MAKE_PROGRAM CXX_FLAGS EXE_LINKER_FLAGS
cmake_minimum_required(VERSION 3.20)

foreach(v QUIVER_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER BUILD_TYPE)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer.cmake: -D${v}=... is required")
  endif()
endforeach()

# Runs a command; on failure prints its output and stops the test. The output lands in
# `out_var` when one is given.
function(step what out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${ARGN}\n--- stdout ---\n${out}\n--- stderr ---\n${err}")
  endif()
  message(STATUS "${what}: ok")
  if(out_var)
    set(${out_var} "${out}${err}" PARENT_SCOPE)
  endif()
endfunction()

set(prefix "${WORK_DIR}/prefix")
set(src "${WORK_DIR}/src")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")
# A copy of the consumer: the test edits one of its headers.
file(COPY "${CONSUMER_SOURCE_DIR}/" DESTINATION "${src}")

step("install quiver into ${prefix}" "" ${CMAKE_COMMAND} --install "${QUIVER_BUILD_DIR}" --prefix "${prefix}")

set(configure_args -S "${src}" -B "${build}" -G "${GENERATOR}"
  "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
if(MAKE_PROGRAM)
  list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CXX_FLAGS)
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
endif()
if(EXE_LINKER_FLAGS)
  list(APPEND configure_args "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}")
endif()
step("configure the consumer" configure_out ${CMAKE_COMMAND} ${configure_args})
# It must have used the scratch installation, not some other quiver on the machine.
file(STRINGS "${build}/CMakeCache.txt" quiver_dir REGEX "^quiver_DIR:")
string(FIND "${quiver_dir}" "${prefix}/" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the consumer found quiver outside ${prefix}: ${quiver_dir}")
endif()

step("build the consumer" build_out ${CMAKE_COMMAND} --build "${build}")
set(marker "quiverc: building fat binary myops.qfb")
if(NOT build_out MATCHES "${marker}")
  message(FATAL_ERROR "the first build did not run quiverc:\n${build_out}")
endif()
foreach(f myops.qfb myops.h myops_embed.cpp)
  if(NOT EXISTS "${build}/quiver_fatbin/myops/${f}")
    message(FATAL_ERROR "quiver_add_fatbin did not produce ${f}")
  endif()
endforeach()

step("run the consumer (QUIVER_BACKEND=cpu)" run_out
  ${CMAKE_COMMAND} -E env QUIVER_BACKEND=cpu "${build}/consumer" "${build}/quiver_fatbin/myops/myops.qfb")
message(STATUS "consumer output:\n${run_out}")

step("rebuild with nothing changed" noop_out ${CMAKE_COMMAND} --build "${build}")
if(noop_out MATCHES "${marker}")
  message(FATAL_ERROR "a rebuild with nothing changed ran quiverc again (dependencies are wrong):\n${noop_out}")
endif()

# consumer_math.h is not a SOURCE: only the depfile knows the kernels include it.
file(APPEND "${src}/kernels/include/consumer_math.h" "\n// edited by run_consumer.cmake\n")
step("rebuild after editing an included header" dep_out ${CMAKE_COMMAND} --build "${build}")
if(NOT dep_out MATCHES "${marker}")
  message(FATAL_ERROR "editing kernels/include/consumer_math.h did not rerun quiverc (depfile not used):\n${dep_out}")
endif()
step("run the rebuilt consumer" "" ${CMAKE_COMMAND} -E env QUIVER_BACKEND=cpu "${build}/consumer"
  "${build}/quiver_fatbin/myops/myops.qfb")
