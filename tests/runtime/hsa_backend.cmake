# HIP backend tests that run without an AMD GPU: pure logic (kernarg layout and packing, AQL
# packet, image choice), detection failing cleanly, and packing against real code objects'
# metadata (needs quiverc's HSACO images of the kernel suite).
add_executable(quiver_hsa_backend_tests
  hsa_dispatch_test.cpp
  hsa_unavailable_test.cpp
  ${PROJECT_SOURCE_DIR}/runtime/backends/hsa/hsa_dispatch.cpp)
target_include_directories(quiver_hsa_backend_tests PRIVATE
  ${PROJECT_SOURCE_DIR}/runtime ${PROJECT_SOURCE_DIR}/runtime/backends/hsa)
target_link_libraries(quiver_hsa_backend_tests PRIVATE quiver::runtime quiver_format GTest::gtest_main ${CMAKE_DL_LIBS})
gtest_discover_tests(quiver_hsa_backend_tests DISCOVERY_TIMEOUT 60)

if(QUIVER_BUILD_COMPILER)
  add_executable(quiver_hsa_kernarg_metadata_tests
    hsa_kernarg_metadata_test.cpp
    ${PROJECT_SOURCE_DIR}/runtime/backends/hsa/hsa_dispatch.cpp)
  target_include_directories(quiver_hsa_kernarg_metadata_tests PRIVATE
    ${PROJECT_SOURCE_DIR}/runtime ${PROJECT_SOURCE_DIR}/runtime/backends/hsa)
  target_compile_definitions(quiver_hsa_kernarg_metadata_tests PRIVATE
    QV_TEST_KERNELS_QFB="$<TARGET_PROPERTY:test_kernels,QUIVER_FATBIN_FILE>")
  target_link_libraries(quiver_hsa_kernarg_metadata_tests PRIVATE quiver_test_hsaco_notes quiver_format
    GTest::gtest_main)
  add_dependencies(quiver_hsa_kernarg_metadata_tests test_kernels)
  gtest_discover_tests(quiver_hsa_kernarg_metadata_tests DISCOVERY_TIMEOUT 60)

  # The backend's device, memory, loading and dispatch code against a fake HSA runtime
  # (hsa_fake_runtime.cpp): packets and kernargs are checked, no kernel code runs.
  add_library(quiver_test_fake_hsa MODULE hsa_fake_runtime.cpp)
  target_include_directories(quiver_test_fake_hsa PRIVATE ${PROJECT_SOURCE_DIR}/runtime/backends/hsa)
  set_target_properties(quiver_test_fake_hsa PROPERTIES CXX_VISIBILITY_PRESET default)
  find_package(Threads REQUIRED)
  target_link_libraries(quiver_test_fake_hsa PRIVATE Threads::Threads)
  add_executable(quiver_hsa_fake_tests hsa_fake_test.cpp)
  target_compile_definitions(quiver_hsa_fake_tests PRIVATE
    QV_TEST_FAKE_HSA_SO="$<TARGET_FILE:quiver_test_fake_hsa>"
    QV_TEST_KERNELS_QFB="$<TARGET_PROPERTY:test_kernels,QUIVER_FATBIN_FILE>")
  target_link_libraries(quiver_hsa_fake_tests PRIVATE quiver::runtime GTest::gtest_main ${CMAKE_DL_LIBS})
  add_dependencies(quiver_hsa_fake_tests quiver_test_fake_hsa test_kernels)
  gtest_discover_tests(quiver_hsa_fake_tests DISCOVERY_TIMEOUT 60)
endif()
