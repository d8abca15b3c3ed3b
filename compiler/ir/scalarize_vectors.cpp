// Vector values -> one scalar per element, for targets that take no vectors of the sizes the
// kernel language has (SPIR-V compute vectors stop at 4 elements, and MLIR 19 lowers
// vector.load to a pointer bitcast that Vulkan's logical addressing forbids). Runs on the
// unstructured IR (cf branches), where a vector block argument simply becomes N arguments.
// Memory holding vectors (buffers of qv::vec, shared arrays, slots) becomes memory of scalars
// at N times the index.
//
// Wide buffer access (SPIR-V): one vector access of 4, 8 or 16 bytes to a buffer parameter
// would become N loads of 1-4 bytes each, which NVIDIA's Vulkan compiler does not merge (bf16
// rows ran at 0.06-0.17 of CUDA). Instead it loads one i32 / vector<2xi32> / vector<4xi32>
// from a view of the same buffer as words and takes the lanes out with shifts (stores: the
// reverse). The view is an extra function argument the target binds to the parameter's
// resource (kBufferViewsAttr). Word index = byte offset / access size, exact because the
// kernel language requires qv::load<N>'s pointer to be aligned to N * sizeof(T) and buffers
// are bound from their start (docs/abi.md); lanes are little-endian within a word.
//
// Word arrays (SPIR-V): a workgroup array of 8-, 16- or 32-bit elements whose every access is 16
// bytes wide (qv::load / qv::store / qv::copy_async of 16 bytes, matrix tiles, which the
// language requires 16-byte aligned with strides of 16 bytes) becomes an array of
// vector<4xi32>, for the same reason: one shared-memory instruction per access instead of 8 or
// 16 narrow ones, and rows a cooperative-matrix load can read 16 bytes at a time. (A view, as for
// buffers, would need aliasing workgroup variables: SPV_KHR_workgroup_memory_explicit_layout.)
#include "ir/legalize.h"
#include "ir/block_tiles.h"
#include "ir/dialect/QvDialect.h"
#include "ir/matrix.h"

#include <map>
#include <stdexcept>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "llvm/ADT/DepthFirstIterator.h"

namespace quiver::ir {
namespace {

// With `keep_tiles`, matrix tiles (ir/matrix.h) are not vectors here: a target that lowers the
// matrix intrinsics itself gives a tile one opaque value (a SPIR-V cooperative matrix), and the
// element-wise arithmetic on it stays one operation.
bool is_vector(mlir::Type t, bool keep_tiles) {
  return llvm::isa<mlir::VectorType>(t) && !(keep_tiles && (is_tile_type(t) || is_block_tile_type(t)));
}

// A memref whose elements are vectors, seen as scalars: memref<K x vector<N x T>> -> memref<K*N x T>.
struct ScalarMemory {
  mlir::Value mem;
  int64_t width = 1;
};

class Scalarizer {
 public:
  Scalarizer(mlir::func::FuncOp fn, bool wide, bool keep_tiles) : fn_(fn), wide_(wide), keep_tiles_(keep_tiles) {}

  void run() {
    if (fn_.isExternal()) return;
    rewrite_memories();
    if (wide_) rewrite_word_arrays();
    for (mlir::Block& block : fn_.getBody()) split_block_arguments(block);
    // Definitions before uses: blocks in dominator-tree order (MLIR keeps no tree for a
    // single-block region).
    std::vector<mlir::Block*> order;
    mlir::DominanceInfo dom(fn_);
    if (fn_.getBody().hasOneBlock()) order.push_back(&fn_.getBody().front());
    else
      for (mlir::DominanceInfoNode* node : llvm::depth_first(dom.getRootNode(&fn_.getBody())))
        order.push_back(node->getBlock());
    for (mlir::Block* block : order)
      for (mlir::Operation& op : llvm::make_early_inc_range(*block))
        op.walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation* inner) { visit(inner); });
    for (auto it = dead_.rbegin(); it != dead_.rend(); ++it) (*it)->dropAllDefinedValueUses();
    for (auto it = dead_.rbegin(); it != dead_.rend(); ++it) (*it)->erase();
    for (auto& [block, count] : old_args_)
      for (unsigned i = count; i-- > 0;)
        if (is_vector(block->getArgument(i).getType())) block->eraseArgument(i);
    if (!view_of_.empty()) {
      mlir::Block& entry = fn_.getBody().front();
      fn_.setFunctionType(mlir::FunctionType::get(fn_.getContext(), entry.getArgumentTypes(),
                                                 fn_.getFunctionType().getResults()));
      fn_->setAttr(kBufferViewsAttr, mlir::DenseI32ArrayAttr::get(fn_.getContext(), view_of_));
    }
  }

