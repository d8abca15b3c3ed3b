# Tests of the driver (compiler/driver): the target registry it reads, the worker processes of
# -j and the output's independence of it.
add_executable(driver_parallel_jobs_test ${CMAKE_CURRENT_LIST_DIR}/driver_parallel_jobs_test.cpp)
find_package(Threads REQUIRED)
target_link_libraries(driver_parallel_jobs_test PRIVATE quiverc_driver GTest::gtest_main Threads::Threads)
gtest_discover_tests(driver_parallel_jobs_test DISCOVERY_TIMEOUT 60)

# The target registry and what reads it: --targets, its help in quiverc --help, the build jobs.
add_executable(driver_targets_test ${CMAKE_CURRENT_LIST_DIR}/driver_targets_test.cpp)
target_link_libraries(driver_targets_test PRIVATE quiverc_driver GTest::gtest_main)
target_compile_definitions(driver_targets_test PRIVATE QUIVERC_EXE="$<TARGET_FILE:quiverc>")
add_dependencies(driver_targets_test quiverc)
gtest_discover_tests(driver_targets_test DISCOVERY_TIMEOUT 60)

# reduce.cpp: barriers inside loops, whose carried values the CPU target's barrier fission gives
# per-thread slots (their order once followed pointer values, and differed between processes).
add_test(NAME driver.same_output_serial_and_parallel
  COMMAND ${CMAKE_COMMAND} -DQUIVERC=$<TARGET_FILE:quiverc> -DWORK=${CMAKE_CURRENT_BINARY_DIR}/same_output
          "-DSOURCES=${PROJECT_SOURCE_DIR}/tests/kernels/saxpy.cpp,${PROJECT_SOURCE_DIR}/tests/kernels/warpgroup.cpp,${PROJECT_SOURCE_DIR}/tests/kernels/matrix_tiles.cpp,${PROJECT_SOURCE_DIR}/tests/kernels/reduce.cpp"
          -DFAILING=${PROJECT_SOURCE_DIR}/tests/diagnostics/double_on_spirv.cpp
          -P ${CMAKE_CURRENT_LIST_DIR}/driver_same_output.cmake)
set_tests_properties(driver.same_output_serial_and_parallel PROPERTIES TIMEOUT 1200)
