# Tests of compiler/targets/spirv: structure (spirv-val CLI, entry points, LocalSize, bindings)
# and execution on a Vulkan device (lavapipe) through a test-only harness.
if(TARGET quiver_target_spirv)
  find_package(Vulkan REQUIRED)
  find_program(QUIVER_SPIRV_VAL_EXE spirv-val REQUIRED)

  add_executable(test_targets_spirv
    ${CMAKE_CURRENT_LIST_DIR}/targets_spirv_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/targets_spirv_coop_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/targets_spirv_run_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/targets_spirv_support.cpp
    ${CMAKE_CURRENT_LIST_DIR}/targets_spirv_vulkan.cpp
  )
  target_include_directories(test_targets_spirv PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_compile_definitions(test_targets_spirv PRIVATE
    QUIVER_SPIRV_VAL="${QUIVER_SPIRV_VAL_EXE}")
  target_link_libraries(test_targets_spirv PRIVATE
    quiver_target_spirv Vulkan::Vulkan GTest::gtest GTest::gtest_main)
  gtest_discover_tests(test_targets_spirv DISCOVERY_TIMEOUT 60)

  # The same images through the public runtime API on the Vulkan backend (helper-3's).
  if(TARGET quiver_runtime AND TARGET quiver_format AND QUIVER_VULKAN_INCLUDE_DIR)
    add_executable(test_targets_spirv_runtime
      ${CMAKE_CURRENT_LIST_DIR}/targets_spirv_runtime_test.cpp
      ${CMAKE_CURRENT_LIST_DIR}/targets_spirv_support.cpp
    )
    target_include_directories(test_targets_spirv_runtime PRIVATE ${CMAKE_CURRENT_LIST_DIR})
    target_link_libraries(test_targets_spirv_runtime PRIVATE
      quiver_target_spirv quiver_runtime quiver_format GTest::gtest GTest::gtest_main)
    gtest_discover_tests(test_targets_spirv_runtime DISCOVERY_TIMEOUT 60)
  endif()
endif()
