include_guard(GLOBAL)
# The generators behind `quiverc --emit-header` / `--emit-embed` (and quiver_add_fatbin()).
# Included from compiler/pack/CMakeLists.txt; kept free of LLVM so tests/package can link it
# without the rest of the compiler.
add_library(quiver_pack_header STATIC ${CMAKE_CURRENT_LIST_DIR}/header.cpp)
target_include_directories(quiver_pack_header PUBLIC
  ${PROJECT_SOURCE_DIR}/runtime ${PROJECT_SOURCE_DIR}/compiler)
target_link_libraries(quiver_pack_header PUBLIC quiver_format)
