// The block shapes of the op library's kernels that their host callers size grids by: the
// kernels read them (kernels/common.h includes this file) and so do runtime/ops/ops.cpp and
// tools/quiver-llm, so a kernel's block and its grid cannot drift apart. Plain constants, no
// quiver/kernel.h types: includable by quiverc's kernel sources and by host C++ alike.
#pragma once

namespace qvops {

// Quantized matvecs (kernels/matvec.cpp, matvec_k_a8.cpp, the repacked walks): blocks of
// kQuantThreads threads compute kQuantRows outputs, a subgroup two rows at a time.
constexpr unsigned kQuantThreads = 128;
constexpr unsigned kQuantRows = 8;
// The int8-activation products' `_rows4` kernels (many rows): a subgroup four rows at a time.
constexpr unsigned kQuadRows = 16;
// The float matvec (kernels/matvec.cpp): output rows per block.
constexpr unsigned kMatvecRows = 4;
// quantize_activations_q8 (kernels/matvec.cpp): a thread per 4 elements, blocks of these.
constexpr unsigned kQuantizeThreads = 256;
// The CPU image's f32 kernels (kernels/matmul_cpu.cpp, rows_cpu.cpp): a matmul_cpu_nn thread's
// tile of C (kCpuNnRows x kCpuNnCols), kCpuNnTiles of them a block (a column); a matmul_cpu_nt
// block's tile (kCpuNtRows x kCpuNtCols), its partial sums kCpuNtDepth wide over k; rows of
// matvec_cpu a block.
constexpr unsigned kCpuNnRows = 8, kCpuNnCols = 16, kCpuNnTiles = 4;
constexpr unsigned kCpuNtRows = 4, kCpuNtCols = 4, kCpuNtDepth = 8;
constexpr unsigned kCpuMatvecRows = 4;

}  // namespace qvops
