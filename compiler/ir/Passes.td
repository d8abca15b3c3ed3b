// The rewrites of the neutral IR (docs/ir.md "Pipelines"): passes.cpp implements each by its
// function in this folder.
include "ir/PassBase.td"

def FoldBlockDims : QvPass<"qv-fold-block-dims"> {
  let summary = "gpu.block_dim becomes the kernel's qv.block size; gpu.thread_id along an axis of size 1 becomes 0";
}
def PromotePrivateVariables : QvPass<"qv-promote-private-variables"> {
  let summary = "mem2reg of each thread's own memref.alloca (never of workgroup arrays)";
}
def ExpandMatrix : QvPass<"qv-expand-matrix"> {
  let summary = "the portable fallback of the qv.matrix_* intrinsics (every lane holds the whole tile)";
  let options = [ListOption<"keep", "keep", "std::string", "kernels whose tiles the target lowers itself">];
}
def ExpandBlockTiles : QvPass<"qv-expand-block-tiles"> {
  let summary = "the portable fallback of the qv.block_* intrinsics (each thread holds a share of the tile)";
  let options = [ListOption<"keep", "keep", "std::string", "kernels whose tiles the target lowers itself">];
}
def ExpandWarpgroup : QvPass<"qv-expand-warpgroup"> {
  let summary = "qv.warpgroup_store* element stores and (unless keep-mma) the portable warpgroup products";
  let options = [Option<"keep_mma", "keep-mma", "bool", "false",
                        "keep qv.warpgroup_mma / wait / store_swizzled for the target">];
}
def ExpandDot4I8 : QvPass<"qv-expand-dot4-i8"> {
  let summary = "qv.dot4_i8 as exact byte-lane arithmetic";
}
def EraseAsyncCopyMarks : QvPass<"qv-erase-async-copy-marks"> {
  let summary = "drops the qv.copy_async_commit / wait marks: the copies are already synchronous";
}
def EraseLaunchWaits : QvPass<"qv-erase-launch-waits"> {
  let summary = "drops qv.wait_prior_launches: the target's launches never overlap";
}
def ScalarizeVectors : QvPass<"qv-scalarize-vectors"> {
  let summary = "no vector values: every vector op becomes scalar ops";
  let options = [
    Option<"wide_buffer_access", "wide-buffer-access", "bool", "false",
           "4-, 8- and 16-byte buffer accesses through 32-bit word views">,
    Option<"keep_tiles", "keep-tiles", "bool", "false", "matrix and block tiles stay whole values">,
  ];
}
def Float16AsBits : QvPass<"qv-16bit-floats-as-bits"> {
  let summary = "f16 / bf16 carried as i16, their conversions and arithmetic in integer and f32 ops";
  let options = [
    Option<"f16", "f16", "bool", "false", "carry f16 as its bits">,
    Option<"bf16", "bf16", "bool", "false", "carry bf16 as its bits">,
  ];
}
def LowerMath : QvPass<"qv-lower-math"> {
  let summary = "the portable math lowering: only the exactly rounded math ops remain (ir/math.h)";
}