 private:
  bool is_vector(mlir::Type t) const { return quiver::ir::is_vector(t, keep_tiles_); }

  [[noreturn]] void fail(mlir::Operation* op, const std::string& what) {
    std::string s;
    llvm::raw_string_ostream os(s);
    op->print(os);
    throw std::runtime_error("cannot scalarize vectors for this target: " + what + " in: " + s);
  }

  // Buffers, shared arrays and slots of vectors become memrefs of scalars.
  void rewrite_memories() {
    mlir::Block& entry = fn_.getBody().front();
    bool changed_args = false;
    for (mlir::BlockArgument arg : entry.getArguments()) {
      auto m = llvm::dyn_cast<mlir::MemRefType>(arg.getType());
      if (!m || !is_vector(m.getElementType())) continue;
      auto v = llvm::cast<mlir::VectorType>(m.getElementType());
      arg.setType(mlir::MemRefType::get(m.getShape(), v.getElementType(), m.getLayout(), m.getMemorySpace()));
      memories_[arg] = {arg, v.getNumElements()};
      changed_args = true;
    }
    if (changed_args) fn_.setFunctionType(mlir::FunctionType::get(fn_.getContext(), entry.getArgumentTypes(),
                                                                 fn_.getFunctionType().getResults()));
    llvm::SmallVector<mlir::memref::AllocaOp> allocas;
    fn_.walk([&](mlir::memref::AllocaOp a) {
      if (is_vector(a.getType().getElementType())) allocas.push_back(a);
    });
    for (mlir::memref::AllocaOp a : allocas) {
      mlir::MemRefType m = a.getType();
      auto v = llvm::cast<mlir::VectorType>(m.getElementType());
      if (!m.hasStaticShape() || m.getRank() > 1) fail(a, "vector memory of this shape");
      int64_t n = (m.getRank() == 0 ? 1 : m.getDimSize(0)) * v.getNumElements();
      mlir::OpBuilder b(a);
      auto scalar = b.create<mlir::memref::AllocaOp>(
          a.getLoc(), mlir::MemRefType::get({n}, v.getElementType(), mlir::MemRefLayoutAttrInterface{}, m.getMemorySpace()));
      scalar->setAttrs(a->getAttrs());
      memories_[a.getResult()] = {scalar.getResult(), v.getNumElements()};
      dead_.push_back(a);
    }
  }

  // Workgroup arrays whose every access is 16 bytes wide -> arrays of vector<4xi32>. (32-bit
  // elements too: the lane shares of cooperative matrices, compiler/targets/spirv.)
  void rewrite_word_arrays() {
    llvm::SmallVector<mlir::memref::AllocaOp> allocas;
    fn_.walk([&](mlir::memref::AllocaOp a) { allocas.push_back(a); });
    for (mlir::memref::AllocaOp a : allocas) {
      mlir::MemRefType m = a.getType();
      auto space = llvm::dyn_cast_or_null<mlir::gpu::AddressSpaceAttr>(m.getMemorySpace());
      mlir::Type element = m.getElementType();
      if (!space || space.getValue() != mlir::gpu::AddressSpace::Workgroup || m.getRank() != 1 ||
          !m.hasStaticShape() || !element.isIntOrFloat())
        continue;
      unsigned bits = element.getIntOrFloatBitWidth();
      if (bits != 8 && bits != 16 && bits != 32) continue;
      int64_t per_word = 128 / bits;
      if (m.getDimSize(0) % per_word != 0) continue;
      bool all_wide = llvm::all_of(a->getUses(), [&](mlir::OpOperand& use) {
        mlir::Operation* user = use.getOwner();
        if (auto load = llvm::dyn_cast<mlir::vector::LoadOp>(user))
          return load.getVectorType().getNumElements() == per_word;
        if (auto store = llvm::dyn_cast<mlir::vector::StoreOp>(user))
          return use.getOperandNumber() == 1 && store.getVectorType().getNumElements() == per_word;
        if (llvm::isa<qv::MatrixLoadOp, qv::MatrixStoreOp>(user)) return keep_tiles_ && use.getOperandNumber() == 0;
        return false;
      });
      if (!all_wide || a->use_empty()) continue;
      mlir::OpBuilder b(a);
      auto word = mlir::VectorType::get({4}, b.getI32Type());
      auto words = b.create<mlir::memref::AllocaOp>(
          a.getLoc(), mlir::MemRefType::get({m.getDimSize(0) / per_word}, word, mlir::MemRefLayoutAttrInterface{}, space));
      words->setAttrs(a->getAttrs());
      word_arrays_[a.getResult()] = {words.getResult(), per_word};
      dead_.push_back(a);
    }
  }

