# Turns a binary file into a C++ source defining
#   extern const unsigned char NAME[];  extern const size_t NAME_size;
# so test binaries carry their SPIR-V and run from any directory (the GPU machine gets a copied
# build tree). Usage: cmake -DINPUT=f.spv -DOUTPUT=f.cpp -DNAME=sym -P vulkan_embed_binary.cmake
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR byte_count "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
# 8 bytes per line.
string(REGEX REPLACE "(0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],)" "\\1\n" body "${body}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by vulkan_embed_binary.cmake; do not edit.\n"
  "#include <cstddef>\n"
  "extern const unsigned char ${NAME}[] = {\n${body}\n};\n"
  "extern const size_t ${NAME}_size = ${byte_count};\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
