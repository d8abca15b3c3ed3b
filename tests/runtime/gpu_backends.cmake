# Tests of the CUDA and Vulkan backends (included from tests/runtime/CMakeLists.txt).
#  quiver_cuda_backend_tests    image choice (pure), missing-driver behaviour (everywhere), and
#                               PTX saxpy on a real GPU (skips with the reason where none is).
#  quiver_vulkan_backend_tests  GLSL kernels compiled here with glslangValidator, run on
#                               lavapipe in CI and on the NVIDIA driver on the GPU machine.
# The test binaries embed everything they need, so a copied build tree runs anywhere
# (scripts/device-check.sh).

# ---- CUDA ----
# Fake CUDA driver libraries (fake_cuda_driver.cpp) for the missing/broken-driver tests; the
# second lacks cuLaunchKernel. Built next to the test binary, where the tests also look for them.
add_library(quiver_test_fake_cuda MODULE fake_cuda_driver.cpp)
add_library(quiver_test_fake_cuda_no_launch MODULE fake_cuda_driver.cpp)
target_compile_definitions(quiver_test_fake_cuda_no_launch PRIVATE QV_FAKE_CUDA_WITHOUT_LAUNCH)
foreach(fake quiver_test_fake_cuda quiver_test_fake_cuda_no_launch)
  set_target_properties(${fake} PROPERTIES PREFIX "" CXX_VISIBILITY_PRESET default)
  target_include_directories(${fake} PRIVATE ${PROJECT_SOURCE_DIR}/runtime)
endforeach()

add_executable(quiver_cuda_backend_tests
  cuda_backend_test.cpp
  cuda_devices_test.cpp
  cuda_unavailable_test.cpp
  cuda_image_select_test.cpp
  ${PROJECT_SOURCE_DIR}/runtime/backends/cuda/cuda_image_select.cpp)
target_include_directories(quiver_cuda_backend_tests PRIVATE ${PROJECT_SOURCE_DIR}/runtime)
target_include_directories(quiver_cuda_backend_tests SYSTEM PRIVATE ${QUIVER_DLPACK_INCLUDE_DIR})
target_compile_definitions(quiver_cuda_backend_tests PRIVATE
  QV_TEST_FAKE_CUDA_SO="$<TARGET_FILE:quiver_test_fake_cuda>"
  QV_TEST_FAKE_CUDA_NO_LAUNCH_SO="$<TARGET_FILE:quiver_test_fake_cuda_no_launch>")
target_link_libraries(quiver_cuda_backend_tests PRIVATE quiver::runtime quiver_format GTest::gtest_main ${CMAKE_DL_LIBS})
add_dependencies(quiver_cuda_backend_tests quiver_test_fake_cuda quiver_test_fake_cuda_no_launch)
# CudaBackend* (CudaBackend.*, CudaBackendDevices.*) needs an NVIDIA GPU: those tests run on the
# GPU machine, where scripts/device-check.sh runs this binary whole. ctest (CI has no GPU) lists
# only the rest, so its summary is not padded with tests that can only skip here.
gtest_discover_tests(quiver_cuda_backend_tests DISCOVERY_TIMEOUT 60 TEST_FILTER "-CudaBackend*")

# ---- Vulkan ----
find_program(QUIVER_GLSLANG glslangValidator)
find_program(QUIVER_SPIRV_LINK spirv-link)
find_program(QUIVER_SPIRV_VAL spirv-val)
if(NOT QUIVER_VULKAN_INCLUDE_DIR OR NOT QUIVER_GLSLANG OR NOT QUIVER_SPIRV_LINK OR NOT QUIVER_SPIRV_VAL)
  message(STATUS "quiver: Vulkan backend tests skipped (need the Vulkan backend, glslangValidator, spirv-link, spirv-val)")
  return()
endif()

# kernel source -> entry-point symbol (the manifest's `symbol`, docs/abi.md).
set(_qv_vk_kernels saxpy=qv_k0_saxpy block_sum=qv_k1_block_sum int_mix=qv_k2_int_mix grid2d=qv_k3_grid2d)
set(_qv_vk_spv)
foreach(pair IN LISTS _qv_vk_kernels)
  string(REPLACE "=" ";" pair "${pair}")
  list(GET pair 0 name)
  list(GET pair 1 symbol)
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/vulkan_${name}.comp)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/vulkan_${name}.spv)
  add_custom_command(OUTPUT ${out}
    COMMAND ${QUIVER_GLSLANG} -V --target-env vulkan1.2 --source-entrypoint main -e ${symbol}
            -o ${out} ${src}
    DEPENDS ${src}
    COMMENT "glslangValidator vulkan_${name}.comp -> ${symbol}"
    VERBATIM)
  list(APPEND _qv_vk_spv ${out})
endforeach()