  // A matrix load / store on a word array: the same operation on the words, offset and stride
  // in words (exact: the language requires both to be multiples of 16 bytes), naming the
  // element type the tile is read as or written to in `word_element`.
  void rewrite_word_access(mlir::Operation* access, const ScalarMemory& words) {
    mlir::OpBuilder b(access);
    mlir::Location l = access->getLoc();
    mlir::Type element = llvm::cast<mlir::MemRefType>(access->getOperand(0).getType()).getElementType();
    int64_t shift = llvm::Log2_64(uint64_t(words.width));
    llvm::SmallVector<mlir::Value> operands(access->getOperands());
    operands[0] = words.mem;
    operands[1] = b.create<mlir::arith::ShRUIOp>(l, operands[1], b.create<mlir::arith::ConstantIndexOp>(l, shift));
    operands[2] = b.create<mlir::arith::ShRUIOp>(l, operands[2], b.create<mlir::arith::ConstantIntOp>(l, shift, 32));
    mlir::Operation* on_words = b.clone(*access);
    on_words->setOperands(operands);
    auto word_element = mlir::TypeAttr::get(element);
    if (auto load = llvm::dyn_cast<qv::MatrixLoadOp>(on_words)) load.setWordElementAttr(word_element);
    else llvm::cast<qv::MatrixStoreOp>(on_words).setWordElementAttr(word_element);
    access->replaceAllUsesWith(on_words->getResults());
    dead_.push_back(access);
  }

  void split_block_arguments(mlir::Block& block) {
    if (block.isEntryBlock()) return;
    unsigned count = block.getNumArguments();
    bool any = false;
    for (unsigned i = 0; i < count; ++i) {
      mlir::BlockArgument arg = block.getArgument(i);
      if (!is_vector(arg.getType())) continue;
      auto v = llvm::cast<mlir::VectorType>(arg.getType());
      any = true;
      llvm::SmallVector<mlir::Value> lanes;
      for (int64_t k = 0; k < v.getNumElements(); ++k) lanes.push_back(block.addArgument(v.getElementType(), arg.getLoc()));
      lanes_[arg] = lanes;
    }
    if (any) old_args_.push_back({&block, count});
  }

  llvm::SmallVector<mlir::Value> lanes(mlir::Operation* user, mlir::Value v) {
    auto it = lanes_.find(v);
    if (it == lanes_.end()) fail(user, "a vector operand that was not scalarized");
    return it->second;
  }

  // Element `k` of the scalar memory behind `mem` at vector index `index` (null for rank 0).
  mlir::Value scalar_index(mlir::OpBuilder& b, mlir::Location l, const ScalarMemory& m, mlir::Value index, int64_t k) {
    mlir::Value base = index ? b.create<mlir::arith::MulIOp>(l, index, b.create<mlir::arith::ConstantIndexOp>(l, m.width)).getResult()
                             : b.create<mlir::arith::ConstantIndexOp>(l, 0).getResult();
    return b.create<mlir::arith::AddIOp>(l, base, b.create<mlir::arith::ConstantIndexOp>(l, k));
  }

