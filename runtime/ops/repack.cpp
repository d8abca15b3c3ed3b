// ops::repack_q4_0 / repack_q8_0: GGUF q4_0 / q8_0 blocks into the order kernels/matvec.cpp's
// repacked matvecs read ("Repacked" there; docs/ops.md; q4_0's nibbles stored as q XOR 8); ops::repack_q6_k: q6_k super-blocks
// with their d split off for kernels/matvec_k_a8.cpp. A host function, run once per weight
// matrix when a model is loaded, in time linear in its bytes.
#include <cstring>
#include <string>

#include "quiver/ops.h"

namespace quiver::ops {
namespace {

// quarter_bytes: a block's quants split in four (4 bytes of q4_0's 16, 8 of q8_0's 32).
// flip: XORed into every quant byte (q4_0: 0x88, q8_0: 0).
std::vector<uint8_t> repack(const char* op, std::span<const uint8_t> blocks, size_t rows, size_t cols,
                            size_t block_bytes, uint8_t flip) {
  auto fail = [&](const std::string& what) { throw Error(ErrorCode::InvalidArgument, std::string(op) + ": " + what); };
  if (cols % kRepackCols != 0)
    fail("cols = " + std::to_string(cols) + " is not a multiple of " + std::to_string(kRepackCols) +
         " (a repacked row is whole chunks of 32 blocks)");
  const size_t per_row = cols / kQuantBlock;
  if (rows != 0 && per_row > SIZE_MAX / block_bytes / rows) fail("rows * cols overflows");
  const size_t total = rows * per_row, bytes = total * block_bytes;
  if (blocks.size() != bytes)
    fail("blocks has " + std::to_string(blocks.size()) + " bytes, expected rows * (cols / 32) * " +
         std::to_string(block_bytes) + " = " + std::to_string(bytes));
  const size_t quant_bytes = block_bytes - 2, quarter = quant_bytes / 4;
  std::vector<uint8_t> out(bytes);
  uint8_t* quants = out.data();
  uint8_t* scales = out.data() + total * quant_bytes;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t b = 0; b < per_row; ++b) {
      const uint8_t* block = blocks.data() + (r * per_row + b) * block_bytes;
      // Chunk c of the row, layout lane 4 (b % 8) + p, word slot i = (b % 32) / 8 of the lane's.
      const size_t c = b / 32, g = b % 8, i = (b % 32) / 8;
      uint8_t* chunk = quants + (r * per_row + 32 * c) * quant_bytes;
      for (size_t p = 0; p < 4; ++p) {
        uint8_t* to = chunk + (4 * g + p) * quant_bytes + i * quarter;
        std::memcpy(to, block + 2 + p * quarter, quarter);
        for (size_t k = 0; k < quarter; ++k) to[k] ^= flip;
      }
      std::memcpy(scales + 2 * (r * per_row + 32 * c + 4 * g + i), block, 2);
    }
  }
  return out;
}

}  // namespace

std::vector<uint8_t> repack_q4_0(std::span<const uint8_t> blocks, size_t rows, size_t cols) {
  // q4_0's nibbles as q XOR 8, the 4-bit two's complement of q - 8: a nibble moved to the top of
  // its byte (one shift and mask, kernels/matvec.cpp) is then the signed byte 16 (q - 8), where
  // q - 8 itself took an add and an XOR per word more.
  return repack("repack_q4_0", blocks, rows, cols, kQ4_0BlockBytes, 0x88);
}
std::vector<uint8_t> repack_q8_0(std::span<const uint8_t> blocks, size_t rows, size_t cols) {
  return repack("repack_q8_0", blocks, rows, cols, kQ8_0BlockBytes, 0);
}

// Every super-block's first 208 bytes (ql, qh, scales) in order, then every f16 d in order.
std::vector<uint8_t> repack_q6_k(std::span<const uint8_t> blocks, size_t rows, size_t cols) {
  auto fail = [](const std::string& what) { throw Error(ErrorCode::InvalidArgument, "repack_q6_k: " + what); };
  if (cols % kQuantSuperBlock != 0)
    fail("cols = " + std::to_string(cols) + " is not a multiple of the 256-element super-block");
  const size_t per_row = cols / kQuantSuperBlock;
  if (rows != 0 && per_row > SIZE_MAX / kQ6_KBlockBytes / rows) fail("rows * cols overflows");
  const size_t total = rows * per_row, bytes = total * kQ6_KBlockBytes, body = kQ6_KBlockBytes - 2;
  if (blocks.size() != bytes)
    fail("blocks has " + std::to_string(blocks.size()) + " bytes, expected rows * (cols / 256) * 210 = " +
         std::to_string(bytes));
  std::vector<uint8_t> out(bytes);
  for (size_t b = 0; b < total; ++b) {
    const uint8_t* block = blocks.data() + b * kQ6_KBlockBytes;
    std::memcpy(out.data() + b * body, block, body);
    std::memcpy(out.data() + total * body + 2 * b, block + body, 2);
  }
  return out;
}

}  // namespace quiver::ops
