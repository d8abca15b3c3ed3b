// Hand-written neutral IR (docs/ir.md) for the spirv target's tests, with the manifest entries a
// front end would produce for it. Each kernel's host reference lives in the run test.
#pragma once

#include <string>
#include <vector>

#include "format/manifest.h"

namespace quiver::test {

struct TestKernel {
  std::string ir;   // one func.func
  format::Kernel manifest;
};

inline format::Param buffer_param(std::string name, format::ScalarType type, uint32_t vec = 1) {
  format::Param p;
  p.name = std::move(name);
  p.type = type;
  p.vec_width = vec;
  p.is_buffer = true;
  p.access = format::Access::ReadWrite;
  return p;
}

inline format::Param scalar_param(std::string name, format::ScalarType type) {
  format::Param p;
  p.name = std::move(name);
  p.type = type;
  return p;
}

inline format::Kernel manifest_entry(std::string symbol, std::vector<format::Param> params,
                                     std::array<uint32_t, 3> block) {
  format::Kernel k;
  k.name = symbol;
  k.symbol = std::move(symbol);
  k.params = std::move(params);
  k.block = block;
  k.targets = {format::Target::SPIRV};
  return k;
}

// `i = block_id.x * block_dim.x + thread_id.x` and `%in_range = i < %n`; shared by most kernels.
inline const char* kGlobalIndex = R"(
    %bid = gpu.block_id x
    %bdim = gpu.block_dim x
    %tid = gpu.thread_id x
    %base = arith.muli %bid, %bdim : index
    %i = arith.addi %base, %tid : index
    %n_idx = arith.index_cast %n : i32 to index
    %in_range = arith.cmpi ult, %i, %n_idx : index
)";

