# web.npm_ci: copies runtime/web (-DSOURCE) into the build tree (-DDEST) and installs its pinned
# packages with `npm ci` (-DNPM). Fails with a message naming the cause when npm is missing or
# the install fails (e.g. no network): the web tests must not pass without having run.
if(NOT NPM)
  message(FATAL_ERROR "web tests need Node.js and npm, which were not found when the build was "
    "configured (Debian: apt-get install nodejs npm; scripts/bootstrap.sh installs them)")
endif()
file(GLOB loader_files "${SOURCE}/*.mjs" "${SOURCE}/*.d.ts")
file(MAKE_DIRECTORY "${DEST}")
# An install from the same lock file is reused (rebuilds then work offline).
set(stamp "${DEST}/node_modules/.quiver-lock")
set(reuse FALSE)
if(EXISTS "${stamp}")
  file(READ "${stamp}" installed)
  file(READ "${SOURCE}/package-lock.json" wanted)
  if(installed STREQUAL wanted)
    set(reuse TRUE)
  endif()
endif()
file(COPY ${loader_files} "${SOURCE}/package.json" "${SOURCE}/package-lock.json" DESTINATION "${DEST}")
if(reuse)
  message(STATUS "runtime/web packages already installed from this package-lock.json in ${DEST}")
  return()
endif()
execute_process(
  COMMAND "${NPM}" ci --ignore-scripts --no-audit --no-fund
  WORKING_DIRECTORY "${DEST}"
  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT result EQUAL 0 AND "${out}${err}" MATCHES "ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|ENETUNREACH|EHOSTUNREACH")
  # A machine that cannot reach the npm registry cannot run the WGSL path: the web tests report
  # themselves skipped (SKIP_REGULAR_EXPRESSION in CMakeLists.txt), visibly, in ctest's summary.
  message("QUIVER_WEB_SKIP: the npm registry is unreachable from this machine, so runtime/web's packages "
    "(fzstd, webgpu) cannot be installed; the web tests are skipped:\n${err}")
  return()
endif()
if(NOT result EQUAL 0)
  message(FATAL_ERROR "npm ci failed in ${DEST} (exit ${result}); the web tests cannot run without "
    "the packages of runtime/web/package-lock.json (fzstd, webgpu). Is the npm registry reachable?\n"
    "${out}\n${err}")
endif()
file(COPY_FILE "${SOURCE}/package-lock.json" "${stamp}")
message(STATUS "npm ci in ${DEST}: ok")
