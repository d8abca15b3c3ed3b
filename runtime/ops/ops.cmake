# The op library, included from runtime/CMakeLists.txt (include(), not add_subdirectory(): the
# custom command that makes the embedded fat binary must live in the directory of the target
# that compiles its output). kernels/*.cpp are compiled by quiverc into one .qfb whose bytes
# quiverc also writes as a C++ source (--emit-embed) linked into libquiver; runtime/ops/*.cpp is
# the host side (include/quiver/ops.h). The compiler is the in-tree quiverc or QUIVER_HOST_QUIVERC
# (CMakeLists.txt); without either there is no op library and every op throws
# quiver::Error(NotFound) saying so.
target_sources(quiver_runtime PRIVATE ops/library.cpp ops/op_call.cpp ops/ops.cpp ops/repack.cpp)
# The kernels' block shapes the host sizes grids by (kernels/launch_shapes.h, host-includable;
# the other headers there are for quiverc only).
target_include_directories(quiver_runtime PRIVATE ${PROJECT_SOURCE_DIR}/kernels)

if(QUIVER_QUIVERC)
  set(_qv_ops_kernels norms.cpp softmax.cpp rows_cpu.cpp elementwise.cpp decode.cpp matvec.cpp matvec_k_a8.cpp dequantize.cpp matmul.cpp matmul_cpu.cpp matmul_tiles.cpp matmul_block.cpp matmul_w8a8_block.cpp matmul_w8a8_tiles.cpp matmul_wgmma.cpp matmul_w8a8_wgmma.cpp attention.cpp attention_tiles.cpp attention_block.cpp attention_wgmma.cpp attention_decode.cpp)
  list(TRANSFORM _qv_ops_kernels PREPEND "${PROJECT_SOURCE_DIR}/kernels/")
  set(_qv_ops_dir "${CMAKE_CURRENT_BINARY_DIR}/ops")
  file(MAKE_DIRECTORY "${_qv_ops_dir}")
  # quiverc is defined later (compiler/ comes after runtime/); target names in COMMAND and
  # DEPENDS resolve when the build files are generated, so the order does not matter.
  set(_qv_ops_targets "")
  if(QUIVER_FATBIN_TARGETS)
    # quiverc takes one ';'-separated argument; $<SEMICOLON> keeps it one argument.
    list(JOIN QUIVER_FATBIN_TARGETS "$<SEMICOLON>" _qv_ops_targets)
    set(_qv_ops_targets --targets "${_qv_ops_targets}")
  endif()
  add_custom_command(
    OUTPUT "${_qv_ops_dir}/quiver_ops.qfb" "${_qv_ops_dir}/quiver_ops_embed.cpp"
    COMMAND ${QUIVER_QUIVERC} ${_qv_ops_kernels} -o "${_qv_ops_dir}/quiver_ops.qfb"
            --emit-embed "${_qv_ops_dir}/quiver_ops_embed.cpp" --namespace quiver::ops::embedded
            --depfile "${_qv_ops_dir}/quiver_ops.d" ${_qv_ops_targets}
    DEPENDS ${_qv_ops_kernels} ${QUIVER_QUIVERC}
    DEPFILE "${_qv_ops_dir}/quiver_ops.d"
    COMMENT "quiverc: building the op library quiver_ops.qfb"
    VERBATIM)
  target_sources(quiver_runtime PRIVATE "${_qv_ops_dir}/quiver_ops_embed.cpp")
  target_compile_definitions(quiver_runtime PRIVATE QUIVER_OPS_EMBEDDED=1)
  # For tests that inspect the fat binary itself (tests/ops: image validation).
  set_target_properties(quiver_runtime PROPERTIES QUIVER_OPS_FATBIN_FILE "${_qv_ops_dir}/quiver_ops.qfb")
else()
  target_compile_definitions(quiver_runtime PRIVATE QUIVER_OPS_EMBEDDED=0)
endif()
