// The qv dialect's operations (docs/ir.md "The qv dialect"; docs/matrix.md "Warpgroups",
// docs/async_copy.md).
//
// A warpgroup accumulator (qv::warpgroup_acc<float | int32_t, N>, 64 x N held by 128 threads) is
// each thread's share: vector<N/2 x f32> (vector<N/2 x i32> for int8 products), N = 16 .. 256 in
// steps of 16, laid out as Hopper's wgmma accumulators (compiler/ir/warpgroup.h). Operands and
// destinations are memory: a memref and an element offset into it.
// None of these declares its memory effects: like the calls they replace, they are kept in
// place, in order, until a target lowers them.
#ifndef QUIVER_QV_OPS
#define QUIVER_QV_OPS

include "QvDialect.td"

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

// qv::dot4_i8: the dot product of four signed bytes, as dp4a computes it.
def Qv_Dot4I8Op : Qv_Op<"dot4_i8"> {
  let summary = "acc + sum over k < 4 of int8(a >> 8k) * int8(b >> 8k), wrapping";
  let arguments = (ins I32:$a, I32:$b, I32:$acc);
  let results = (outs I32:$result);
  let assemblyFormat = "$a `,` $b `,` $acc attr-dict";
}

#endif  // QUIVER_QV_OPS
