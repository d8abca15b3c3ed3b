# Tests of the LLVM-based targets (ptx, cpu) and of the portable math lowering.
if(TARGET quiver_target_cpu AND TARGET quiver_target_ptx)
  find_package(Threads REQUIRED)
  add_library(quiver_targets_llvm_test_support STATIC
    ${CMAKE_CURRENT_LIST_DIR}/targets_cpu_harness.cpp)
  target_link_libraries(quiver_targets_llvm_test_support PUBLIC
    quiver_target_cpu GTest::gtest Threads::Threads)
  target_include_directories(quiver_targets_llvm_test_support PUBLIC ${CMAKE_CURRENT_LIST_DIR})

  foreach(t targets_cpu_test targets_cpu_math_test targets_ptx_test)
    add_executable(${t} ${CMAKE_CURRENT_LIST_DIR}/${t}.cpp)
    target_link_libraries(${t} PRIVATE quiver_targets_llvm_test_support quiver_target_ptx
      quiver_target_cpu GTest::gtest_main)
    gtest_discover_tests(${t} DISCOVERY_TIMEOUT 60)
  endforeach()
endif()