  // --- wide buffer access -------------------------------------------------------------------

  // Words per access (1, 2, 4) when an access of `lanes` elements of `element` to `base` can go
  // through a word view; 0 otherwise.
  int64_t wide_words(mlir::Value base, mlir::Type element, int64_t lanes) {
    auto arg = llvm::dyn_cast<mlir::BlockArgument>(base);
    if (!wide_ || !arg || arg.getOwner() != &fn_.getBody().front() || arg.getArgNumber() >= params_) return 0;
    if (!element.isIntOrFloat()) return 0;
    unsigned bits = element.getIntOrFloatBitWidth();
    if (bits != 8 && bits != 16 && bits != 32) return 0;
    int64_t total = lanes * bits;
    if (lanes < 2 || (total != 32 && total != 64 && total != 128)) return 0;
    return total / 32;
  }

  // The view of parameter `arg` as `words`-word elements, added as an entry-block argument.
  mlir::Value view(mlir::BlockArgument arg, int64_t words) {
    auto key = std::make_pair(arg.getArgNumber(), words);
    if (auto it = views_.find(key); it != views_.end()) return it->second;
    auto m = llvm::cast<mlir::MemRefType>(arg.getType());
    mlir::Type i32 = mlir::IntegerType::get(fn_.getContext(), 32);
    mlir::Type word = words == 1 ? i32 : mlir::VectorType::get({words}, i32);
    auto type = mlir::MemRefType::get({mlir::ShapedType::kDynamic}, word, mlir::MemRefLayoutAttrInterface{},
                                      m.getMemorySpace());
    mlir::Value v = fn_.getBody().front().addArgument(type, arg.getLoc());
    view_of_.push_back(static_cast<int32_t>(arg.getArgNumber()));
    views_[key] = v;
    return v;
  }

  // `words_mem`: a buffer's word view (view()) or a word array.
  llvm::SmallVector<mlir::Value> wide_load(mlir::OpBuilder& b, mlir::Location l, mlir::Value words_mem, mlir::Value index,
                                           mlir::Type element, int64_t lanes, int64_t words) {
    mlir::Value loaded = b.create<mlir::memref::LoadOp>(l, words_mem, mlir::ValueRange{index});
    unsigned bits = element.getIntOrFloatBitWidth();
    mlir::Type lane_int = b.getIntegerType(bits);
    llvm::SmallVector<mlir::Value> out;
    for (int64_t w = 0; w < words; ++w) {
      mlir::Value word = words == 1 ? loaded : b.create<mlir::vector::ExtractOp>(l, loaded, w).getResult();
      for (unsigned s = 0; s < 32 / bits && int64_t(out.size()) < lanes; ++s) {
        mlir::Value lane = word;
        if (s) lane = b.create<mlir::arith::ShRUIOp>(l, word, b.create<mlir::arith::ConstantIntOp>(l, s * bits, 32));
        if (bits < 32) lane = b.create<mlir::arith::TruncIOp>(l, lane_int, lane);
        if (element != lane_int) lane = b.create<mlir::arith::BitcastOp>(l, element, lane);
        out.push_back(lane);
      }
    }
    return out;
  }

  void wide_store(mlir::OpBuilder& b, mlir::Location l, llvm::ArrayRef<mlir::Value> values, mlir::Value words_mem,
                  mlir::Value index, int64_t words) {
    mlir::Type element = values[0].getType();
    unsigned bits = element.getIntOrFloatBitWidth();
    mlir::Type lane_int = b.getIntegerType(bits);
    llvm::SmallVector<mlir::Value> packed;
    size_t next = 0;
    for (int64_t w = 0; w < words; ++w) {
      mlir::Value word;
      for (unsigned s = 0; s < 32 / bits && next < values.size(); ++s) {
        mlir::Value lane = values[next++];
        if (element != lane_int) lane = b.create<mlir::arith::BitcastOp>(l, lane_int, lane);
        if (bits < 32) lane = b.create<mlir::arith::ExtUIOp>(l, b.getI32Type(), lane);
        if (s) lane = b.create<mlir::arith::ShLIOp>(l, lane, b.create<mlir::arith::ConstantIntOp>(l, s * bits, 32));
        word = word ? b.create<mlir::arith::OrIOp>(l, word, lane).getResult() : lane;
      }
      packed.push_back(word);
    }
    // A chain of inserts, not vector.from_elements (which MLIR 19 does not lower to SPIR-V).
    mlir::Value value = packed[0];
    if (words > 1) {
      auto vt = mlir::VectorType::get({words}, b.getI32Type());
      value = b.create<mlir::arith::ConstantOp>(l, mlir::DenseElementsAttr::get(vt, b.getI32IntegerAttr(0).cast<mlir::Attribute>()));
      for (int64_t w = 0; w < words; ++w) value = b.create<mlir::vector::InsertOp>(l, packed[w], value, w);
    }
    b.create<mlir::memref::StoreOp>(l, value, words_mem, mlir::ValueRange{index});
  }

