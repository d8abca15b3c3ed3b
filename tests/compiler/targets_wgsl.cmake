# Tests of the WGSL target on hand-written IR (through the Target API). Dawn's validation and
# execution of the suite's and the op library's WGSL are in tests/web.
if(NOT TARGET quiver_target_wgsl OR NOT TARGET quiver_targets_llvm_test_support)
  return()
endif()
add_executable(targets_wgsl_test ${CMAKE_CURRENT_LIST_DIR}/targets_wgsl_test.cpp)
target_link_libraries(targets_wgsl_test PRIVATE quiver_targets_llvm_test_support quiver_target_wgsl GTest::gtest_main)
gtest_discover_tests(targets_wgsl_test DISCOVERY_TIMEOUT 60)
