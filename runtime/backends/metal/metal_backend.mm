// The Metal backend ("metal"), Apple platforms only, Objective-C++ with ARC. One MTLDevice and
// one MTLCommandQueue per Device; one command buffer per launch, committed at once (Metal runs a
// queue's command buffers in order); buffers in shared storage (unified memory on Apple
// silicon). Arguments follow docs/abi.md "MSL / metallib": parameter i at [[buffer(n_i)]] as
// the MSL image records it, a buffer bound whole, a scalar with setBytes.
//
// Kernels come from the metallib image when the fat binary has one (built where Apple's tools
// were present), else from the MSL image, compiled by the Metal framework at load time.
//
// NEVER BUILT OR RUN: it compiles only on Apple platforms and no Mac has been available
// (docs/targets.md). The pure part it relies on (msl_image.cpp) is tested on Linux.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "msl_image.h"

namespace quiver::backend {
namespace metal {
namespace {

std::string text(NSString* s) { return s ? std::string([s UTF8String]) : std::string(); }

std::string error_text(NSError* error) {
  return error ? text([error localizedDescription]) : std::string("no error description");
}

// Everything a Device, its Buffers and its Modules share.
struct Context {
  id<MTLDevice> device = nil;
  id<MTLCommandQueue> queue = nil;
  id<MTLCommandBuffer> last = nil;   // the most recently committed command buffer
  std::string name;
  std::string last_kernel;

  // Command buffers of one queue complete in order: waiting for the last waits for all.
  void wait_all(const std::string& what) {
    if (!last) return;
    id<MTLCommandBuffer> done = last;
    last = nil;
    [done waitUntilCompleted];
    if ([done status] == MTLCommandBufferStatusError) {
      std::string after = last_kernel.empty() ? "" : " (last kernel launched: '" + last_kernel + "')";
      throw Error(ErrorCode::DeviceError,
                  "metal: " + what + ": a command buffer failed on " + name + after + ": " + error_text([done error]));
    }
  }
};

class MetalBuffer final : public Buffer {
 public:
  MetalBuffer(std::shared_ptr<Context> context, size_t size) : context_(std::move(context)) {
    bytes = size;
    if (size == 0) return;   // newBufferWithLength:0 returns nil; an empty buffer has no storage
    buffer = [context_->device newBufferWithLength:size options:MTLResourceStorageModeShared];
    if (!buffer)
      throw Error(ErrorCode::OutOfMemory,
                  "metal: allocating a buffer of " + std::to_string(size) + " bytes failed on " + context_->name);
  }
  ~MetalBuffer() override {
    // A launch in flight may still use the buffer; ARC keeps it alive for the command buffer
    // that references it, so nothing needs to wait here.
  }
  uint64_t native_handle() const override { return reinterpret_cast<uintptr_t>((__bridge void*)buffer); }
  const std::shared_ptr<Context>& context() const { return context_; }
  id<MTLBuffer> buffer = nil;

 private:
  std::shared_ptr<Context> context_;
};

class MetalModule final : public Module {
 public:
  MetalModule(std::shared_ptr<Context> context, const format::FatBinary& fatbin, int msl_index, int metallib_index)
      : context_(std::move(context)), label_(fatbin.label()) {
    const format::Manifest& manifest = fatbin.manifest();
    // The MSL image is always read: it records each kernel's function name and buffer indices.
    std::vector<std::byte> msl_bytes = fatbin.image_data(static_cast<size_t>(msl_index));
    std::string error;
    msl_image::Image image;
    if (!msl_image::parse(std::string_view(reinterpret_cast<const char*>(msl_bytes.data()), msl_bytes.size()), image,
                          error))
      throw Error(ErrorCode::InvalidFatBinary, "metal: the MSL image of " + label_ + " is malformed: " + error);

    id<MTLLibrary> metallib = nil;
    if (metallib_index >= 0) {
      std::vector<std::byte> lib = fatbin.image_data(static_cast<size_t>(metallib_index));
      dispatch_data_t data = dispatch_data_create(lib.data(), lib.size(), nullptr, DISPATCH_DATA_DESTRUCTOR_DEFAULT);
      NSError* ns_error = nil;
      metallib = [context_->device newLibraryWithData:data error:&ns_error];
      if (!metallib)
        throw Error(ErrorCode::DeviceError,
                    "metal: loading the metallib of " + label_ + " on " + context_->name + " failed: " + error_text(ns_error));
      description_ = "metallib " + manifest.images[static_cast<size_t>(metallib_index)].arch;
      info_ = ImageInfo::of(manifest.images[static_cast<size_t>(metallib_index)]);
    } else {
      description_ = "msl " + manifest.images[static_cast<size_t>(msl_index)].arch;
      info_ = ImageInfo::of(manifest.images[static_cast<size_t>(msl_index)]);
    }

    for (const format::Kernel& k : manifest.kernels) {
      Entry entry;
      entry.name = k.name;
      entry.block = k.block;
      for (const msl_image::KernelSource& unit : image.kernels) {
        if (unit.symbol != k.symbol) continue;
        if (unit.buffer_index.size() != k.params.size())
          throw Error(ErrorCode::InvalidFatBinary, "metal: " + label_ + ": the MSL image gives kernel '" + k.name + "' " +
                                                       std::to_string(unit.buffer_index.size()) + " buffer indices for " +
                                                       std::to_string(k.params.size()) + " parameters");
        entry.buffer_index = unit.buffer_index;
        entry.pipeline = make_pipeline(metallib ? metallib : compile_unit(unit, image, k), unit, k);
      }
      entries_.push_back(std::move(entry));
    }
  }

