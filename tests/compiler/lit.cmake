# The pass tests (lit/): quiver-opt with each qv- pass on a small IR file, checked by FileCheck;
# and quiverc --keep-temps IR of real kernels read back by quiver-opt. Debian's lit and FileCheck
# (llvm-19-tools).
find_program(QUIVER_LIT lit.py PATHS ${QUIVER_LLVM_BIN}/../build/utils/lit NO_DEFAULT_PATH)
find_program(QUIVER_FILECHECK FileCheck PATHS ${QUIVER_LLVM_BIN} NO_DEFAULT_PATH)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
if(NOT QUIVER_LIT OR NOT QUIVER_FILECHECK)
  message(FATAL_ERROR "lit.py or FileCheck of LLVM 19 not found (llvm-19-tools); run scripts/bootstrap.sh")
endif()
add_test(NAME compiler.passes.lit
  COMMAND ${Python3_EXECUTABLE} ${QUIVER_LIT} -sv
          --param quiver_opt=$<TARGET_FILE:quiver-opt> --param quiverc=$<TARGET_FILE:quiverc>
          --param filecheck=${QUIVER_FILECHECK} --param kernels_dir=${PROJECT_SOURCE_DIR}/tests/kernels
          --param exec_root=${CMAKE_CURRENT_BINARY_DIR}/lit
          ${CMAKE_CURRENT_LIST_DIR}/lit)
set_tests_properties(compiler.passes.lit PROPERTIES TIMEOUT 600)
