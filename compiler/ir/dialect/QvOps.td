// The qv dialect's operations (docs/ir.md "The qv dialect"; docs/matrix.md, docs/async_copy.md).
//
// A warpgroup accumulator (qv::warpgroup_acc<float | int32_t, N>, 64 x N held by 128 threads) is
// each thread's share: vector<N/2 x f32> (vector<N/2 x i32> for int8 products), N = 16 .. 256 in
// steps of 16, laid out as Hopper's wgmma accumulators (compiler/ir/warpgroup.h). Operands and
// destinations are memory: a memref and an element offset into it.
// None of these declares its memory effects: like calls, they are kept in
// place, in order, until a target lowers them.
#ifndef QUIVER_QV_OPS
#define QUIVER_QV_OPS

include "QvDialect.td"
include "mlir/IR/EnumAttr.td"

// The thread's share of a warpgroup accumulator; the verifiers check the length.
def Qv_WarpgroupShare : VectorOfRankAndType<[1], [F32, I32]>;

def Qv_WarpgroupMmaOp : Qv_Op<"warpgroup_mma", [AllTypesMatch<["acc", "result"]>]> {
  let summary = "acc + A B, A (64 x 16) and B (16 x N, stored K x N in 64-column panels) in shared memory";
  let description = [{
    A is read K-major from 128-byte swizzled panels at `a[a_offset]`; B is stored K x N, its
    64-column panels `panel_stride` elements apart. 16-bit operands (f16 or bf16, both alike)
    with an f32 accumulator only: 8-bit products read B K-major only (qv.warpgroup_mma_bt).
    The product is asynchronous until a qv.warpgroup_wait.
  }];
  let arguments = (ins AnyMemRef:$a, Index:$a_offset, AnyMemRef:$b, Index:$b_offset, I32:$panel_stride,
                   Qv_WarpgroupShare:$acc);
  let results = (outs Qv_WarpgroupShare:$result);
  let assemblyFormat = [{
    $a `[` $a_offset `]` `,` $b `[` $b_offset `]` `,` $panel_stride `,` $acc attr-dict
    `:` type($a) `,` type($b) `,` type($acc)
  }];
  let hasVerifier = 1;
}

def Qv_WarpgroupMmaBTOp : Qv_Op<"warpgroup_mma_bt", [AllTypesMatch<["acc", "result"]>]> {
  let summary = "acc + A B with B stored N x K (its transpose), both K-major in shared memory";
  let description = [{
    A (64 x K) at `a[a_offset]`, B^T (N x K) at `bt[bt_offset]`, both in 128-byte swizzled
    panels. f16 or bf16 operands with an f32 accumulator (K = 16), or i8 operands with an i32
    one (K = 32, exact products, wrapping sums).
  }];
  let arguments = (ins AnyMemRef:$a, Index:$a_offset, AnyMemRef:$bt, Index:$bt_offset, Qv_WarpgroupShare:$acc);
  let results = (outs Qv_WarpgroupShare:$result);
  let assemblyFormat = [{
    $a `[` $a_offset `]` `,` $bt `[` $bt_offset `]` `,` $acc attr-dict `:` type($a) `,` type($bt) `,` type($acc)
  }];
  let hasVerifier = 1;
}

def Qv_WarpgroupCommitOp : Qv_Op<"warpgroup_commit"> {
  let summary = "closes the batch of warpgroup products issued since the last commit";
  let assemblyFormat = "attr-dict";
}

def Qv_WarpgroupWaitOp : Qv_Op<"warpgroup_wait"> {
  let summary = "waits until at most `pending` batches of warpgroup products are unfinished";
  let description = [{
    Closes the open batch first, if any (a product not followed by a commit on some path).
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<7>]>:$pending);
  let assemblyFormat = "$pending attr-dict";
}

def Qv_WarpgroupBarrierOp : Qv_Op<"warpgroup_barrier"> {
  let summary = "a barrier of the 128 threads of this thread's warpgroup";
  let assemblyFormat = "attr-dict";
}