  void launch(size_t kernel, Grid grid, std::span<const LaunchArg> args) override {
    if (kernel >= entries_.size())
      throw Error(ErrorCode::InvalidArgument, "metal: kernel index " + std::to_string(kernel) + " out of range");
    const Entry& entry = entries_[kernel];
    if (!entry.pipeline)
      throw Error(ErrorCode::NotFound,
                  "metal: kernel '" + entry.name + "' is not in the loaded image '" + description_ + "' of " + label_);
    Context& ctx = *context_;
    id<MTLCommandBuffer> commands = [ctx.queue commandBuffer];
    id<MTLComputeCommandEncoder> encoder = [commands computeCommandEncoder];
    [encoder setComputePipelineState:entry.pipeline];
    for (size_t i = 0; i < args.size(); ++i) {
      NSUInteger index = entry.buffer_index[i];
      if (args[i].buffer) {
        auto* buffer = dynamic_cast<MetalBuffer*>(args[i].buffer);
        if (!buffer || buffer->context() != context_) {
          [encoder endEncoding];
          throw Error(ErrorCode::InvalidArgument, "metal: kernel '" + entry.name + "' argument " + std::to_string(i) +
                                                      ": the buffer was allocated on another device or backend");
        }
        // An empty buffer has no MTLBuffer; the kernel cannot touch its (zero) elements, but a
        // bound argument is still required, so a small placeholder stands in.
        [encoder setBuffer:(buffer->buffer ? buffer->buffer : placeholder()) offset:0 atIndex:index];
      } else {
        [encoder setBytes:args[i].scalar length:args[i].scalar_size atIndex:index];
      }
    }
    [encoder dispatchThreadgroups:MTLSizeMake(grid.x, grid.y, grid.z)
            threadsPerThreadgroup:MTLSizeMake(entry.block[0], entry.block[1], entry.block[2])];
    [encoder endEncoding];
    [commands commit];
    ctx.last = commands;
    ctx.last_kernel = entry.name;
  }

  std::string image_description() const override { return description_; }
  const ImageInfo& image_info() const override { return info_; }

 private:
  struct Entry {
    std::string name;
    std::array<uint32_t, 3> block{};
    std::vector<uint32_t> buffer_index;
    id<MTLComputePipelineState> pipeline = nil;   // nil when the image lacks this kernel
  };

  id<MTLLibrary> compile_unit(const msl_image::KernelSource& unit, const msl_image::Image& image,
                              const format::Kernel& k) {
    MTLCompileOptions* options = [[MTLCompileOptions alloc] init];
    options.languageVersion = static_cast<MTLLanguageVersion>((image.msl_major << 16) | image.msl_minor);
    NSString* source = [[NSString alloc] initWithBytes:unit.source.data()
                                                length:unit.source.size()
                                              encoding:NSUTF8StringEncoding];
    NSError* ns_error = nil;
    id<MTLLibrary> library = [context_->device newLibraryWithSource:source options:options error:&ns_error];
    if (!library)
      throw Error(ErrorCode::DeviceError, "metal: compiling the MSL of kernel '" + k.name + "' (" + label_ + ") on " +
                                              context_->name + " failed: " + error_text(ns_error));
    return library;
  }

  id<MTLComputePipelineState> make_pipeline(id<MTLLibrary> library, const msl_image::KernelSource& unit,
                                            const format::Kernel& k) {
    NSString* function_name = [NSString stringWithUTF8String:unit.function.c_str()];
    id<MTLFunction> function = [library newFunctionWithName:function_name];
    if (!function)
      throw Error(ErrorCode::InvalidFatBinary, "metal: image '" + description_ + "' of " + label_ + " lists kernel '" +
                                                   k.name + "' but has no function '" + unit.function + "'");
    NSError* ns_error = nil;
    id<MTLComputePipelineState> pipeline = [context_->device newComputePipelineStateWithFunction:function
                                                                                            error:&ns_error];
    if (!pipeline)
      throw Error(ErrorCode::DeviceError, "metal: creating the pipeline of kernel '" + k.name + "' on " +
                                              context_->name + " failed: " + error_text(ns_error));
    NSUInteger threads = NSUInteger{k.block[0]} * k.block[1] * k.block[2];
    if (threads > [pipeline maxTotalThreadsPerThreadgroup])
      throw Error(ErrorCode::DeviceError, "metal: kernel '" + k.name + "' has a block of " + std::to_string(threads) +
                                              " threads; on " + context_->name + " its pipeline allows " +
                                              std::to_string([pipeline maxTotalThreadsPerThreadgroup]));
    return pipeline;
  }