  // Element index of a qv::load<N> -> index of its word-view element (N is a power of two).
  mlir::Value view_index(mlir::OpBuilder& b, mlir::Location l, mlir::Value index, int64_t lanes) {
    return b.create<mlir::arith::ShRUIOp>(
        l, index, b.create<mlir::arith::ConstantIndexOp>(l, llvm::Log2_64(uint64_t(lanes))));
  }

  void visit(mlir::Operation* op) {
    mlir::OpBuilder b(op);
    mlir::Location l = op->getLoc();
    auto ops_on_memory = [&](mlir::Value mem) { return memories_.count(mem) != 0; };

    if (auto load = llvm::dyn_cast<mlir::memref::LoadOp>(op); load && ops_on_memory(load.getMemRef())) {
      const ScalarMemory& m = memories_[load.getMemRef()];
      mlir::Value index = load.getIndices().empty() ? mlir::Value() : load.getIndices()[0];
      mlir::Type element = llvm::cast<mlir::MemRefType>(m.mem.getType()).getElementType();
      if (int64_t words = wide_words(m.mem, element, m.width); words && index)
        return replace(op, wide_load(b, l, view(llvm::cast<mlir::BlockArgument>(m.mem), words), index, element, m.width,
                                     words));
      llvm::SmallVector<mlir::Value> out;
      for (int64_t k = 0; k < m.width; ++k)
        out.push_back(b.create<mlir::memref::LoadOp>(l, m.mem, mlir::ValueRange{scalar_index(b, l, m, index, k)}));
      return replace(op, out);
    }
    if (auto store = llvm::dyn_cast<mlir::memref::StoreOp>(op); store && ops_on_memory(store.getMemRef())) {
      const ScalarMemory& m = memories_[store.getMemRef()];
      mlir::Value index = store.getIndices().empty() ? mlir::Value() : store.getIndices()[0];
      auto values = lanes(op, store.getValue());
      mlir::Type element = llvm::cast<mlir::MemRefType>(m.mem.getType()).getElementType();
      if (int64_t words = wide_words(m.mem, element, m.width); words && index) {
        wide_store(b, l, values, view(llvm::cast<mlir::BlockArgument>(m.mem), words), index, words);
        return replace(op, {});
      }
      for (int64_t k = 0; k < m.width; ++k)
        b.create<mlir::memref::StoreOp>(l, values[k], m.mem, mlir::ValueRange{scalar_index(b, l, m, index, k)});
      return replace(op, {});
    }
    if (auto load = llvm::dyn_cast<mlir::vector::LoadOp>(op)) {   // qv::load<N>: N consecutive elements
      llvm::SmallVector<mlir::Value> out;
      mlir::Value index = load.getIndices()[0];
      mlir::VectorType vt = load.getVectorType();
      if (auto it = word_arrays_.find(load.getBase()); it != word_arrays_.end())
        return replace(op, wide_load(b, l, it->second.mem, view_index(b, l, index, vt.getNumElements()),
                                     vt.getElementType(), vt.getNumElements(), 4));
      if (int64_t words = wide_words(load.getBase(), vt.getElementType(), vt.getNumElements()))
        return replace(op, wide_load(b, l, view(llvm::cast<mlir::BlockArgument>(load.getBase()), words),
                                     view_index(b, l, index, vt.getNumElements()), vt.getElementType(),
                                     vt.getNumElements(), words));
      for (int64_t k = 0; k < load.getVectorType().getNumElements(); ++k) {
        mlir::Value i = b.create<mlir::arith::AddIOp>(l, index, b.create<mlir::arith::ConstantIndexOp>(l, k));
        out.push_back(b.create<mlir::memref::LoadOp>(l, load.getBase(), mlir::ValueRange{i}));
      }
      return replace(op, out);
    }
    if (auto store = llvm::dyn_cast<mlir::vector::StoreOp>(op)) {
      auto values = lanes(op, store.getValueToStore());
      mlir::Value index = store.getIndices()[0];
      mlir::VectorType vt = store.getVectorType();
      if (auto it = word_arrays_.find(store.getBase()); it != word_arrays_.end()) {
        wide_store(b, l, values, it->second.mem, view_index(b, l, index, vt.getNumElements()), 4);
        return replace(op, {});
      }
      if (int64_t words = wide_words(store.getBase(), vt.getElementType(), vt.getNumElements())) {
        wide_store(b, l, values, view(llvm::cast<mlir::BlockArgument>(store.getBase()), words),
                   view_index(b, l, index, vt.getNumElements()), words);
        return replace(op, {});
      }
      for (size_t k = 0; k < values.size(); ++k) {
        mlir::Value i = b.create<mlir::arith::AddIOp>(l, index, b.create<mlir::arith::ConstantIndexOp>(l, k));
        b.create<mlir::memref::StoreOp>(l, values[k], store.getBase(), mlir::ValueRange{i});
      }
      return replace(op, {});
    }
    if (llvm::isa<qv::MatrixLoadOp, qv::MatrixStoreOp>(op))
      if (auto it = word_arrays_.find(op->getOperand(0)); it != word_arrays_.end())
        return rewrite_word_access(op, it->second);
    if (auto branch = llvm::dyn_cast<mlir::BranchOpInterface>(op)) {
      for (unsigned s = 0; s < op->getNumSuccessors(); ++s) {
        mlir::MutableOperandRange forwarded = branch.getSuccessorOperands(s).getMutableForwardedOperands();
        llvm::SmallVector<mlir::Value> scalars, extra;
        bool any = false;
        for (mlir::Value v : mlir::OperandRange(forwarded)) {
          if (!is_vector(v.getType())) { scalars.push_back(v); continue; }
          any = true;
          auto ls = lanes(op, v);
          extra.append(ls.begin(), ls.end());
        }
        if (any) {   // matches split_block_arguments: scalars in place, lanes appended
          scalars.append(extra.begin(), extra.end());
          forwarded.assign(scalars);
        }
      }
      return;
    }
    bool has_vector = llvm::any_of(op->getOperandTypes(), [&](mlir::Type t) { return is_vector(t); }) ||
                      llvm::any_of(op->getResultTypes(), [&](mlir::Type t) { return is_vector(t); });
    if (!has_vector) return;

    if (auto c = llvm::dyn_cast<mlir::arith::ConstantOp>(op)) {
      auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(c.getValue());
      if (!dense) fail(op, "a vector constant that is not dense");
      llvm::SmallVector<mlir::Value> out;
      for (mlir::Attribute a : dense.getValues<mlir::Attribute>())
        out.push_back(b.create<mlir::arith::ConstantOp>(l, llvm::cast<mlir::TypedAttr>(a)));
      return replace(op, out);
    }
    if (auto x = llvm::dyn_cast<mlir::vector::ExtractOp>(op)) {
      if (x.hasDynamicPosition() || x.getStaticPosition().size() != 1) fail(op, "a dynamic or nested extract");
      op->getResult(0).replaceAllUsesWith(lanes(op, x.getVector())[x.getStaticPosition()[0]]);
      return replace(op, {});
    }
    if (auto x = llvm::dyn_cast<mlir::vector::InsertOp>(op)) {
      if (x.hasDynamicPosition() || x.getStaticPosition().size() != 1) fail(op, "a dynamic or nested insert");
      auto out = lanes(op, x.getDest());
      out[x.getStaticPosition()[0]] = x.getSource();
      return replace(op, out);
    }
    if (auto x = llvm::dyn_cast<mlir::vector::BroadcastOp>(op)) {
      if (is_vector(x.getSourceType())) fail(op, "a vector-to-vector broadcast");
      return replace(op, llvm::SmallVector<mlir::Value>(x.getResultVectorType().getNumElements(), x.getSource()));
    }
    if (auto x = llvm::dyn_cast<mlir::vector::SplatOp>(op))
      return replace(op, llvm::SmallVector<mlir::Value>(x.getType().getNumElements(), x.getInput()));
    if (auto x = llvm::dyn_cast<mlir::vector::ShuffleOp>(op)) {
      if (x.getV1VectorType().getRank() != 1) fail(op, "a shuffle of nested vectors");
      auto from = lanes(op, x.getV1());
      auto second = lanes(op, x.getV2());
      from.append(second.begin(), second.end());
      llvm::SmallVector<mlir::Value> out;
      for (mlir::Attribute m : x.getMask()) out.push_back(from[llvm::cast<mlir::IntegerAttr>(m).getInt()]);
      return replace(op, out);
    }
    if (auto x = llvm::dyn_cast<mlir::vector::FromElementsOp>(op))
      return replace(op, llvm::SmallVector<mlir::Value>(x.getElements()));
    if (op->getNumResults() == 1 && op->getNumRegions() == 0 && op->getDialect() &&
        (op->getDialect()->getNamespace() == "arith" || op->getDialect()->getNamespace() == "math")) {
      // Element-wise: the same op once per element (a scalar operand, like select's
      // condition, is shared by every element).
      auto vt = llvm::cast<mlir::VectorType>(op->getResult(0).getType());
      llvm::SmallVector<mlir::Value> out;
      for (int64_t k = 0; k < vt.getNumElements(); ++k) {
        llvm::SmallVector<mlir::Value> operands;
        for (mlir::Value v : op->getOperands()) operands.push_back(is_vector(v.getType()) ? lanes(op, v)[k] : v);
        mlir::OperationState state(l, op->getName());
        state.addOperands(operands);
        state.addTypes(vt.getElementType());
        state.addAttributes(op->getAttrs());
        out.push_back(b.create(state)->getResult(0));
      }
      return replace(op, out);
    }
    fail(op, "an operation on vectors with no scalar form");
  }