def Qv_WarpgroupStoreOp : Qv_Op<"warpgroup_store"> {
  let summary = "p[offset + i stride + j] = U(C[i][j]) for the whole 64 x N accumulator";
  let description = [{
    A float accumulator goes to f32, f16 or bf16 memory (rounded to nearest even); an int32 one
    to i32 memory, unconverted.
  }];
  let arguments = (ins AnyMemRef:$dst, Index:$offset, I32:$stride, Qv_WarpgroupShare:$acc);
  let assemblyFormat = "$acc `,` $dst `[` $offset `]` `,` $stride attr-dict `:` type($acc) `,` type($dst)";
  let hasVerifier = 1;
}

def Qv_WarpgroupStoreBoundedOp : Qv_Op<"warpgroup_store_bounded"> {
  let summary = "qv.warpgroup_store of only the elements C[i][j] with i < rows and j < cols";
  let arguments = (ins AnyMemRef:$dst, Index:$offset, I32:$stride, Qv_WarpgroupShare:$acc, I32:$rows, I32:$cols);
  let assemblyFormat = [{
    $acc `,` $dst `[` $offset `]` `,` $stride `,` `bounds` $rows `,` $cols attr-dict `:` type($acc) `,` type($dst)
  }];
  let hasVerifier = 1;
}

def Qv_WarpgroupStoreSwizzledOp : Qv_Op<"warpgroup_store_swizzled"> {
  let summary = "the accumulator as 16-bit values into 128-byte swizzled panels, `panel_stride` apart";
  let description = [{
    The layout qv.warpgroup_mma reads A from: a product's result becomes the next one's operand.
  }];
  let arguments = (ins AnyMemRef:$dst, Index:$offset, I32:$panel_stride, Qv_WarpgroupShare:$acc);
  let assemblyFormat = "$acc `,` $dst `[` $offset `]` `,` $panel_stride attr-dict `:` type($acc) `,` type($dst)";
  let hasVerifier = 1;
}

// Groups of asynchronous copies (docs/async_copy.md). qv::copy_async itself is a 16-byte
// vector.load + vector.store pair carrying the unit attribute `qv.copy_async`: a target without
// asynchronous copies needs nothing more than the copy it already is, and drops the marks.
def Qv_CopyAsyncCommitOp : Qv_Op<"copy_async_commit"> {
  let summary = "closes the group of asynchronous copies issued since the last commit";
  let assemblyFormat = "attr-dict";
}

def Qv_CopyAsyncWaitOp : Qv_Op<"copy_async_wait"> {
  let summary = "waits until at most `pending` groups of asynchronous copies are unfinished";
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<7>]>:$pending);
  let assemblyFormat = "$pending attr-dict";
}

// qv::wait_prior_launches (docs/abi.md "Overlapped launches"): memory written by earlier launches
// is read only after it. No declared effects: passes treat it as touching all memory, so no load
// moves across it.
def Qv_WaitPriorLaunchesOp : Qv_Op<"wait_prior_launches"> {
  let summary = "waits until the launches queued before this kernel have finished";
  let assemblyFormat = "attr-dict";
}

// qv::device_fence (docs/ir.md "The qv dialect"): this thread's device-memory accesses before it
// are ordered before its accesses after it for every thread of the launch (a release and an
// acquire fence at device scope). With a counter's atomic between, it lets the last block of a
// launch to arrive read what the others wrote. No declared effects: no load or store moves across it.
def Qv_DeviceFenceOp : Qv_Op<"device_fence"> {
  let summary = "orders this thread's device-memory accesses at device scope (acquire and release)";
  let assemblyFormat = "attr-dict";
}

// qv::dot4_i8: the dot product of four signed bytes, as dp4a computes it.
def Qv_Dot4I8Op : Qv_Op<"dot4_i8"> {
  let summary = "acc + sum over k < 4 of int8(a >> 8k) * int8(b >> 8k), wrapping";
  let arguments = (ins I32:$a, I32:$b, I32:$acc);
  let results = (outs I32:$result);
  let assemblyFormat = "$a `,` $b `,` $acc attr-dict";
}

