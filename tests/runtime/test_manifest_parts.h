// Pieces of hand-written manifests for the runtime tests' fat binaries (test_fatbin.cpp for the
// CPU image, vulkan_test_module.h for the SPIR-V one).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "format/manifest.h"

namespace quiver::test {

inline format::Param buffer_param(std::string name, format::ScalarType t, format::Access access, uint32_t vec = 1) {
  format::Param p;
  p.name = std::move(name);
  p.type = t;
  p.is_buffer = true;
  p.access = access;
  p.vec_width = vec;
  return p;
}

inline format::Param scalar_param(std::string name, format::ScalarType t) {
  format::Param p;
  p.name = std::move(name);
  p.type = t;
  return p;
}

inline format::Kernel kernel_entry(std::string name, std::string symbol, std::vector<format::Param> params,
                                   std::array<uint32_t, 3> block, uint32_t shared, bool barrier,
                                   std::vector<format::Target> targets) {
  format::Kernel k;
  k.name = std::move(name);
  k.symbol = std::move(symbol);
  k.params = std::move(params);
  k.block = block;
  k.shared_bytes = shared;
  k.uses_barrier = barrier;
  k.targets = std::move(targets);
  return k;
}

}  // namespace quiver::test