  void replace(mlir::Operation* op, llvm::SmallVector<mlir::Value> out) {
    if (op->getNumResults() == 1 && is_vector(op->getResult(0).getType())) lanes_[op->getResult(0)] = std::move(out);
    dead_.push_back(op);
  }

  mlir::func::FuncOp fn_;
  bool wide_ = false;
  bool keep_tiles_ = false;
  unsigned params_ = fn_.isExternal() ? 0 : fn_.getNumArguments();   // views come after these
  std::map<std::pair<unsigned, int64_t>, mlir::Value> views_;         // (parameter, words) -> view
  llvm::SmallVector<int32_t> view_of_;                                 // per view: its parameter
  llvm::DenseMap<mlir::Value, llvm::SmallVector<mlir::Value>> lanes_;
  llvm::DenseMap<mlir::Value, ScalarMemory> memories_;
  llvm::DenseMap<mlir::Value, ScalarMemory> word_arrays_;   // array -> its vector<4xi32> form, elements per word
  std::vector<mlir::Operation*> dead_;
  std::vector<std::pair<mlir::Block*, unsigned>> old_args_;
};

}  // namespace

void scalarize_vectors(mlir::ModuleOp module, bool wide_buffer_access, bool keep_tiles) {
  for (auto fn : module.getOps<mlir::func::FuncOp>()) {
    // Only a function that still has matrix or block operations has tiles to keep: one the portable
    // fallback expanded holds plain vectors of 256 floats.
    bool has_tiles = false;
    fn.walk([&](mlir::Operation* op) {
      has_tiles = has_tiles || matrix_op_of(op).has_value() || block_op_of(op).has_value();
    });
    Scalarizer(fn, wide_buffer_access && fn->hasAttr("qv.kernel"), keep_tiles && has_tiles).run();
  }
}

}  // namespace quiver::ir