// Matrix tiles (docs/matrix.md "Matrix tiles", compiler/ir/matrix.h): a 16x16 tile of the
// kernel language is one vector value. Before a target retypes tiles it is the whole tile,
// row-major: vector<256 x T> for operands of 16-bit floats (T = f16, bf16, or i16 once
// qv-16bit-floats-as-bits carries them as bits), vector<512 x i8> for int8 operands (A 16 x 32,
// B 32 x 16), vector<256 x f32> / vector<256 x i32> for accumulators. A target that lowers the
// tiles itself may retype them in place: PTX gives each lane its mma.sync fragment (8
// elements, 16 of an int8 operand), the spirv target's cooperative-matrix image gives right
// operands vector<K x 16 x T> (their use is part of a cooperative matrix's type) and
// accumulators lane shares (vector<8 x f32>). The verifiers admit these forms and no other.
// A load or store whose memory qv-scalarize-vectors turned into a workgroup array of 16-byte
// words (vector<4 x i32>) counts offset and stride in words and names the element type the
// tile is read as or written from in `word_element`.

def Qv_MatrixRoleAttr : I32EnumAttr<"MatrixRole", "which tile a matrix load reads", [
    I32EnumAttrCase<"A", 0, "a">,        // A[i][k] = m[off + i*stride + k]
    I32EnumAttrCase<"B", 1, "b">,        // B[k][j] = m[off + k*stride + j]
    I32EnumAttrCase<"BT", 2, "bt">,      // B[k][j] = m[off + j*stride + k]: B stored N x K
    I32EnumAttrCase<"Acc", 3, "acc">]> { // C[i][j] = m[off + i*stride + j]
  let cppNamespace = "::quiver::ir::qv";
}

def Qv_MatrixLoadOp : Qv_Op<"matrix_load"> {
  let summary = "a tile of the given role read from memory (qv::load_matrix_a / _b / _bt / _acc)";
  let description = [{
    Operands (a, b, bt) of f16, bf16 or i8 from memory of that type; accumulators (acc) of f32 or
    i32 from memory of that type.
  }];
  let arguments = (ins Qv_MatrixRoleAttr:$role, AnyMemRef:$src, Index:$offset, I32:$stride,
                   OptionalAttr<TypeAttr>:$word_element);
  let results = (outs AnyVector:$tile);
  let assemblyFormat = "$role $src `[` $offset `]` `,` $stride attr-dict `:` type($src) `->` type($tile)";
  let hasVerifier = 1;
}

def Qv_MatrixStoreOp : Qv_Op<"matrix_store"> {
  let summary = "m[off + i*stride + j] = U(C[i][j]) for the whole 16 x 16 accumulator";
  let description = [{
    A float accumulator goes to f32, f16 or bf16 memory (rounded to nearest even); an int32 one
    to i32 memory.
  }];
  let arguments = (ins AnyMemRef:$dst, Index:$offset, I32:$stride, AnyVector:$tile,
                   OptionalAttr<TypeAttr>:$word_element);
  let assemblyFormat = "$tile `,` $dst `[` $offset `]` `,` $stride attr-dict `:` type($tile) `,` type($dst)";
  let hasVerifier = 1;
}

def Qv_MatrixMmaOp : Qv_Op<"matrix_mma", [AllTypesMatch<["acc", "result"]>]> {
  let summary = "A B + C on tiles: 16-bit operands into f32, int8 ones into i32 (exact, wrapping)";
  let arguments = (ins AnyVector:$a, AnyVector:$b, AnyVector:$acc);
  let results = (outs AnyVector:$result);
  let assemblyFormat = "$a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `,` type($acc)";
  let hasVerifier = 1;
}

class Qv_MatrixRowOp<string mnemonic, string what> : Qv_Op<mnemonic, [AllTypesMatch<["acc", "result"]>]> {
  let summary = "R[i][j] = " # what # " over j' of C[i][j'] for a float accumulator";
  let arguments = (ins AnyVector:$acc);
  let results = (outs AnyVector:$result);
  let assemblyFormat = "$acc attr-dict `:` type($acc)";
  let hasVerifier = 1;
}
def Qv_MatrixRowMaxOp : Qv_MatrixRowOp<"matrix_row_max", "the maximum">;
def Qv_MatrixRowSumOp : Qv_MatrixRowOp<"matrix_row_sum", "the sum">;