inline TestKernel saxpy_kernel() {
  using T = format::ScalarType;
  return {std::string(R"(
  func.func @qv_k0_saxpy(%x: memref<?xf32>, %y: memref<?xf32>, %out: memref<?xf32>, %a: f32, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {)") + kGlobalIndex + R"(
    scf.if %in_range {
      %xv = memref.load %x[%i] : memref<?xf32>
      %yv = memref.load %y[%i] : memref<?xf32>
      %ax = arith.mulf %a, %xv : f32
      %r = arith.addf %ax, %yv : f32
      memref.store %r, %out[%i] : memref<?xf32>
    }
    return
  })",
          manifest_entry("qv_k0_saxpy",
                         {buffer_param("x", T::F32), buffer_param("y", T::F32),
                          buffer_param("out", T::F32), scalar_param("a", T::F32),
                          scalar_param("n", T::I32)},
                         {64, 1, 1})};
}

// Tree reduction of each block's 128 elements in workgroup memory (barriers in an scf.while).
inline TestKernel block_sum_kernel() {
  using T = format::ScalarType;
  return {std::string(R"(
  func.func @qv_k1_block_sum(%in: memref<?xf32>, %out: memref<?xf32>, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 128, 1, 1>} {
    %tile = memref.alloca() : memref<128xf32, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32)") + kGlobalIndex + R"(
    %v = scf.if %in_range -> (f32) {
      %x = memref.load %in[%i] : memref<?xf32>
      scf.yield %x : f32
    } else {
      scf.yield %zero : f32
    }
    memref.store %v, %tile[%tid] : memref<128xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %last = scf.while (%stride = %c64) : (index) -> index {
      %more = arith.cmpi ugt, %stride, %c0 : index
      scf.condition(%more) %stride : index
    } do {
    ^bb0(%stride: index):
      %active = arith.cmpi ult, %tid, %stride : index
      scf.if %active {
        %a = memref.load %tile[%tid] : memref<128xf32, #gpu.address_space<workgroup>>
        %j = arith.addi %tid, %stride : index
        %b = memref.load %tile[%j] : memref<128xf32, #gpu.address_space<workgroup>>
        %s = arith.addf %a, %b : f32
        memref.store %s, %tile[%tid] : memref<128xf32, #gpu.address_space<workgroup>>
      }
      gpu.barrier
      %next = arith.shrui %stride, %c1 : index
      scf.yield %next : index
    }
    %is_first = arith.cmpi eq, %tid, %c0 : index
    scf.if %is_first {
      %total = memref.load %tile[%c0] : memref<128xf32, #gpu.address_space<workgroup>>
      memref.store %total, %out[%bid] : memref<?xf32>
    }
    return
  })",
          manifest_entry("qv_k1_block_sum",
                         {buffer_param("in", T::F32), buffer_param("out", T::F32),
                          scalar_param("n", T::I32)},
                         {128, 1, 1})};
}

// scf.for with an scf.if inside, then an scf.index_switch on i % 4.
inline TestKernel loops_kernel() {
  using T = format::ScalarType;
  return {std::string(R"(
  func.func @qv_k2_loops(%in: memref<?xi32>, %out: memref<?xi32>, %m: i32, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %c3_i32 = arith.constant 3 : i32
    %cm1_i32 = arith.constant -1 : i32)") + kGlobalIndex + R"(
    scf.if %in_range {
      %x = memref.load %in[%i] : memref<?xi32>
      %m_idx = arith.index_cast %m : i32 to index
      %acc = scf.for %k = %c0 to %m_idx step %c1 iter_args(%acc0 = %c0_i32) -> (i32) {
        %k32 = arith.index_cast %k : index to i32
        %odd_bit = arith.andi %k32, %c1_i32 : i32
        %odd = arith.cmpi ne, %odd_bit, %c0_i32 : i32
        %next = scf.if %odd -> (i32) {
          %p = arith.muli %x, %k32 : i32
          %s = arith.addi %acc0, %p : i32
          scf.yield %s : i32
        } else {
          %s = arith.xori %acc0, %k32 : i32
          scf.yield %s : i32
        }
        scf.yield %next : i32
      }
      %sel = arith.remui %i, %c4 : index
      %r = scf.index_switch %sel -> i32
      case 0 {
        scf.yield %acc : i32
      }
      case 1 {
        %t = arith.muli %acc, %c3_i32 : i32
        scf.yield %t : i32
      }
      case 2 {
        %t = arith.subi %acc, %x : i32
        scf.yield %t : i32
      }
      default {
        scf.yield %cm1_i32 : i32
      }
      memref.store %r, %out[%i] : memref<?xi32>
    }
    return
  })",
          manifest_entry("qv_k2_loops",
                         {buffer_param("in", T::I32), buffer_param("out", T::I32),
                          scalar_param("m", T::I32), scalar_param("n", T::I32)},
                         {64, 1, 1})};
}

// A data-dependent scf.while carrying two values: Collatz steps down to 1.
inline TestKernel collatz_kernel() {
  using T = format::ScalarType;
  return {std::string(R"(
  func.func @qv_k3_collatz(%in: memref<?xi32>, %steps: memref<?xi32>, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 32, 1, 1>} {
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %c3_i32 = arith.constant 3 : i32)") + kGlobalIndex + R"(
    scf.if %in_range {
      %x = memref.load %in[%i] : memref<?xi32>
      %res:2 = scf.while (%v = %x, %c = %c0_i32) : (i32, i32) -> (i32, i32) {
        %ne1 = arith.cmpi ne, %v, %c1_i32 : i32
        scf.condition(%ne1) %v, %c : i32, i32
      } do {
      ^bb0(%v: i32, %c: i32):
        %bit = arith.andi %v, %c1_i32 : i32
        %even = arith.cmpi eq, %bit, %c0_i32 : i32
        %nv = scf.if %even -> (i32) {
          %h = arith.shrui %v, %c1_i32 : i32
          scf.yield %h : i32
        } else {
          %t = arith.muli %v, %c3_i32 : i32
          %u = arith.addi %t, %c1_i32 : i32
          scf.yield %u : i32
        }
        %nc = arith.addi %c, %c1_i32 : i32
        scf.yield %nv, %nc : i32, i32
      }
      memref.store %res#1, %steps[%i] : memref<?xi32>
    }
    return
  })",
          manifest_entry("qv_k3_collatz",
                         {buffer_param("in", T::I32), buffer_param("steps", T::I32),
                          scalar_param("n", T::I32)},
                         {32, 1, 1})};
}

// i8 / i16 / i64 buffers and scalars, a bool buffer (i8) and a bool scalar (i32).
inline TestKernel ints_kernel() {
  using T = format::ScalarType;
  return {std::string(R"(
  func.func @qv_k4_ints(%a8: memref<?xi8>, %a16: memref<?xi16>, %a64: memref<?xi64>,
                        %out8: memref<?xi8>, %out16: memref<?xi16>, %out64: memref<?xi64>,
                        %neg: memref<?xi8>, %s8: i8, %s16: i16, %s64: i64, %flip: i32, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 32, 1, 1>} {
    %c3_i8 = arith.constant 3 : i8
    %c0_i8 = arith.constant 0 : i8
    %c2_i16 = arith.constant 2 : i16
    %c0_i64 = arith.constant 0 : i64
    %c0_i32 = arith.constant 0 : i32)") + kGlobalIndex + R"(
    scf.if %in_range {
      %x8 = memref.load %a8[%i] : memref<?xi8>
      %x16 = memref.load %a16[%i] : memref<?xi16>
      %x64 = memref.load %a64[%i] : memref<?xi64>
      %m8 = arith.muli %x8, %c3_i8 : i8
      %r8 = arith.addi %m8, %s8 : i8
      memref.store %r8, %out8[%i] : memref<?xi8>
      %sh = arith.shrsi %x16, %c2_i16 : i16
      %w8 = arith.extsi %x8 : i8 to i16
      %t16 = arith.addi %sh, %w8 : i16
      %r16 = arith.addi %t16, %s16 : i16
      memref.store %r16, %out16[%i] : memref<?xi16>
      %p64 = arith.muli %x64, %s64 : i64
      %u16 = arith.extui %x16 : i16 to i64
      %v64 = arith.addi %p64, %u16 : i64
      %neg64 = arith.subi %c0_i64, %v64 : i64
      %do_flip = arith.cmpi ne, %flip, %c0_i32 : i32
      %r64 = arith.select %do_flip, %neg64, %v64 : i64
      memref.store %r64, %out64[%i] : memref<?xi64>
      %is_neg = arith.cmpi slt, %x8, %c0_i8 : i8
      %b = arith.extui %is_neg : i1 to i8
      memref.store %b, %neg[%i] : memref<?xi8>
    }
    return
  })",
          manifest_entry("qv_k4_ints",
                         {buffer_param("a8", T::I8), buffer_param("a16", T::I16),
                          buffer_param("a64", T::I64), buffer_param("out8", T::I8),
                          buffer_param("out16", T::I16), buffer_param("out64", T::I64),
                          buffer_param("neg", T::Bool), scalar_param("s8", T::I8),
                          scalar_param("s16", T::I16), scalar_param("s64", T::I64),
                          scalar_param("flip", T::Bool), scalar_param("n", T::I32)},
                         {32, 1, 1})};
}

inline TestKernel math_kernel() {
  using T = format::ScalarType;
  return {std::string(R"(
  func.func @qv_k5_math(%x: memref<?xf32>, %e: memref<?xf32>, %t: memref<?xf32>,
                        %s: memref<?xf32>, %er: memref<?xf32>, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {)") + kGlobalIndex + R"(
    scf.if %in_range {
      %xv = memref.load %x[%i] : memref<?xf32>
      %ev = math.exp %xv : f32
      memref.store %ev, %e[%i] : memref<?xf32>
      %tv = math.tanh %xv : f32
      memref.store %tv, %t[%i] : memref<?xf32>
      %ax = math.absf %xv : f32
      %sv = math.sqrt %ax : f32
      memref.store %sv, %s[%i] : memref<?xf32>
      %erv = math.erf %xv : f32
      memref.store %erv, %er[%i] : memref<?xf32>
    }
    return
  })",
          manifest_entry("qv_k5_math",
                         {buffer_param("x", T::F32), buffer_param("e", T::F32),
                          buffer_param("t", T::F32), buffer_param("s", T::F32),
                          buffer_param("er", T::F32), scalar_param("n", T::I32)},
                         {64, 1, 1})};
}

// A second workgroup-memory kernel (i32): reverses each block through shared memory, so a
// module holding it and block_sum has two Workgroup variables.
inline TestKernel reverse_kernel() {
  using T = format::ScalarType;
  return {std::string(R"(
  func.func @qv_k6_reverse(%in: memref<?xi32>, %out: memref<?xi32>, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %tile = memref.alloca() : memref<64xi32, #gpu.address_space<workgroup>>
    %c63 = arith.constant 63 : index
    %zero = arith.constant 0 : i32)") + kGlobalIndex + R"(
    %v = scf.if %in_range -> (i32) {
      %x = memref.load %in[%i] : memref<?xi32>
      scf.yield %x : i32
    } else {
      scf.yield %zero : i32
    }
    memref.store %v, %tile[%tid] : memref<64xi32, #gpu.address_space<workgroup>>
    gpu.barrier
    scf.if %in_range {
      %j = arith.subi %c63, %tid : index
      %r = memref.load %tile[%j] : memref<64xi32, #gpu.address_space<workgroup>>
      memref.store %r, %out[%i] : memref<?xi32>
    }
    return
  })",
          manifest_entry("qv_k6_reverse",
                         {buffer_param("in", T::I32), buffer_param("out", T::I32),
                          scalar_param("n", T::I32)},
                         {64, 1, 1})};
}

// qv::vec<float, 4> buffers and a 2-D block: out[i] = x[i] * a + (float)thread_id.y.
inline TestKernel vec4_kernel() {
  using T = format::ScalarType;
  return {R"(
  func.func @qv_k7_vec4(%x: memref<?xvector<4xf32>>, %out: memref<?xvector<4xf32>>, %a: f32, %n: i32)
      attributes {qv.kernel, qv.block = array<i32: 8, 4, 1>} {
    %bid = gpu.block_id x
    %tx = gpu.thread_id x
    %ty = gpu.thread_id y
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %row = arith.muli %ty, %c8 : index
    %local = arith.addi %row, %tx : index
    %base = arith.muli %bid, %c32 : index
    %i = arith.addi %base, %local : index
    %n_idx = arith.index_cast %n : i32 to index
    %in_range = arith.cmpi ult, %i, %n_idx : index
    scf.if %in_range {
      %xv = memref.load %x[%i] : memref<?xvector<4xf32>>
      %av = vector.broadcast %a : f32 to vector<4xf32>
      %ty32 = arith.index_cast %ty : index to i32
      %tyf = arith.sitofp %ty32 : i32 to f32
      %tv = vector.broadcast %tyf : f32 to vector<4xf32>
      %m = arith.mulf %xv, %av : vector<4xf32>
      %r = arith.addf %m, %tv : vector<4xf32>
      memref.store %r, %out[%i] : memref<?xvector<4xf32>>
    }
    return
  })",
          manifest_entry("qv_k7_vec4",
                         {buffer_param("x", T::F32, 4), buffer_param("out", T::F32, 4),
                          scalar_param("a", T::F32), scalar_param("n", T::I32)},
                         {8, 4, 1})};
}

// Subgroup ops: an integer reduction, size / lane / subgroup id, and a shuffle xor 1. Every
// thread is active (the grid covers the buffers exactly).
inline TestKernel subgroup_kernel() {
  using T = format::ScalarType;
  return {R"(
  func.func @qv_k8_subgroup(%x: memref<?xi32>, %sum: memref<?xi32>, %info: memref<?xi32>, %swapped: memref<?xf32>)
      attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %bid = gpu.block_id x
    %bdim = gpu.block_dim x
    %tid = gpu.thread_id x
    %base = arith.muli %bid, %bdim : index
    %i = arith.addi %base, %tid : index
    %v = memref.load %x[%i] : memref<?xi32>
    %r = gpu.subgroup_reduce add %v : (i32) -> i32
    memref.store %r, %sum[%i] : memref<?xi32>
    %size = gpu.subgroup_size : index
    %lane = gpu.lane_id
    %sid = gpu.subgroup_id : index
    %size32 = arith.index_cast %size : index to i32
    %lane32 = arith.index_cast %lane : index to i32
    %sid32 = arith.index_cast %sid : index to i32
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %j0 = arith.muli %i, %c3 : index
    %j1 = arith.addi %j0, %c1 : index
    %j2 = arith.addi %j1, %c1 : index
    memref.store %size32, %info[%j0] : memref<?xi32>
    memref.store %lane32, %info[%j1] : memref<?xi32>
    memref.store %sid32, %info[%j2] : memref<?xi32>
    %f = arith.sitofp %v : i32 to f32
    %c1_i32 = arith.constant 1 : i32
    %y, %ok = gpu.shuffle xor %f, %c1_i32, %size32 : f32
    %nan = arith.constant 0x7FC00000 : f32
    %z = arith.select %ok, %y, %nan : f32
    memref.store %z, %swapped[%i] : memref<?xf32>
    return
  })",
          manifest_entry("qv_k8_subgroup",
                         {buffer_param("x", T::I32), buffer_param("sum", T::I32),
                          buffer_param("info", T::I32), buffer_param("swapped", T::F32)},
                         {64, 1, 1})};
}

inline std::vector<TestKernel> all_test_kernels() {
  return {saxpy_kernel(),   block_sum_kernel(), loops_kernel(), collatz_kernel(),
          ints_kernel(),    math_kernel(),      reverse_kernel(), vec4_kernel(),
          subgroup_kernel()};
}

}  // namespace quiver::test
