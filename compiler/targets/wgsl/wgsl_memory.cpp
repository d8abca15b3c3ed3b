// Memories of the WGSL emitter: buffer parameters (storage buffers), qv::shared arrays
// (var<workgroup>) and private arrays, with their loads, stores and atomics.
//
// WGSL has no 8- or 16-bit types, so buffers and shared arrays of 8/16-bit elements are arrays
// of u32 words, each holding 4 or 2 elements (little-endian, as the host's bytes). A store of
// one such element must not disturb its neighbours, which other invocations may be storing at
// the same moment: it clears its bits with atomicAnd and sets them with atomicOr, so writable
// packed memories are arrays of atomic<u32>. Memories used by atomics are atomic<u32> (or
// atomic<i32> when signed min/max is used on them); float atomics work on the bits with a
// compare-exchange loop, since WGSL has no float atomics.
#include <algorithm>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"
#include "targets/target.h"
#include "targets/wgsl/wgsl_emitter.h"

namespace quiver::compiler::wgsl::detail {

namespace {

bool is_workgroup(mlir::MemRefType type) {
  auto space = llvm::dyn_cast_or_null<mlir::gpu::AddressSpaceAttr>(type.getMemorySpace());
  return space && space.getValue() == mlir::gpu::AddressSpace::Workgroup;
}

}  // namespace

std::string Memory::word_type() const {
  if (atomic) return atomic_signed ? "atomic<i32>" : "atomic<u32>";
  if (is_float && !packed) return "f32";
  if (elem_bits == 64) return "vec2<u32>";
  return "u32";
}

uint64_t Memory::words() const {
  if (!packed) return elements;
  uint64_t per_word = 32 / elem_bits;
  return (elements + per_word - 1) / per_word;
}

void KernelEmitter::analyse_memories() {
  auto add = [&](mlir::Value memref, Memory m, mlir::Operation* where) {
    auto type = llvm::cast<mlir::MemRefType>(memref.getType());
    if (type.getRank() != 1) fail_op(where, "memory of rank " + std::to_string(type.getRank()) + " (only 1-D memories)");
    mlir::Type elem = type.getElementType();
    if (elem.isF32()) {
      m.is_float = true;
    } else if (auto i = llvm::dyn_cast<mlir::IntegerType>(elem);
               i && (i.getWidth() == 8 || i.getWidth() == 16 || i.getWidth() == 32 || i.getWidth() == 64)) {
      m.elem_bits = i.getWidth();
    } else {
      fail_op(where, "memory of elements of a type WGSL cannot store");
    }
    if (type.hasStaticShape()) m.elements = uint64_t(type.getShape()[0]);
    m.packed = m.elem_bits < 32 && m.space != Memory::Space::Private;
    // Every use must be a load, store or atomic of this very memory: a pointer chosen at run
    // time between several memories has no WGSL form (WGSL pointers cannot be selected).
    bool signed_minmax = false, unsigned_minmax = false;
    for (mlir::OpOperand& use : memref.getUses()) {
      mlir::Operation* user = use.getOwner();
      bool is_memory_operand = false;
      if (auto load = llvm::dyn_cast<mlir::memref::LoadOp>(user)) is_memory_operand = load.getMemRef() == memref;
      else if (auto store = llvm::dyn_cast<mlir::memref::StoreOp>(user)) {
        is_memory_operand = store.getMemRef() == memref && store.getValueToStore() != memref;
        m.written = true;
      } else if (auto rmw = llvm::dyn_cast<mlir::memref::AtomicRMWOp>(user)) {
        is_memory_operand = rmw.getMemref() == memref;
        m.written = m.atomic = true;
        using K = mlir::arith::AtomicRMWKind;
        K k = rmw.getKind();
        if (k == K::maxs || k == K::mins) signed_minmax = true;
        if (k == K::maxu || k == K::minu) unsigned_minmax = true;
      } else if (auto rmw = llvm::dyn_cast<mlir::memref::GenericAtomicRMWOp>(user)) {
        is_memory_operand = rmw.getMemref() == memref;
        m.written = m.atomic = true;
      }
      if (!is_memory_operand)
        fail_op(user, "a pointer into " + m.name +
                          " is used other than by a load, store or atomic (a pointer chosen at run time between "
                          "memories, or stored, has no WGSL form)");
    }
    if (signed_minmax && unsigned_minmax)
      fail_op(where, "signed and unsigned atomic min/max on the same memory");
    if (m.atomic && m.space == Memory::Space::Private) fail_op(where, "atomics on a private (thread-local) array");
    if (m.atomic && m.packed) fail_op(where, "atomics on 8- or 16-bit elements are not supported by the wgsl target");
    if (m.atomic && m.elem_bits == 64) fail_op(where, "atomics on 64-bit elements are not supported by the wgsl target");
    if (m.packed && m.written) m.atomic = true;
    m.atomic_signed = m.atomic && signed_minmax;
    memory_index_[memref] = memories_.size();
    memories_.push_back(std::move(m));
  };

  mlir::Block& entry = func_.getBody().front();
  for (unsigned i = 0; i < func_.getNumArguments(); ++i) {
    mlir::Value arg = entry.getArgument(i);
    if (!llvm::isa<mlir::MemRefType>(arg.getType())) continue;
    if (i >= kernel_.params.size() || !kernel_.params[i].is_buffer)
      fail("parameter " + std::to_string(i) + " is a memref in the IR but not a buffer in the manifest");
    Memory m;
    m.name = "qv_buf" + std::to_string(i);
    m.space = Memory::Space::Storage;
    m.binding = i;
    add(arg, std::move(m), func_.getOperation());
    Memory& added = memories_.back();
    added.read_only = kernel_.params[i].access == format::Access::Read && !added.written;
    bindings_.push_back({i, added.read_only ? Binding::Kind::ReadOnlyStorage : Binding::Kind::Storage});
  }
  unsigned shared = 0, local = 0;
  func_.walk([&](mlir::memref::AllocaOp alloca) {
    mlir::MemRefType type = alloca.getType();
    if (!type.hasStaticShape()) fail_op(alloca, "memory of dynamic size");
    Memory m;
    if (is_workgroup(type)) {
      m.space = Memory::Space::Workgroup;
      m.name = "qv_shared" + std::to_string(shared++);
    } else if (!type.getMemorySpace()) {
      m.space = Memory::Space::Private;
      m.name = "qv_local" + std::to_string(local++);
    } else {
      fail_op(alloca, "memory in an address space the wgsl target does not know");
    }
    add(alloca.getResult(), std::move(m), alloca);
  });
  func_.walk([&](mlir::memref::AllocOp alloc) { fail_op(alloc, "dynamic allocation (memref.alloc)"); });
}

std::string KernelEmitter::declare_memories() {
  std::string out;
  for (const Memory& m : memories_) {
    if (m.space == Memory::Space::Storage) {
      const format::Param& p = kernel_.params[m.binding];
      out += "@group(0) @binding(" + std::to_string(m.binding) + ") var<storage, " +
             (m.read_only ? "read" : "read_write") + "> " + m.name + ": array<" + m.word_type() + ">;   // '" +
             p.name + "' (" + std::string(format::to_string(p.type)) +
             (p.vec_width > 1 ? " x" + std::to_string(p.vec_width) : std::string()) + ")" +
             (m.packed ? ", " + std::to_string(32 / m.elem_bits) + " per word" : std::string()) + "\n";
    } else if (m.space == Memory::Space::Workgroup) {
      out += "var<workgroup> " + m.name + ": array<" + m.word_type() + ", " + std::to_string(m.words()) + ">;" +
             (m.packed ? "   // " + std::to_string(m.elements) + " elements of " + std::to_string(m.elem_bits) + " bits"
                       : std::string()) +
             "\n";
    }
  }
  return out;
}

Memory& KernelEmitter::memory_of(mlir::Value memref, mlir::Operation* where) {
  auto it = memory_index_.find(memref);
  if (it == memory_index_.end()) fail_op(where, "access to a memory that is neither a buffer parameter nor an alloca");
  return memories_[it->second];
}

std::string KernelEmitter::element_ref(const Memory& m, const std::string& word_index) const {
  return m.name + "[" + word_index + "]";
}

std::string KernelEmitter::from_word(const Memory& m, const std::string& word, mlir::Type type) {
  if (type.isF32()) return m.atomic ? "bitcast<f32>(" + word + ")" : word;
  if (m.atomic_signed) return "bitcast<u32>(" + word + ")";
  return word;
}

std::string KernelEmitter::to_word(const Memory& m, const std::string& value, mlir::Type type) {
  if (type.isF32()) return m.atomic ? "bitcast<u32>(" + value + ")" : value;
  if (m.atomic_signed) return "bitcast<i32>(" + value + ")";
  return value;
}

std::string KernelEmitter::load(const Memory& m, const std::string& index, mlir::Type type) {
  if (!m.packed) {
    std::string ref = element_ref(m, index);
    return from_word(m, m.atomic ? "atomicLoad(&" + ref + ")" : ref, type);
  }
  unsigned per_word = 32 / m.elem_bits;
  std::string word_index = "(" + index + " >> " + (per_word == 4 ? "2u" : "1u") + ")";
  std::string ref = element_ref(m, word_index);
  std::string word = m.atomic ? "atomicLoad(&" + ref + ")" : ref;
  std::string shift = "((" + index + " & " + std::to_string(per_word - 1) + "u) * " + std::to_string(m.elem_bits) + "u)";
  return "((" + word + " >> " + shift + ") & " + (m.elem_bits == 8 ? "0xffu" : "0xffffu") + ")";
}

void KernelEmitter::store(const Memory& m, const std::string& index, mlir::Value value) {
  std::string v = name(value);
  if (!m.packed) {
    std::string ref = element_ref(m, index);
    if (m.atomic) line("atomicStore(&" + ref + ", " + to_word(m, v, value.getType()) + ");");
    else line(ref + " = " + v + ";");
    return;
  }
  unsigned per_word = 32 / m.elem_bits;
  std::string word = fresh("word"), shift = fresh("shift");
  std::string mask = m.elem_bits == 8 ? "0xffu" : "0xffffu";
  line("let " + word + " = " + index + " >> " + (per_word == 4 ? "2u" : "1u") + ";");
  line("let " + shift + " = (" + index + " & " + std::to_string(per_word - 1) + "u) * " + std::to_string(m.elem_bits) + "u;");
  std::string ref = element_ref(m, word);
  // Two atomics, each touching only this element's bits: neighbours stored concurrently by
  // other invocations are never lost (a plain read-modify-write of the word could lose them).
  line("atomicAnd(&" + ref + ", ~(" + mask + " << " + shift + "));");
  line("atomicOr(&" + ref + ", (" + v + " & " + mask + ") << " + shift + ");");
}

bool KernelEmitter::emit_memory(mlir::Operation* op) {
  if (auto load_op = llvm::dyn_cast<mlir::memref::LoadOp>(op)) {
    Memory& m = memory_of(load_op.getMemRef(), op);
    if (load_op.getIndices().size() != 1) fail_op(op, "load with other than one index");
    let(load_op.getResult(), load(m, name(load_op.getIndices()[0]), load_op.getType()));
    return true;
  }
  if (auto store_op = llvm::dyn_cast<mlir::memref::StoreOp>(op)) {
    Memory& m = memory_of(store_op.getMemRef(), op);
    if (store_op.getIndices().size() != 1) fail_op(op, "store with other than one index");
    store(m, name(store_op.getIndices()[0]), store_op.getValueToStore());
    return true;
  }
  if (llvm::isa<mlir::memref::AtomicRMWOp>(op)) {
    emit_atomic_rmw(op);
    return true;
  }
  if (llvm::isa<mlir::memref::GenericAtomicRMWOp>(op)) {
    emit_generic_atomic(op);
    return true;
  }
  if (llvm::isa<mlir::memref::AllocaOp>(op)) return true;   // declared by analyse_memories
  if (op->getDialect() && op->getDialect()->getNamespace() == "memref")
    fail_op(op, "memref operation '" + op->getName().getStringRef().str() + "' is not supported by the wgsl target");
  return false;
}

void KernelEmitter::emit_atomic_rmw(mlir::Operation* op) {
  auto rmw = llvm::cast<mlir::memref::AtomicRMWOp>(op);
  Memory& m = memory_of(rmw.getMemref(), op);
  if (rmw.getIndices().size() != 1) fail_op(op, "atomic with other than one index");
  std::string ref = element_ref(m, name(rmw.getIndices()[0]));
  mlir::Type type = rmw.getValue().getType();
  std::string v = name(rmw.getValue());
  unsigned w = int_width(type);
  if (w != 0 && w != 32) fail_op(op, "atomics on integers other than 32 bits");
  using K = mlir::arith::AtomicRMWKind;
  const char* fn = nullptr;
  switch (rmw.getKind()) {
    case K::addi: fn = "atomicAdd"; break;
    case K::andi: fn = "atomicAnd"; break;
    case K::ori: fn = "atomicOr"; break;
    case K::assign: fn = "atomicExchange"; break;
    case K::maxs: case K::maxu: fn = "atomicMax"; break;
    case K::mins: case K::minu: fn = "atomicMin"; break;
    default: break;
  }
  if (fn) {
    let(rmw.getResult(), from_word(m, std::string(fn) + "(&" + ref + ", " + to_word(m, v, type) + ")", type));
    return;
  }
  // No WGSL atomic for it (float add, multiply, float min/max): a compare-exchange loop on the
  // bits, retried until no other invocation changed the word in between.
  std::string update;
  switch (rmw.getKind()) {
    case K::addf: update = "@ + " + v; break;
    case K::mulf: update = "@ * " + v; break;
    case K::muli: update = "@ * " + v; break;
    case K::maximumf: case K::maxnumf: update = "select(max(@, " + v + "), " + v + ", @ != @)"; break;
    case K::minimumf: case K::minnumf: update = "select(min(@, " + v + "), " + v + ", @ != @)"; break;
    default: fail_op(op, "atomic kind not supported by the wgsl target");
  }
  declare_var(rmw.getResult());
  std::string result = names_[rmw.getResult()];
  std::string old = fresh("old"), cur = fresh("cur"), res = fresh("cas");
  line("loop {");
  ++indent_;
  line("let " + old + " = atomicLoad(&" + ref + ");");
  line("let " + cur + ": " + type_of(type, op) + " = " + from_word(m, old, type) + ";");
  std::string upd;   // `update` with every "@" replaced by the current value's name
  for (char c : update) upd += c == '@' ? cur : std::string(1, c);
  line("let " + res + " = atomicCompareExchangeWeak(&" + ref + ", " + old + ", " + to_word(m, upd, type) + ");");
  line("if (" + res + ".exchanged) { " + result + " = " + cur + "; break; }");
  --indent_;
  line("}");
}

void KernelEmitter::emit_generic_atomic(mlir::Operation* op) {
  auto rmw = llvm::cast<mlir::memref::GenericAtomicRMWOp>(op);
  Memory& m = memory_of(rmw.getMemref(), op);
  if (rmw.getIndices().size() != 1) fail_op(op, "atomic with other than one index");
  mlir::Type type = rmw.getResult().getType();
  unsigned w = int_width(type);
  if (w != 0 && w != 32) fail_op(op, "atomics on integers other than 32 bits");
  std::string ref = element_ref(m, name(rmw.getIndices()[0]));
  // Load the word, compute the new value with the op's body, compare-exchange; retry while
  // another invocation changed the word in between (or the weak exchange failed spuriously).
  // A compare-and-swap whose comparison fails stores the old value back, which is harmless.
  declare_var(rmw.getResult());
  std::string result = names_[rmw.getResult()];
  std::string old = fresh("old"), res = fresh("cas");
  line("loop {");
  ++indent_;
  line("let " + old + " = atomicLoad(&" + ref + ");");
  mlir::Block& body = rmw.getRegion().front();
  let(body.getArgument(0), from_word(m, old, type));
  for (mlir::Operation& inner : body.without_terminator()) emit_op(&inner);
  auto yield = llvm::cast<mlir::memref::AtomicYieldOp>(body.getTerminator());
  line("let " + res + " = atomicCompareExchangeWeak(&" + ref + ", " + old + ", " +
       to_word(m, name(yield.getResult()), type) + ");");
  line("if (" + res + ".exchanged) { " + result + " = " + name(body.getArgument(0)) + "; break; }");
  --indent_;
  line("}");
}

}  // namespace quiver::compiler::wgsl::detail
