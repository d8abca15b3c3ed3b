# The Vulkan backend's validation hook (QUIVER_VULKAN_VALIDATION=1, docs/reliability.md): a unit
# test that a misuse is reported and a missing layer refused. It compiles the backend's sources
# itself, as the backend tests do with spirv_inspect.cpp, to reach the internal Context. The
# end-to-end runs under the layer are kernels.vulkan_validation and ops.vulkan_validation.
if(NOT QUIVER_VULKAN_INCLUDE_DIR)
  return()
endif()
add_executable(quiver_vulkan_validation_tests
  vulkan_validation_test.cpp
  ${PROJECT_SOURCE_DIR}/runtime/backends/vulkan/vulkan_api.cpp
  ${PROJECT_SOURCE_DIR}/runtime/backends/vulkan/vulkan_context.cpp
  ${PROJECT_SOURCE_DIR}/runtime/backends/vulkan/vulkan_validation.cpp)
target_include_directories(quiver_vulkan_validation_tests PRIVATE ${PROJECT_SOURCE_DIR}/runtime ${CMAKE_CURRENT_SOURCE_DIR})
target_include_directories(quiver_vulkan_validation_tests SYSTEM PRIVATE ${QUIVER_VULKAN_INCLUDE_DIR})
target_link_libraries(quiver_vulkan_validation_tests PRIVATE quiver::runtime GTest::gtest_main ${CMAKE_DL_LIBS})
gtest_discover_tests(quiver_vulkan_validation_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS vulkan)
