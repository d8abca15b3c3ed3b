// The WGSL emitter: one structured kernel function of the neutral IR (docs/ir.md, after
// ir::legalize + ir::lower_math) → one complete WGSL module with one @compute entry point,
// written the way MLIR's EmitC writes C: every SSA value is a `let`, every value an op with
// regions produces is a `var` assigned by its scf.yield, and control flow maps 1:1 onto
// WGSL's if / loop / switch. The binding layout is docs/abi.md "WGSL".
//
// Value representation (why: WGSL has only 32-bit integers and no signless type):
// - i1 is `bool`; every other integer (i8, i16, i32, index) is a `u32` holding the value
//   zero-extended from its width, so equality and unsigned ops work directly; signed ops
//   sign-extend into an `i32` first and results are masked back to the width;
// - i64 is a `vec2<u32>` (low word, high word) with helper functions for carries, products,
//   shifts, comparisons, division and float conversions (wgsl_int64.cpp);
// - f32 is `f32`. f16/bf16 reach the emitter as i16 bits (legalize's exact conversions);
//   f64 and integers wider than 64 bits are rejected before emission (check_types).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "format/manifest.h"
#include "llvm/ADT/DenseMap.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace quiver::compiler::wgsl {

inline constexpr const char* kTargetName = "wgsl";

// One binding of a kernel's bind group 0 (docs/abi.md "WGSL").
struct Binding {
  enum class Kind { ReadOnlyStorage, Storage, Uniform };
  uint32_t index = 0;
  Kind kind = Kind::Storage;
};

// One emitted WGSL module: `entry` is its @compute function.
struct KernelModule {
  std::string entry;
  bool needs_subgroups = false;   // begins with `enable subgroups;`
  std::vector<Binding> bindings;
  std::string source;
};

// Rejects what WGSL cannot express (f64, other float types, integers wider than 64 bits), naming kernel,
// where and why; run on the neutral IR before legalisation so messages speak of the source types.
void check_types(mlir::func::FuncOp func, const format::Kernel& kernel);

// True when the kernel uses a subgroup operation (gpu.subgroup_reduce, shuffle, subgroup_size,
// lane_id): it then gets a second module computing with subgroups of one invocation, for
// devices without the `subgroups` feature.
bool uses_subgroups(mlir::func::FuncOp func);

// Emits `func` (structured, no cf ops). With `native_subgroups` false, subgroup operations are
// those of a subgroup of size 1. Throws TargetError naming the kernel and the op at fault.
KernelModule emit_kernel(mlir::func::FuncOp func, const format::Kernel& kernel, bool native_subgroups);

namespace detail {

bool is_int64(mlir::Type t);

// A memref the kernel touches: a buffer parameter, a workgroup array or a private array.
struct Memory {
  enum class Space { Storage, Workgroup, Private };
  std::string name;                // the WGSL variable
  Space space = Space::Storage;
  unsigned elem_bits = 32;         // 8, 16, 32 or 64 (vec2<u32> elements)
  bool is_float = false;           // f32 elements (kept as f32 unless atomic)
  bool packed = false;             // 8/16-bit elements, 32/elem_bits of them per u32 word
  bool atomic = false;             // array<atomic<u32|i32>>
  bool atomic_signed = false;      // atomic<i32> (signed min/max)
  bool read_only = false;          // var<storage, read>
  bool written = false;
  uint64_t elements = 0;           // static element count (workgroup / private)
  uint32_t binding = 0;            // storage buffers
  std::string word_type() const;   // WGSL type of one array element
  uint64_t words() const;          // array length in words (static memories)
};

class KernelEmitter {
 public:
  KernelEmitter(mlir::func::FuncOp func, const format::Kernel& kernel, bool native_subgroups);
  KernelModule run();

 private:
  // --- wgsl_emitter.cpp: values, types, ops and control flow.
  [[noreturn]] void fail(const std::string& reason) const;
  [[noreturn]] void fail_op(mlir::Operation* op, const std::string& reason) const;
  std::string fresh(const char* prefix);
  const std::string& name(mlir::Value v);
  void line(const std::string& text);
  void let(mlir::Value v, const std::string& expr);
  void declare_var(mlir::Value v);
  std::string type_of(mlir::Type t, mlir::Operation* where) const;
  unsigned int_width(mlir::Type t) const;   // 1 for i1, 32 for index; 0 for floats
  std::string zero_of(mlir::Type t, mlir::Operation* where) const;
  static std::string sext(const std::string& x, unsigned width);   // → i32 expression
  static std::string wrap(const std::string& x, unsigned width);   // mask to the width
  std::string as_u32(mlir::Value v);                                 // bool → 0u/1u
  std::string constant(mlir::Operation* op);

  // --- wgsl_int64.cpp: 64-bit integers as vec2<u32>.
  bool emit_arith64(mlir::Operation* op);
  std::string call64(const std::string& helper, const std::string& args);   // records the helper
  std::string abs64(const std::string& x);
  std::string int64_helper_text() const;

  void emit_block(mlir::Block& block, const std::vector<std::string>& yield_to);
  void emit_op(mlir::Operation* op);
  bool emit_arith(mlir::Operation* op);
  bool emit_math(mlir::Operation* op);
  bool emit_gpu(mlir::Operation* op);
  bool emit_scf(mlir::Operation* op);
  void emit_call(mlir::Operation* op);
  void assign_yield(mlir::Operation* terminator, const std::vector<std::string>& to);
  std::vector<std::string> result_vars(mlir::Operation* op);

  // --- wgsl_memory.cpp: memories, loads, stores, atomics.
  void analyse_memories();
  std::string declare_memories();
  Memory& memory_of(mlir::Value memref, mlir::Operation* where);
  std::string element_ref(const Memory& m, const std::string& word_index) const;
  std::string load(const Memory& m, const std::string& index, mlir::Type type);
  void store(const Memory& m, const std::string& index, mlir::Value value);
  bool emit_memory(mlir::Operation* op);
  void emit_atomic_rmw(mlir::Operation* op);
  void emit_generic_atomic(mlir::Operation* op);
  std::string to_word(const Memory& m, const std::string& value, mlir::Type type);
  std::string from_word(const Memory& m, const std::string& word, mlir::Type type);

  mlir::func::FuncOp func_;
  const format::Kernel& kernel_;
  bool native_subgroups_;
  std::ostringstream body_;
  int indent_ = 1;
  int counter_ = 0;
  llvm::DenseMap<mlir::Value, std::string> names_;
  llvm::DenseMap<mlir::Value, size_t> memory_index_;
  std::vector<Memory> memories_;
  std::vector<Binding> bindings_;
  std::string scalar_struct_;   // the uniform struct's members
  std::set<std::string> int64_helpers_;   // wgsl_int64.cpp's helper functions the kernel calls
};

}  // namespace detail
}  // namespace quiver::compiler::wgsl
