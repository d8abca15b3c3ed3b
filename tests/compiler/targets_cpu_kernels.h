// Hand-written neutral IR (docs/ir.md) used by the CPU and PTX target tests.
#pragma once

namespace quiver::test {

// y[i] = a * x[i] + y[i] for i < n.
inline constexpr const char* kSaxpyIR = R"mlir(
module {
  func.func @qv_k0_saxpy(%x: memref<?xf32>, %y: memref<?xf32>, %a: f32, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 256, 1, 1>} {
    %tid = gpu.thread_id x
    %bid = gpu.block_id x
    %bdim = gpu.block_dim x
    %t0 = arith.muli %bid, %bdim : index
    %i = arith.addi %t0, %tid : index
    %n_idx = arith.index_castui %n : i32 to index
    %in = arith.cmpi ult, %i, %n_idx : index
    scf.if %in {
      %xv = memref.load %x[%i] : memref<?xf32>
      %yv = memref.load %y[%i] : memref<?xf32>
      %p = arith.mulf %a, %xv : f32
      %s = arith.addf %p, %yv : f32
      memref.store %s, %y[%i] : memref<?xf32>
    }
    return
  }
}
)mlir";

// out[block] = sum of x[block*64 .. block*64+63] (zero past n): a tree reduction in workgroup
// memory with gpu.barrier inside an scf.while; a second allocation checks the layout.
inline constexpr const char* kBlockSumIR = R"mlir(
module {
  func.func @qv_k1_block_sum(%x: memref<?xf32>, %out: memref<?xf32>, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %tile = memref.alloca() : memref<64xf32, #gpu.address_space<workgroup>>
    %scratch = memref.alloca() : memref<2xf64, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %tid = gpu.thread_id x
    %bid = gpu.block_id x
    %base = arith.muli %bid, %c64 : index
    %i = arith.addi %base, %tid : index
    %n_idx = arith.index_castui %n : i32 to index
    %in = arith.cmpi ult, %i, %n_idx : index
    %v = scf.if %in -> f32 {
      %l = memref.load %x[%i] : memref<?xf32>
      scf.yield %l : f32
    } else {
      scf.yield %zero : f32
    }
    memref.store %v, %tile[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %last = scf.while (%s = %c32) : (index) -> index {
      %go = arith.cmpi ugt, %s, %c0 : index
      scf.condition(%go) %s : index
    } do {
    ^bb0(%s: index):
      %lt = arith.cmpi ult, %tid, %s : index
      scf.if %lt {
        %j = arith.addi %tid, %s : index
        %a = memref.load %tile[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
        %b = memref.load %tile[%j] : memref<64xf32, #gpu.address_space<workgroup>>
        %sum = arith.addf %a, %b : f32
        memref.store %sum, %tile[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
      }
      gpu.barrier
      %half = arith.shrui %s, %c1 : index
      scf.yield %half : index
    }
    %is0 = arith.cmpi eq, %tid, %c0 : index
    scf.if %is0 {
      %r = memref.load %tile[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
      %rd = arith.extf %r : f32 to f64
      memref.store %rd, %scratch[%c1] : memref<2xf64, #gpu.address_space<workgroup>>
      %back = memref.load %scratch[%c1] : memref<2xf64, #gpu.address_space<workgroup>>
      %rf = arith.truncf %back : f64 to f32
      memref.store %rf, %out[%bid] : memref<?xf32>
    }
    return
  }
}
)mlir";

// 2-D blocks (32 x 2): element i = (block.x * 2 + thread.y) * 32 + thread.x. Counts Collatz
// steps of in[i] (scf.while with an scf.if inside), then by steps % 3 (scf.index_switch):
// 0 -> steps * 10, 1 -> steps + 100, else -> -steps.
inline constexpr const char* kCollatzIR = R"mlir(
module {
  func.func @qv_k2_collatz(%in: memref<?xi32>, %out: memref<?xi32>, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 32, 2, 1>} {
    %tx = gpu.thread_id x
    %ty = gpu.thread_id y
    %bx = gpu.block_id x
    %bdy = gpu.block_dim y
    %bdx = gpu.block_dim x
    %row0 = arith.muli %bx, %bdy : index
    %row = arith.addi %row0, %ty : index
    %i0 = arith.muli %row, %bdx : index
    %i = arith.addi %i0, %tx : index
    %n_idx = arith.index_castui %n : i32 to index
    %inb = arith.cmpi ult, %i, %n_idx : index
    scf.if %inb {
      %zero = arith.constant 0 : i32
      %one = arith.constant 1 : i32
      %three = arith.constant 3 : i32
      %v0 = memref.load %in[%i] : memref<?xi32>
      %res:2 = scf.while (%v = %v0, %c = %zero) : (i32, i32) -> (i32, i32) {
        %more = arith.cmpi ugt, %v, %one : i32
        scf.condition(%more) %v, %c : i32, i32
      } do {
      ^bb0(%v: i32, %c: i32):
        %low = arith.andi %v, %one : i32
        %odd = arith.cmpi ne, %low, %zero : i32
        %nv = scf.if %odd -> i32 {
          %t = arith.muli %v, %three : i32
          %t1 = arith.addi %t, %one : i32
          scf.yield %t1 : i32
        } else {
          %h = arith.shrui %v, %one : i32
          scf.yield %h : i32
        }
        %nc = arith.addi %c, %one : i32
        scf.yield %nv, %nc : i32, i32
      }
      %m = arith.remui %res#1, %three : i32
      %mi = arith.index_castui %m : i32 to index
      %r = scf.index_switch %mi -> i32
      case 0 {
        %ten = arith.constant 10 : i32
        %x10 = arith.muli %res#1, %ten : i32
        scf.yield %x10 : i32
      }
      case 1 {
        %hundred = arith.constant 100 : i32
        %p = arith.addi %res#1, %hundred : i32
        scf.yield %p : i32
      }
      default {
        %ng = arith.subi %zero, %res#1 : i32
        scf.yield %ng : i32
      }
      memref.store %r, %out[%i] : memref<?xi32>
    }
    return
  }
}
)mlir";

// f64 math: out[i] = exp(x)/4 + sin(x) + cos(x) * tanh(x) + erf(x) + log(|x| + 1)
//                    + log2(|x| + 2) + exp2(x/2) + pow(|x| + 0.5, 1.5) + sqrt(|x|) + rsqrt(|x| + 1)
inline constexpr const char* kMathF64IR = R"mlir(
module {
  func.func @qv_k3_math_f64(%xs: memref<?xf64>, %out: memref<?xf64>, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 128, 1, 1>} {
    %tid = gpu.thread_id x
    %bid = gpu.block_id x
    %bdim = gpu.block_dim x
    %t0 = arith.muli %bid, %bdim : index
    %i = arith.addi %t0, %tid : index
    %n_idx = arith.index_castui %n : i32 to index
    %in = arith.cmpi ult, %i, %n_idx : index
    scf.if %in {
      %x = memref.load %xs[%i] : memref<?xf64>
      %quarter = arith.constant 0.25 : f64
      %half = arith.constant 0.5 : f64
      %one = arith.constant 1.0 : f64
      %two = arith.constant 2.0 : f64
      %onehalf = arith.constant 1.5 : f64
      %ax = math.absf %x : f64
      %e = math.exp %x : f64
      %e4 = arith.mulf %e, %quarter : f64
      %s = math.sin %x : f64
      %c = math.cos %x : f64
      %t = math.tanh %x : f64
      %ct = arith.mulf %c, %t : f64
      %er = math.erf %x : f64
      %ax1 = arith.addf %ax, %one : f64
      %l = math.log %ax1 : f64
      %ax2 = arith.addf %ax, %two : f64
      %l2 = math.log2 %ax2 : f64
      %xh = arith.mulf %x, %half : f64
      %e2 = math.exp2 %xh : f64
      %axh = arith.addf %ax, %half : f64
      %p = math.powf %axh, %onehalf : f64
      %sq = math.sqrt %ax : f64
      %rs = math.rsqrt %ax1 : f64
      %a1 = arith.addf %e4, %s : f64
      %a2 = arith.addf %a1, %ct : f64
      %a3 = arith.addf %a2, %er : f64
      %a4 = arith.addf %a3, %l : f64
      %a5 = arith.addf %a4, %l2 : f64
      %a6 = arith.addf %a5, %e2 : f64
      %a7 = arith.addf %a6, %p : f64
      %a8 = arith.addf %a7, %sq : f64
      %a9 = arith.addf %a8, %rs : f64
      memref.store %a9, %out[%i] : memref<?xf64>
    }
    return
  }
}
)mlir";

}  // namespace quiver::test
