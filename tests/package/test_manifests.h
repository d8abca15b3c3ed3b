// Hand-made manifests for the generated-code tests: one shared by the generator (which turns
// them into headers at build time) and the tests (which check what was generated).
#pragma once

#include <string>
#include <vector>

#include "format/manifest.h"

namespace quiver::test {

inline format::Param buf(std::string name, format::ScalarType t, bool writable, uint32_t vec = 1) {
  format::Param p;
  p.name = std::move(name);
  p.type = t;
  p.vec_width = vec;
  p.is_buffer = true;
  p.access = writable ? format::Access::ReadWrite : format::Access::Read;
  return p;
}

inline format::Param scalar(std::string name, format::ScalarType t) {
  format::Param p;
  p.name = std::move(name);
  p.type = t;
  return p;
}

inline format::Kernel kernel(std::string name, std::string symbol, std::vector<format::Param> params,
                             std::vector<format::Target> targets = {format::Target::CPU}) {
  format::Kernel k;
  k.name = std::move(name);
  k.symbol = std::move(symbol);
  k.params = std::move(params);
  k.targets = std::move(targets);
  return k;
}

// Every parameter shape a wrapper can have, plus names a naive generator would get wrong.
inline format::Manifest signature_manifest() {
  using S = format::ScalarType;
  format::Manifest m;
  m.compiler_version = "quiver tests (hand-made manifest)";
  m.source_hash = "0123456789abcdef";
  m.kernels.push_back(kernel("saxpy", "qv_k0_saxpy",
                             {buf("x", S::F32, false), buf("y", S::F32, true), scalar("a", S::F32),
                              scalar("n", S::U32)},
                             {format::Target::PTX, format::Target::SPIRV, format::Target::CPU}));
  m.kernels.push_back(kernel("all_scalars", "qv_k1_all_scalars",
                             {buf("out", S::U8, true), scalar("flag", S::Bool), scalar("i32", S::I32),
                              scalar("u32", S::U32), scalar("i64", S::I64), scalar("u64", S::U64),
                              scalar("f", S::F32), scalar("h", S::F16), scalar("b", S::BF16)}));
  m.kernels.push_back(kernel("all_buffers", "qv_k2_all_buffers",
                             {buf("h", S::F16, false), buf("b", S::BF16, true), buf("i8", S::I8, false),
                              buf("u16", S::U16, true), buf("d", S::F64, false), buf("flags", S::Bool, false),
                              buf("i16", S::I16, true), buf("u64", S::U64, true), buf("i64", S::I64, false),
                              buf("u8", S::U8, false), buf("i32", S::I32, true)}));
  m.kernels.push_back(kernel("vec_buffers", "qv_k3_vec_buffers",
                             {buf("in", S::F32, false, 4), buf("out", S::F16, true, 8),
                              buf("pairs", S::BF16, true, 2)}));
  // "device"/"grid" collide with the wrapper's own parameters, "" and "class" cannot be names,
  // the second "x" is a duplicate; "quiver", "std" and "load" must still work as names.
  m.kernels.push_back(kernel("awkward_names", "qv_k4_awkward_names",
                             {buf("device", S::F32, true), buf("grid", S::F32, false),
                              scalar("quiver", S::U32), scalar("std", S::F32), scalar("", S::I32),
                              scalar("load", S::U32), scalar("class", S::I64), scalar("x", S::U32),
                              scalar("x", S::U32)}));
  format::Kernel tmpl = kernel("scale_rows<float, 4096>", "qv_k5_scale_rows_float_4096",
                               {buf("in", S::F32, false), buf("out", S::F32, true), scalar("s", S::F32)});
  tmpl.block = {128, 1, 1};
  m.kernels.push_back(tmpl);
  format::Kernel none = kernel("no_params", "qv_k6_no_params", {});
  none.block = {8, 8, 4};
  none.shared_bytes = 1024;
  none.uses_barrier = true;
  m.kernels.push_back(none);
  return m;
}

// Kernels that tests/package/cpu_image_kernels.c implements for the CPU backend (same symbols,
// same parameters), so generated wrappers can be run end to end without quiverc.
inline format::Manifest cpu_manifest() {
  using S = format::ScalarType;
  format::Manifest m;
  m.compiler_version = "quiver tests (host-compiled CPU image)";
  m.source_hash = "fedcba9876543210";
  m.kernels.push_back(kernel("saxpy", "qv_k0_saxpy",
                             {buf("x", S::F32, false), buf("y", S::F32, true), scalar("a", S::F32),
                              scalar("n", S::U32)}));
  m.kernels.push_back(kernel("select_scale", "qv_k1_select_scale",
                             {buf("in", S::F32, false), buf("out", S::F32, true), scalar("negate", S::Bool),
                              scalar("s", S::F32), scalar("n", S::U32)}));
  format::Kernel fill = kernel("fill_pattern<uint32_t>", "qv_k2_fill_pattern_uint32_t",
                               {buf("out", S::U32, true), scalar("mul", S::U32), scalar("n", S::U32)});
  fill.block = {64, 1, 1};
  m.kernels.push_back(fill);
  return m;
}

}  // namespace quiver::test
