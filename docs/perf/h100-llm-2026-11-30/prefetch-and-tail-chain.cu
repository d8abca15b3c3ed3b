// Does prefetching the next product's weights into L2 during the small kernels between products
// shorten a decode-like chain of launches (CUDA graph, programmatic dependent launches)? And what
// does doing a one-block kernel's work in the previous launch's last block save? A measurement
// program for docs/perf/NOTES.md, not part of the build: nvcc -O3 -arch=sm_90a -std=c++17
// prefetch-and-tail-chain.cu -o pf; ./pf (prefetch), ./pf diag (one pair), ./pf x y (tails).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x)                                                             \
  do {                                                                    \
    cudaError_t err_ = (x);                                               \
    if (err_ != cudaSuccess) {                                            \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

__device__ __forceinline__ void gdc_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void gdc_launch() { asm volatile("griddepcontrol.launch_dependents;" :::); }
__device__ __forceinline__ void bulk_prefetch(const char* p, unsigned n) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(n) : "memory");
}
// Prefetch work handed to extra blocks: [w, w + bytes) split among `blocks` blocks, thread 0 each.
struct Pf {
  const char* w;
  size_t bytes;
  int blocks;
};
__device__ int g_read_mode;
__device__ __forceinline__ bool prefetch_block(Pf pf, int first_pf_block) {
  int b = blockIdx.x - first_pf_block;
  if (b < 0) return false;
  if (g_read_mode && pf.bytes) {
    size_t per = (pf.bytes / pf.blocks + 15) & ~size_t(15);
    size_t lo = per * b, hi = (pf.bytes < lo + per ? pf.bytes : lo + per);
    unsigned acc = 0;
    if (g_read_mode == 1) {
      for (size_t o = lo + threadIdx.x * 16; o < hi; o += blockDim.x * 16) {
        unsigned v0, v1, v2, v3;
        asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3) : "l"(pf.w + o));
        acc += v0 ^ v3;
      }
    } else {
      for (size_t o = lo + threadIdx.x * 128; o < hi; o += blockDim.x * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(pf.w + o));
    }
    if (acc == 0x12345678) ((unsigned*)pf.w)[0] = acc;
    return true;
  }
  if (threadIdx.x == 0 && pf.bytes) {
    size_t per = (pf.bytes / pf.blocks + 15) & ~size_t(15);
    size_t lo = per * b, hi = (pf.bytes < lo + per ? pf.bytes : lo + per);
    for (size_t o = lo; o < hi; o += 65536) bulk_prefetch(pf.w + o, (unsigned)(hi - o < 65536 ? hi - o : 65536));
  }
  return true;
}

__global__ void product(const uint4* W, int per_block_u4, const float* x, float* out, int blocks, Pf pf) {
  if (prefetch_block(pf, blocks)) return;
  gdc_wait();
  gdc_launch();
  const uint4* p = W + (size_t)blockIdx.x * per_block_u4;
  unsigned acc = 0;
#pragma unroll 4
  for (int i = threadIdx.x; i < per_block_u4; i += blockDim.x) {
    uint4 v = __ldg(p + i);
    acc += v.x ^ (v.y * 3) ^ (v.z * 5) ^ (v.w * 7);
  }
  for (int s = 16; s; s >>= 1) acc += __shfl_xor_sync(~0u, acc, s);
  if ((threadIdx.x & 31) == 0) atomicAdd(out + (blockIdx.x & 255), float(acc & 255) * x[threadIdx.x]);
}
__device__ unsigned counters[1024];
// The product with the next one-block kernel's work done by its last block to arrive.
template <int F>
__global__ void product_tail(const uint4* W, int per_block_u4, const float* x, float* out, int slot, long long spin) {
  gdc_wait();
  gdc_launch();
  const uint4* p = W + (size_t)blockIdx.x * per_block_u4;
  unsigned acc = 0;
#pragma unroll 4
  for (int i = threadIdx.x; i < per_block_u4; i += blockDim.x) {
    uint4 v = __ldg(p + i);
    acc += v.x ^ (v.y * 3) ^ (v.z * 5) ^ (v.w * 7);
  }
  for (int s = 16; s; s >>= 1) acc += __shfl_xor_sync(~0u, acc, s);
  if ((threadIdx.x & 31) == 0) out[blockIdx.x * 4 + threadIdx.x / 32] = float(acc & 255) * x[threadIdx.x];
  __shared__ unsigned ticket;
  if (F == 1) __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    if (F == 2) __threadfence();
    ticket = atomicAdd(&counters[slot], 1u);
  }
  __syncthreads();
  if (ticket != gridDim.x - 1) return;
  __threadfence();
  if (threadIdx.x == 0) counters[slot] = 0;
  long long t0 = clock64();
  while (clock64() - t0 < spin) {
  }
  if (threadIdx.x == 0) out[0] += 1.f;
}
__global__ void small(float* buf, long long spin, int blocks, Pf pf) {
  if (prefetch_block(pf, blocks)) return;
  gdc_wait();
  gdc_launch();
  long long t0 = clock64();
  while (clock64() - t0 < spin) {
  }
  if (threadIdx.x == 0) buf[blockIdx.x] += 1.f;
}
__global__ void pfkernel(Pf pf) {
  prefetch_block(pf, 0);
  gdc_wait();
  gdc_launch();
}

