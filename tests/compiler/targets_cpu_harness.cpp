#include "targets_cpu_harness.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <barrier>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "backends/cpu/cpu_abi.h"
#include "ir/layout.h"
#include "ir/normalize.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Parser/Parser.h"
#include "targets/llvm_common/llvm_common.h"

namespace quiver::test {

namespace {

format::ScalarType scalar_type(mlir::Type t) {
  if (auto v = mlir::dyn_cast<mlir::VectorType>(t)) t = v.getElementType();
  if (t.isF32()) return format::ScalarType::F32;
  if (t.isF64()) return format::ScalarType::F64;
  if (t.isF16()) return format::ScalarType::F16;
  if (t.isBF16()) return format::ScalarType::BF16;
  switch (t.getIntOrFloatBitWidth()) {
    case 8: return format::ScalarType::I8;
    case 16: return format::ScalarType::I16;
    case 64: return format::ScalarType::I64;
    default: return format::ScalarType::I32;
  }
}

}  // namespace

ParsedIR parse_ir(const std::string& ir) {
  ParsedIR parsed;
  mlir::DialectRegistry registry;
  ir::register_dialects(registry);   // the neutral IR's, the qv dialect included
  parsed.context = std::make_unique<mlir::MLIRContext>(registry);
  compiler::llvm_common::prepare_context(*parsed.context);
  parsed.module = mlir::parseSourceString<mlir::ModuleOp>(ir, parsed.context.get());
  EXPECT_TRUE(parsed.module) << "IR does not parse:\n" << ir;
  if (!parsed.module) return parsed;
  parsed.module->walk([&](mlir::func::FuncOp func) {
    if (!func->hasAttr("qv.kernel")) return;
    format::Kernel k;
    k.symbol = func.getSymName().str();
    k.name = k.symbol;
    auto block = func->getAttrOfType<mlir::DenseI32ArrayAttr>("qv.block");
    for (int i = 0; i < 3 && block; ++i) k.block[i] = static_cast<uint32_t>(block[i]);
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      format::Param p;
      p.name = "p" + std::to_string(i);
      mlir::Type t = func.getArgument(i).getType();
      if (auto m = mlir::dyn_cast<mlir::MemRefType>(t)) {
        p.is_buffer = true;
        p.access = format::Access::ReadWrite;
        t = m.getElementType();
      }
      if (auto v = mlir::dyn_cast<mlir::VectorType>(t)) p.vec_width = static_cast<uint32_t>(v.getNumElements());
      p.type = scalar_type(t);
      k.params.push_back(p);
    }
    k.shared_bytes = ir::workgroup_bytes(func);
    func.walk([&](mlir::gpu::BarrierOp) { k.uses_barrier = true; });
    parsed.kernels.push_back(k);
  });
  return parsed;
}

compiler::TargetOptions with_debug_options(compiler::TargetOptions options) {
  if (const char* dir = std::getenv("QUIVER_TEST_KEEP_TEMPS"); dir && options.keep_temps_dir.empty())
    options.keep_temps_dir = dir;
  return options;
}

std::vector<compiler::TargetImage> compile(compiler::Target& target, const std::string& ir,
                                           const compiler::TargetOptions& options) {
  ParsedIR parsed = parse_ir(ir);
  if (!parsed.module) return {};
  return target.compile(*parsed.module, parsed.kernels, with_debug_options(options));
}

LoadedCpuImage::LoadedCpuImage(std::span<const std::byte> image) {
  fd_ = memfd_create("quiver-test-kernels", MFD_CLOEXEC);
  if (fd_ < 0) {
    ADD_FAILURE() << "memfd_create failed";
    return;
  }
  size_t done = 0;
  while (done < image.size()) {
    ssize_t n = write(fd_, image.data() + done, image.size() - done);
    if (n <= 0) {
      ADD_FAILURE() << "write to memfd failed";
      return;
    }
    done += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd_);
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) ADD_FAILURE() << "dlopen failed: " << dlerror();
}

LoadedCpuImage::~LoadedCpuImage() {
  if (handle_) dlclose(handle_);
  if (fd_ >= 0) close(fd_);
}

void* LoadedCpuImage::symbol(const std::string& name) const {
  void* p = handle_ ? dlsym(handle_, name.c_str()) : nullptr;
  if (!p) ADD_FAILURE() << "symbol '" << name << "' missing from the CPU image";
  return p;
}

void run_cpu_kernel(void* fn, const format::Kernel& kernel, std::array<uint32_t, 3> grid,
                    const std::vector<void*>& args) {
  auto entry = reinterpret_cast<qv_cpu_kernel_fn>(fn);
  if (!entry) return;
  size_t shared_size = std::max<size_t>(64, (kernel.shared_bytes + 63) / 64 * 64);
  void* shared = std::aligned_alloc(64, shared_size);
  uint32_t threads = kernel.block[0] * kernel.block[1] * kernel.block[2];
  for (uint32_t bz = 0; bz < grid[2]; ++bz)
    for (uint32_t by = 0; by < grid[1]; ++by)
      for (uint32_t bx = 0; bx < grid[0]; ++bx) {
        std::memset(shared, 0xAB, shared_size);   // workgroup memory starts undefined
        qv_cpu_ctx ctx{};
        ctx.block_id[0] = bx;
        ctx.block_id[1] = by;
        ctx.block_id[2] = bz;
        for (int k = 0; k < 3; ++k) {
          ctx.block_dim[k] = kernel.block[k];
          ctx.grid_dim[k] = grid[k];
        }
        ctx.shared = shared;
        if (!kernel.uses_barrier) {
          entry(args.data(), &ctx);
          continue;
        }
        std::barrier<> meet(threads);
        ctx.runtime = &meet;
        ctx.barrier = [](qv_cpu_ctx* c) { static_cast<std::barrier<>*>(c->runtime)->arrive_and_wait(); };
        std::vector<std::thread> pool;
        for (uint32_t t = 0; t < threads; ++t) {
          qv_cpu_ctx mine = ctx;
          mine.thread_id[0] = t % kernel.block[0];
          mine.thread_id[1] = t / kernel.block[0] % kernel.block[1];
          mine.thread_id[2] = t / (kernel.block[0] * kernel.block[1]);
          pool.emplace_back([entry, &args, mine]() mutable { entry(args.data(), &mine); });
        }
        for (auto& th : pool) th.join();
      }
  std::free(shared);
}

std::string image_text(const compiler::TargetImage& image) {
  std::string s(reinterpret_cast<const char*>(image.data.data()), image.data.size());
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

}  // namespace quiver::test
