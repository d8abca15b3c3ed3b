// Target-dependent rewrites of the neutral IR, run on each target's private copy before the
// target's own lowering (docs/ir.md). The front end leaves the IR unstructured (cf branches
// after mem2reg); legalize() applies what the target asked for and then structures the
// control flow (scf), which every target's lowering expects.
#pragma once

#include <string>

#include "mlir/IR/BuiltinOps.h"

namespace quiver::ir {

struct LegalizeOptions {
  bool scalarize_vectors = false;   // no vector values at all (SPIR-V)
  // With scalarize_vectors: 4-, 8- and 16-byte vector accesses to buffer parameters become one
  // access to a view of the buffer as 32-bit words (kBufferViewsAttr), not one per element; and
  // workgroup arrays of 8-, 16- or 32-bit elements only ever accessed 16 bytes at a time become
  // arrays of vector<4xi32> (the matrix operations on them name their element in word_element).
  bool wide_buffer_access = false;
  bool f16_as_bits = false;         // f16 carried as i16, conversions in integer arithmetic
  bool bf16_as_bits = false;        // same for bf16
  bool expand_dot4_i8 = true;       // byte-lane arithmetic for qv.dot4_i8 (else the target lowers it)
  bool expand_matrix = true;        // the portable matrix-tile fallback (else the target lowers them)
  bool expand_block_tiles = true;   // the portable block-tile fallback (else the target lowers them)
  bool keep_warpgroup_mma = false;  // the target lowers qv.warpgroup_mma / wait (stores are always expanded)
  bool keep_async_copies = false;   // keep qv::copy_async's group marks (the target lowers them)
  bool keep_launch_waits = false;   // keep qv.wait_prior_launches (the target's launches may overlap)
};

// Runs legalize_pipeline(options) (passes.h): the rewrites `options` asks for, then
// lift-cf-to-scf + canonicalize + cse. False with `error` on failure.
bool legalize(mlir::ModuleOp module, const LegalizeOptions& options, std::string& error);

// The individual steps (each throws std::runtime_error with the reason on failure).
// keep_tiles: matrix and block tiles stay whole values (the target lowers their intrinsics itself).
void scalarize_vectors(mlir::ModuleOp module, bool wide_buffer_access = false, bool keep_tiles = false);

// On a kernel function after wide_buffer_access: DenseI32ArrayAttr, one entry per argument
// after the kernel's parameters (the word views), naming the parameter whose buffer it views.
// The target binds each view to that parameter's resource.
inline constexpr const char* kBufferViewsAttr = "qv.buffer_views";
// A qv.matrix_load / qv.matrix_store whose memory became a workgroup array of vector<4xi32>
// (16-byte words) counts offset and stride in words and names the element type the tile is read
// as or written to (f16, …) in its `word_element` attribute.
void carry_16bit_floats_as_bits(mlir::ModuleOp module, bool f16, bool bf16);

}  // namespace quiver::ir