def Qv_MatrixToAOp : Qv_Op<"matrix_to_a"> {
  let summary = "A[i][k] = T(C[i][k]): a float accumulator rounded (nearest even) to a left operand";
  let arguments = (ins AnyVector:$acc);
  let results = (outs AnyVector:$result);
  let assemblyFormat = "$acc attr-dict `:` type($acc) `->` type($result)";
  let hasVerifier = 1;
}

// Block tiles (docs/matrix.md "Block tiles", compiler/ir/block_tiles.h): a qv::block_acc<float
// | int32_t, M, N> held by the whole block is one vector<M x N x f32 | i32> value. Products read
// their operands straight from memory, so only accumulators are values. A target keeps them
// whole (the spirv cooperative-matrix image) or expands them (the portable fallback) before
// any other form exists; only their f16 memory may become i16 (qv-16bit-floats-as-bits).

class Qv_BlockMmaBase<string mnemonic, string b_layout> : Qv_Op<mnemonic, [AllTypesMatch<["acc", "result"]>]> {
  let summary = "C + A B, A[i][k] = a[a_off + i*lda + k], " # b_layout;
  let description = [{
    A and B of f16 or bf16 into an f32 accumulator, or of i8 into an i32 one (exact products,
    wrapping sums); K (`k`) a multiple of 16 (32 for i8) from 16 to 1024.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<16>, IntMaxValue<1024>]>:$k, AnyVector:$acc,
                   AnyMemRef:$a, Index:$a_offset, I32:$lda, AnyMemRef:$b, Index:$b_offset, I32:$ldb);
  let results = (outs AnyVector:$result);
  let assemblyFormat = [{
    `k` $k `,` $a `[` $a_offset `]` `,` $lda `,` $b `[` $b_offset `]` `,` $ldb `,` $acc attr-dict
    `:` type($a) `,` type($b) `,` type($acc)
  }];
  let hasVerifier = 1;
}
def Qv_BlockMmaOp : Qv_BlockMmaBase<"block_mma", "B[k][j] = b[b_off + k*ldb + j]">;
def Qv_BlockMmaBTOp : Qv_BlockMmaBase<"block_mma_bt", "B[k][j] = b[b_off + j*ldb + k] (B stored N x K)">;

def Qv_BlockStoreOp : Qv_Op<"block_store"> {
  let summary = "p[off + i*stride + j] = U(C[i][j]) for the whole M x N block accumulator";
  let description = [{
    A float accumulator to f32, f16 or bf16 memory (rounded to nearest even), an int32 one to
    i32 memory.
  }];
  let arguments = (ins AnyMemRef:$dst, Index:$offset, I32:$stride, AnyVector:$acc);
  let assemblyFormat = "$acc `,` $dst `[` $offset `]` `,` $stride attr-dict `:` type($acc) `,` type($dst)";
  let hasVerifier = 1;
}

def Qv_BlockLoadOp : Qv_Op<"block_load"> {
  let summary = "C[i][j] = p[off + i*stride + j]: a block accumulator from f32 or i32 memory of its type";
  let arguments = (ins AnyMemRef:$src, Index:$offset, I32:$stride);
  let results = (outs AnyVector:$acc);
  let assemblyFormat = "$src `[` $offset `]` `,` $stride attr-dict `:` type($src) `->` type($acc)";
  let hasVerifier = 1;
}

// The spirv target's trip of an accumulator through workgroup memory between its cooperative
// and lane-share forms (compiler/targets/spirv/matrix_coop_lanes.h) needs the subgroup's
// invocations to meet and see each other's workgroup-memory writes: a barrier of subgroup
// scope, which the gpu dialect lacks (gpu.barrier is the whole workgroup's).
def Qv_SubgroupBarrierOp : Qv_Op<"subgroup_barrier"> {
  let summary = "a barrier of this invocation's subgroup, with workgroup-memory visibility";
  let assemblyFormat = "attr-dict";
}

#endif  // QUIVER_QV_OPS