# One module with every entry point, as quiverc's SPIR-V target produces.
set(_qv_vk_module ${CMAKE_CURRENT_BINARY_DIR}/vulkan_test_kernels.spv)
set(_qv_vk_embedded ${CMAKE_CURRENT_BINARY_DIR}/vulkan_test_kernels_spirv.cpp)
add_custom_command(OUTPUT ${_qv_vk_module}
  COMMAND ${QUIVER_SPIRV_LINK} --target-env vulkan1.2 ${_qv_vk_spv} -o ${_qv_vk_module}
  COMMAND ${QUIVER_SPIRV_VAL} --target-env vulkan1.2 ${_qv_vk_module}
  DEPENDS ${_qv_vk_spv}
  COMMENT "spirv-link + spirv-val vulkan_test_kernels.spv"
  VERBATIM)
add_custom_command(OUTPUT ${_qv_vk_embedded}
  COMMAND ${CMAKE_COMMAND} -DINPUT=${_qv_vk_module} -DOUTPUT=${_qv_vk_embedded}
          -DNAME=quiver_test_vulkan_spirv -P ${CMAKE_CURRENT_SOURCE_DIR}/vulkan_embed_binary.cmake
  DEPENDS ${_qv_vk_module} ${CMAKE_CURRENT_SOURCE_DIR}/vulkan_embed_binary.cmake
  VERBATIM)

add_executable(quiver_vulkan_backend_tests
  vulkan_backend_test.cpp
  vulkan_devices_test.cpp
  vulkan_spirv_inspect_test.cpp
  vulkan_image_choice_test.cpp
  vulkan_memory_choice_test.cpp
  ${_qv_vk_embedded}
  ${PROJECT_SOURCE_DIR}/runtime/backends/vulkan/spirv_inspect.cpp
  ${PROJECT_SOURCE_DIR}/runtime/backends/vulkan/image_choice.cpp
  ${PROJECT_SOURCE_DIR}/runtime/backends/vulkan/memory_choice.cpp)
target_include_directories(quiver_vulkan_backend_tests PRIVATE ${PROJECT_SOURCE_DIR}/runtime)
target_include_directories(quiver_vulkan_backend_tests SYSTEM PRIVATE ${QUIVER_DLPACK_INCLUDE_DIR} ${QUIVER_VULKAN_INCLUDE_DIR})
target_link_libraries(quiver_vulkan_backend_tests PRIVATE quiver::runtime quiver_format GTest::gtest_main)
gtest_discover_tests(quiver_vulkan_backend_tests DISCOVERY_TIMEOUT 120)

# One VkInstance per process (40 Devices opened and closed): a binary of its own, so its
# instance counter starts at zero however the binary is run.
add_executable(quiver_vulkan_instance_tests vulkan_instance_test.cpp ${_qv_vk_embedded})
target_include_directories(quiver_vulkan_instance_tests PRIVATE ${PROJECT_SOURCE_DIR}/runtime ${CMAKE_CURRENT_SOURCE_DIR})
target_include_directories(quiver_vulkan_instance_tests SYSTEM PRIVATE ${QUIVER_VULKAN_INCLUDE_DIR})
target_link_libraries(quiver_vulkan_instance_tests PRIVATE quiver::runtime quiver_format GTest::gtest_main)
gtest_discover_tests(quiver_vulkan_instance_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS vulkan)

# Lazy pipelines and the disk pipeline cache: a binary of its own, so its counters start at zero
# and its child processes (this binary run again) are small.
add_executable(quiver_vulkan_pipeline_cache_tests vulkan_pipeline_cache_test.cpp ${_qv_vk_embedded})
target_include_directories(quiver_vulkan_pipeline_cache_tests PRIVATE ${PROJECT_SOURCE_DIR}/runtime ${CMAKE_CURRENT_SOURCE_DIR})
target_include_directories(quiver_vulkan_pipeline_cache_tests SYSTEM PRIVATE ${QUIVER_VULKAN_INCLUDE_DIR})
target_link_libraries(quiver_vulkan_pipeline_cache_tests PRIVATE quiver::runtime quiver_format GTest::gtest_main)
# The child (VulkanPipelineCacheChild) runs only under the cross-process tests.
gtest_discover_tests(quiver_vulkan_pipeline_cache_tests DISCOVERY_TIMEOUT 60 TEST_FILTER "-VulkanPipelineCacheChild.*"
  PROPERTIES LABELS vulkan)

# The stress test's Vulkan half (tests/runtime/CMakeLists.txt defines the binary).
if(TARGET quiver_stress_tests)
  target_sources(quiver_stress_tests PRIVATE ${_qv_vk_embedded})
  target_compile_definitions(quiver_stress_tests PRIVATE QV_STRESS_HAVE_VULKAN)
endif()
