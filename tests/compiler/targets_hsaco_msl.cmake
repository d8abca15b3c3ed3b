# Tests of the HSACO and MSL targets: unit tests on hand-written IR (through the Target API) and
# two checkers run on the kernel suite's fat binary (tests/kernels, built with every target).
if(NOT TARGET quiver_target_hsaco OR NOT TARGET quiver_target_msl OR NOT TARGET quiver_targets_llvm_test_support)
  return()
endif()

# The AMDGPU metadata as llvm-readelf prints it, compared with the manifest (also used by
# tests/runtime/hsa_kernarg_metadata_test.cpp).
add_library(quiver_test_hsaco_notes STATIC ${CMAKE_CURRENT_LIST_DIR}/hsaco_notes.cpp)
target_include_directories(quiver_test_hsaco_notes PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(quiver_test_hsaco_notes PUBLIC quiver_format)

add_executable(targets_hsaco_test ${CMAKE_CURRENT_LIST_DIR}/targets_hsaco_test.cpp)
target_link_libraries(targets_hsaco_test PRIVATE quiver_targets_llvm_test_support quiver_target_hsaco
  quiver_test_hsaco_notes GTest::gtest_main)
gtest_discover_tests(targets_hsaco_test DISCOVERY_TIMEOUT 60)

add_executable(targets_msl_test ${CMAKE_CURRENT_LIST_DIR}/targets_msl_test.cpp)
target_link_libraries(targets_msl_test PRIVATE quiver_targets_llvm_test_support quiver_target_msl GTest::gtest_main)
gtest_discover_tests(targets_msl_test DISCOVERY_TIMEOUT 60)

# Every HSACO image of the kernel suite and of the op library against its manifest, with the
# runtime's kernarg layout (runtime/backends/hsa/hsa_dispatch.cpp) as the expected offsets.
add_executable(hsaco_metadata_check ${CMAKE_CURRENT_LIST_DIR}/hsaco_metadata_check.cpp
  ${PROJECT_SOURCE_DIR}/runtime/backends/hsa/hsa_dispatch.cpp)
target_include_directories(hsaco_metadata_check PRIVATE ${PROJECT_SOURCE_DIR}/runtime/backends/hsa
  ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(hsaco_metadata_check PRIVATE quiver_test_hsaco_notes quiver_format)
add_test(NAME compiler.hsaco_metadata.kernels
  COMMAND hsaco_metadata_check $<TARGET_PROPERTY:test_kernels,QUIVER_FATBIN_FILE> 4)
add_test(NAME compiler.hsaco_metadata.ops
  COMMAND hsaco_metadata_check ${PROJECT_BINARY_DIR}/runtime/ops/quiver_ops.qfb 4)

# SPIRV-Cross's reflection of the SPIR-V image against the manifest, and the MSL image's ABI.
find_package(spirv_cross_core REQUIRED CONFIG)   # imported targets are per directory
add_executable(msl_reflection_check ${CMAKE_CURRENT_LIST_DIR}/msl_reflection_check.cpp
  ${PROJECT_SOURCE_DIR}/runtime/backends/metal/msl_image.cpp)
target_include_directories(msl_reflection_check PRIVATE ${PROJECT_SOURCE_DIR}/runtime/backends/metal)
target_link_libraries(msl_reflection_check PRIVATE quiver_format spirv-cross-core)
add_test(NAME compiler.msl_reflection.kernels
  COMMAND msl_reflection_check $<TARGET_PROPERTY:test_kernels,QUIVER_FATBIN_FILE>)
add_test(NAME compiler.msl_reflection.ops
  COMMAND msl_reflection_check ${PROJECT_BINARY_DIR}/runtime/ops/quiver_ops.qfb)

# quiver-dump --disasm on the new targets: AMDGPU assembly of one kernel (wave shuffles are
# ds_bpermute) and that kernel's MSL translation unit (a subgroup sum is simd_sum).
add_test(NAME compiler.disasm_hsaco_bpermute
  COMMAND quiver-dump $<TARGET_PROPERTY:test_kernels,QUIVER_FATBIN_FILE> --kernel subgroup_ops --target hsaco --disasm)
set_tests_properties(compiler.disasm_hsaco_bpermute PROPERTIES PASS_REGULAR_EXPRESSION "ds_bpermute_b32")
add_test(NAME compiler.disasm_msl_simd_sum
  COMMAND quiver-dump $<TARGET_PROPERTY:test_kernels,QUIVER_FATBIN_FILE> --kernel subgroup_ops --target msl --disasm)
set_tests_properties(compiler.disasm_msl_simd_sum PROPERTIES PASS_REGULAR_EXPRESSION "simd_sum\\(")