template <class K, class... A>
void launch(cudaStream_t s, K k, int grid, int block, A... a) {
  cudaLaunchConfig_t c{};
  c.gridDim = grid;
  c.blockDim = block;
  c.stream = s;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  c.attrs = at;
  c.numAttrs = 1;
  CK(cudaLaunchKernelEx(&c, k, a...));
}

struct Prod {
  char* w;
  size_t bytes;
  int blocks;
};
int main(int argc, char** argv) {
  const int layers = 32;
  // Q4_0 Llama-3-8B per layer: QKV 6144x4096, O 4096x4096, gate_up 28672x4096, down 4096x14336
  const size_t rowb = 4096 / 32 * 18;
  size_t sizes[4] = {6144 * rowb, 4096 * rowb, 28672 * rowb, 4096 * (14336 / 32 * 18)};
  std::vector<Prod> prods;
  for (int l = 0; l < layers; ++l)
    for (int i = 0; i < 4; ++i) {
      Prod p;
      p.bytes = sizes[i];
      p.blocks = (int)(p.bytes / (8 * rowb));  // ~18 KB a block
      if (i == 3) p.blocks = 1024;
      p.bytes = p.bytes / p.blocks / 16 * 16 * p.blocks;
      CK(cudaMalloc(&p.w, p.bytes));
      CK(cudaMemset(p.w, 1, p.bytes));
      prods.push_back(p);
    }
  char* out_w;
  size_t out_bytes = 128256 * rowb;
  CK(cudaMalloc(&out_w, out_bytes));
  CK(cudaMemset(out_w, 1, out_bytes));
  float *x, *out, *buf;
  CK(cudaMalloc(&x, 4096));
  CK(cudaMalloc(&out, 4096));
  CK(cudaMalloc(&buf, 4096));
  CK(cudaMemset(x, 0, 4096));
  CK(cudaMemset(out, 0, 4096));
  CK(cudaMemset(buf, 0, 4096));
  double total = out_bytes;
  for (auto& p : prods) total += p.bytes;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const long long us = 1980;  // cycles a microsecond, roughly
  float* big;
  CK(cudaMalloc(&big, 1 << 20));
  int tail = 0;  // 1, 2: the norms done by the last block of the product before them (fence form)
  int slot = 0;
  auto prod_tail = [&](const Prod& p) {
    float* o = out;  // out has 1024 floats; blocks * 4 may exceed: use a bigger buffer
    o = big;
    long long spin = (long long)(3 * us);
    slot = (slot + 1) % 1024;
    if (tail == 1)
      launch(s, product_tail<1>, p.blocks, 128, (const uint4*)p.w, (int)(p.bytes / p.blocks / 16), (const float*)x, o,
             slot, spin);
    else
      launch(s, product_tail<2>, p.blocks, 128, (const uint4*)p.w, (int)(p.bytes / p.blocks / 16), (const float*)x, o,
             slot, spin);
  };
  auto prod = [&](const Prod& p, Pf pf, int pfb) {
    launch(s, product, p.blocks + pfb, 128, (const uint4*)p.w, (int)(p.bytes / p.blocks / 16), (const float*)x, out,
           p.blocks, pf);
  };
  // mode: 0 none; 1 extra blocks of the small kernel before a product; 2 separate kernel; 3 no small kernels
  auto step = [&](int mode, size_t cap, int pfb, double spin_scale) {
    auto pf_of = [&](const Prod& p) { return Pf{p.w, std::min(cap, p.bytes), pfb}; };
    auto sm = [&](int blocks, double usecs, const Prod* next) {
      if (mode == 3) return;
      if (mode == 4) next = nullptr;
      if (mode == 2 && next) launch(s, pfkernel, pfb, 32, pf_of(*next));
      Pf pf = mode == 1 && next ? pf_of(*next) : Pf{nullptr, 0, 1};
      launch(s, small, blocks + (mode == 1 && next ? pfb : 0), 256, buf, (long long)(usecs * spin_scale * us), blocks,
             pf);
    };
    Pf none{nullptr, 0, 1};
    for (int l = 0; l < layers; ++l) {
      const Prod* P = &prods[4 * l];
      auto pr = [&](int i) {
        const Prod* nx = i < 3 ? &P[i + 1] : (l + 1 < layers ? &prods[4 * (l + 1)] : nullptr);
        if (mode == 4 && nx)
          prod(P[i], pf_of(*nx), pfb);
        else if (tail && (i == 1 || i == 3))
          prod_tail(P[i]);
        else
          prod(P[i], none, 0);
      };
      if (!tail || l == 0) sm(1, 4, &P[0]);  // norm
      pr(0);                                 // QKV
      sm(32, 4, nullptr);                    // attention split
      sm(32, 2.5, &P[1]);                    // combine
      pr(1);                                 // O
      if (!tail) sm(1, 4, &P[2]);            // norm
      pr(2);                                 // gate_up
      sm(56, 2.5, &P[3]);                    // swiglu
      pr(3);                                 // down
    }
    sm(1, 4, nullptr);
    Prod o{out_w, out_bytes, (int)(out_bytes / (8 * rowb))};
    prod(o, none, 0);
  };
  auto time_graph = [&](int mode, size_t cap, int pfb, double spin_scale) {
    cudaGraph_t g;
    cudaGraphExec_t e;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    step(mode, cap, pfb, spin_scale);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&e, g, 0));
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> t;
    for (int r = 0; r < 25; ++r) {
      CK(cudaEventRecord(a, s));
      CK(cudaGraphLaunch(e, s));
      CK(cudaEventRecord(b, s));
      CK(cudaEventSynchronize(b));
      float ms;
      cudaEventElapsedTime(&ms, a, b);
      if (r >= 5) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    float med = t[t.size() / 2];
    printf("tail %d mode %d cap %6.1f MB pfblocks %4d spin x%.1f: step %.3f ms  %.0f GB/s  (%.0f steps/s)\n", tail,
           mode, cap / 1e6, pfb, spin_scale, med, total / med / 1e6, 1e3 / med);
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
  };
  if (argc == 2) {  // diagnostic: one small kernel (20 us) with or without prefetching a 16 MB product, then it
    Prod p = prods[2];
    p.bytes = 16u << 20;
    p.blocks = 16u << 20 >> 14;
    for (int rep = 0; rep < 3; ++rep)
      for (int m : {0, 1, 5, 6}) {
        int rm = m == 5 ? 1 : m == 6 ? 2 : 0;
        CK(cudaMemcpyToSymbol(g_read_mode, &rm, sizeof rm));
        cudaGraph_t g;
        cudaGraphExec_t e;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        for (int l = 0; l < 8; ++l) {
          Prod q = prods[4 * l + 2];
          q.bytes = p.bytes;
          q.blocks = p.blocks;
          Pf pf{q.w, m ? q.bytes : 0, 132};
          launch(s, small, 1 + (m ? 132 : 0), 256, buf, (long long)(20 * us), 1, pf);
          prod(q, Pf{nullptr, 0, 1}, 0);
        }
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&e, g, 0));
        cudaEvent_t a, b;
        cudaEventCreate(&a);
        cudaEventCreate(&b);
        std::vector<float> t;
        for (int r = 0; r < 25; ++r) {
          CK(cudaEventRecord(a, s));
          CK(cudaGraphLaunch(e, s));
          CK(cudaEventRecord(b, s));
          CK(cudaEventSynchronize(b));
          float ms;
          cudaEventElapsedTime(&ms, a, b);
          if (r >= 5) t.push_back(ms);
        }
        std::sort(t.begin(), t.end());
        printf("diag prefetch %d: 8 x (20 us small + 16 MB product) %.1f us, %.1f us a pair\n", m,
               t[t.size() / 2] * 1e3, t[t.size() / 2] * 1e3 / 8);
      }
    // the small kernel alone
    return 0;
  }
  if (argc > 2) {
    for (int rep = 0; rep < 2; ++rep) {
      tail = 0;
      time_graph(0, 0, 132, 1);
      tail = 1;
      time_graph(0, 0, 132, 1);
      tail = 2;
      time_graph(0, 0, 132, 1);
    }
    return 0;
  }
  time_graph(3, 0, 132, 1);
  time_graph(0, 0, 132, 1);
  time_graph(0, 0, 132, 0.5);
  for (size_t cap : {4u << 20, 8u << 20, 16u << 20, 24u << 20, 32u << 20})
    for (int pfb : {32, 132}) {
      time_graph(1, cap, pfb, 1);
    }
  for (size_t cap : {8u << 20, 16u << 20}) time_graph(2, cap, 132, 1);
  for (size_t cap : {8u << 20, 16u << 20, 32u << 20}) time_graph(4, cap, 132, 1);
  time_graph(0, 0, 132, 1);
  time_graph(3, 0, 132, 1);
  return 0;
}