  id<MTLBuffer> placeholder() {
    if (!placeholder_) placeholder_ = [context_->device newBufferWithLength:16 options:MTLResourceStorageModeShared];
    return placeholder_;
  }

  std::shared_ptr<Context> context_;
  std::string label_;
  std::string description_;
  ImageInfo info_;
  std::vector<Entry> entries_;
  id<MTLBuffer> placeholder_ = nil;
};

class MetalDevice final : public Device {
 public:
  explicit MetalDevice(std::shared_ptr<Context> context) : context_(std::move(context)) {}

  std::string backend_name() const override { return "metal"; }
  std::string device_name() const override { return context_->name; }

  std::unique_ptr<Buffer> alloc(size_t bytes) override { return std::make_unique<MetalBuffer>(context_, bytes); }

  void upload(Buffer& dst, const void* src, size_t bytes) override {
    MetalBuffer& buffer = own(dst, "upload", bytes);
    if (bytes == 0) return;
    context_->wait_all("upload");   // a launch in flight may still read the old contents
    std::memcpy([buffer.buffer contents], src, bytes);
  }

  void download(const Buffer& src, void* dst, size_t bytes) override {
    MetalBuffer& buffer = own(const_cast<Buffer&>(src), "download", bytes);
    if (bytes == 0) return;
    context_->wait_all("download");
    std::memcpy(dst, [buffer.buffer contents], bytes);
  }

  // The MSL image (always read) and the metallib, when the file has one (as load chooses).
  std::vector<size_t> images_to_load(const format::FatBinary& fatbin) const override {
    const int msl = fatbin.find_image(format::Target::MSL);
    if (msl < 0) return {};
    std::vector<size_t> images{static_cast<size_t>(msl)};
    if (const int metallib = fatbin.find_image(format::Target::METALLIB); metallib >= 0)
      images.push_back(static_cast<size_t>(metallib));
    return images;
  }

  std::unique_ptr<Module> load(const format::FatBinary& fatbin) override {
    int msl = fatbin.find_image(format::Target::MSL);
    if (msl < 0)
      throw Error(ErrorCode::NotFound, "metal: " + fatbin.label() + " has no MSL image; the file has: " +
                                           format::describe_images(fatbin.manifest()));
    int metallib = fatbin.find_image(format::Target::METALLIB);
    return std::make_unique<MetalModule>(context_, fatbin, msl, metallib);
  }

  void synchronize() override { context_->wait_all("synchronize"); }

  void* native_stream() const override { return (__bridge void*)context_->queue; }
  void* native_device() const override { return (__bridge void*)context_->device; }

  std::unique_ptr<Buffer> import_memory(uint64_t, size_t) override {
    throw Error(ErrorCode::InvalidArgument, "metal: importing foreign memory is not supported by the metal backend");
  }

 private:
  MetalBuffer& own(Buffer& b, const char* what, size_t bytes) const {
    auto* buffer = dynamic_cast<MetalBuffer*>(&b);
    if (!buffer || buffer->context() != context_)
      throw Error(ErrorCode::InvalidArgument,
                  std::string("metal: ") + what + ": the buffer was allocated on another device or backend");
    if (bytes > buffer->bytes)
      throw Error(ErrorCode::InvalidArgument, std::string("metal: ") + what + " of " + std::to_string(bytes) +
                                                  " bytes into a buffer of " + std::to_string(buffer->bytes) + " bytes");
    return *buffer;
  }
  std::shared_ptr<Context> context_;
};

NSArray<id<MTLDevice>>* all_devices() {
#if TARGET_OS_OSX
  return MTLCopyAllDevices();
#else
  id<MTLDevice> device = MTLCreateSystemDefaultDevice();
  return device ? @[ device ] : @[];
#endif
}

size_t count_devices(std::string& why_not) {
  @autoreleasepool {
    NSArray<id<MTLDevice>>* devices = all_devices();
    if ([devices count] == 0) why_not = "Metal reports no device";
    return [devices count];
  }
}

std::unique_ptr<Device> open_device(size_t index, size_t& device_count, std::string& why_not) {
  @autoreleasepool {
    NSArray<id<MTLDevice>>* devices = all_devices();
    device_count = [devices count];
    if (index >= device_count) {
      why_not = device_count == 0 ? "Metal reports no device"
                                  : "Metal reports " + std::to_string(device_count) + " device(s)";
      return nullptr;
    }
    auto context = std::make_shared<Context>();
    context->device = devices[index];
    context->name = text([context->device name]);
    context->queue = [context->device newCommandQueue];
    if (!context->queue) {
      why_not = "creating a command queue on " + context->name + " failed";
      return nullptr;
    }
    return std::make_unique<MetalDevice>(std::move(context));
  }
}

}  // namespace
}  // namespace metal

extern const Factory metal_factory;
const Factory metal_factory{"metal", &metal::count_devices, &metal::open_device};

}  // namespace quiver::backend
