// The Vulkan backend: loader dlopen'd at run time (vulkan_api.h), one compute queue, storage
// buffers, one compute pipeline per kernel, each kernel from the best SPIR-V image holding it
// (image_choice.h). Argument binding follows docs/abi.md: parameter i is the storage buffer at
// set 0, binding i; a scalar is written into a small host-visible buffer and bound at an offset
// aligned to minStorageBufferOffsetAlignment.
//
// Pipelines are created when their kernel is first launched, not at load: the driver compiles
// each one (NVIDIA's ~0.25 s, so the op library's ~75 kernels kept a process 18 s from its first
// op), and a program launches few of a library's kernels. For the same reason a kernel's image is
// decompressed, checked (checksum, entry point, LocalSize) and made a VkShaderModule at its first
// launch too: load only chooses the images and copies their compressed bytes, and a bad image
// fails the launches of its kernels. Compiled pipelines go through the module's PipelineCache,
// which keeps them on disk between processes.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "image_choice.h"
#include "pipeline_cache.h"
#include "spirv_inspect.h"
#include "vulkan_context.h"

namespace quiver::backend {
namespace vulkan {
namespace {

constexpr VkBufferUsageFlags kStorageUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                             VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                             VK_BUFFER_USAGE_TRANSFER_DST_BIT;

// Specialized pipelines kept per kernel: a model's shapes are a handful; a caller sweeping a
// specialized parameter over many values recompiles instead of growing without bound.
constexpr size_t kMaxSpecializations = 16;

std::string dims(const std::array<uint32_t, 3>& d) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

class VulkanBuffer final : public Buffer {
 public:
  VulkanBuffer(std::shared_ptr<Context> context, size_t size) : context_(std::move(context)) {
    bytes = size;
    allocation = context_->allocate(size, kStorageUsage,
                                    context_->unified_memory ? Context::Memory::Unified
                                                             : Context::Memory::Device,
                                    "a buffer of " + std::to_string(size) + " bytes");
  }
  ~VulkanBuffer() override {
    // A submitted launch may still read or write this buffer.
    if (context_->has_pending()) context_->drain_noexcept();
    context_->release(allocation);
  }
  uint64_t native_handle() const override {
    // VkBuffer is a non-dispatchable handle: a pointer or a 64-bit integer depending on the ABI.
    return (uint64_t)(allocation.buffer);
  }
  const std::shared_ptr<Context>& context() const { return context_; }
  Allocation allocation;

 private:
  std::shared_ptr<Context> context_;
};

constexpr size_t kNoImage = ~size_t{0};   // a kernel no SPIR-V image serves on this device

// One kernel's pipeline and layouts, made at its first launch; destroyed with the module (after
// it has drained).
struct KernelPipeline {
  Context* context = nullptr;
  std::string name;
  std::string symbol;
  uint32_t param_count = 0;
  size_t image = kNoImage;              // index into the module's images_
  std::array<uint32_t, 3> block{};      // the manifest's, which the entry point's LocalSize must match
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;   // when no parameter is specialized
  std::string unusable;   // why this kernel cannot launch here (not in the image, over a limit)
  // QV_SPECIALIZE parameters (docs/abi.md): per parameter whether it is a 32-bit integer scalar;
  // the specialized ones (SpecIds of the image that name such a parameter), known once the image
  // is read; and a pipeline per set of their values, the least recently used replaced beyond
  // kMaxSpecializations.
  std::vector<bool> scalar32;
  std::optional<std::vector<uint32_t>> specialized;
  struct Specialization {
    std::vector<uint32_t> values;
    VkPipeline pipeline = VK_NULL_HANDLE;
    uint64_t used = 0;
  };
  std::vector<Specialization> specializations;

  KernelPipeline() = default;
  KernelPipeline(const KernelPipeline&) = delete;
  KernelPipeline& operator=(const KernelPipeline&) = delete;
  ~KernelPipeline() {
    const Api& vk = context->vk;
    if (pipeline) vk.vkDestroyPipeline(context->device, pipeline, nullptr);
    for (const Specialization& sp : specializations) vk.vkDestroyPipeline(context->device, sp.pipeline, nullptr);
    if (layout) vk.vkDestroyPipelineLayout(context->device, layout, nullptr);
    if (set_layout) vk.vkDestroyDescriptorSetLayout(context->device, set_layout, nullptr);
  }
};

struct ShaderModule {
  Context* context = nullptr;
  VkShaderModule handle = VK_NULL_HANDLE;
  ~ShaderModule() {
    if (handle) context->vk.vkDestroyShaderModule(context->device, handle, nullptr);
  }
};

// A SPIR-V image some kernels of the module come from (the SPIR-V target writes one per kernel;
// older files one for all). At load only its compressed frame is copied: the caller's bytes may
// not outlive the load. Checked, decompressed and handed to the driver (a VkShaderModule) at the
// first launch of one of its kernels, once: drivers process a module's every kernel for each
// pipeline made from it, and a program launches few of a library's kernels.
struct LazyImage {
  size_t index = 0;        // in the manifest
  format::Image entry;     // its manifest entry (checksum, raw_size, kernels)
  std::vector<std::byte> frame;
  ShaderModule shader;
  SpirvInfo info;          // its entry points, once decompressed
};

// Why a kernel of this shape cannot run on this device ("" when it can).
std::string check_limits(const VkPhysicalDeviceLimits& limits, const format::Kernel& k) {
  for (int d = 0; d < 3; ++d)
    if (k.block[d] > limits.maxComputeWorkGroupSize[d])
      return "block " + dims(k.block) + " exceeds the device's maxComputeWorkGroupSize " +
             dims({limits.maxComputeWorkGroupSize[0], limits.maxComputeWorkGroupSize[1],
                   limits.maxComputeWorkGroupSize[2]});
  const uint64_t invocations = uint64_t{k.block[0]} * k.block[1] * k.block[2];
  if (invocations > limits.maxComputeWorkGroupInvocations)
    return "block " + dims(k.block) + " has " + std::to_string(invocations) +
           " threads, more than the device's maxComputeWorkGroupInvocations " +
           std::to_string(limits.maxComputeWorkGroupInvocations);
  if (k.shared_bytes > limits.maxComputeSharedMemorySize)
    return std::to_string(k.shared_bytes) + " bytes of shared memory exceed the device's maxComputeSharedMemorySize " +
           std::to_string(limits.maxComputeSharedMemorySize);
  if (k.params.size() > limits.maxPerStageDescriptorStorageBuffers)
    return std::to_string(k.params.size()) + " parameters exceed the device's maxPerStageDescriptorStorageBuffers " +
           std::to_string(limits.maxPerStageDescriptorStorageBuffers);
  return "";
}

class VulkanModule final : public Module {
 public:
  // `choice` says which image serves each kernel (image_choice.h).
  VulkanModule(std::shared_ptr<Context> context, const format::FatBinary& fatbin, const SpirvChoice& choice)
      : context_(std::move(context)), label_(fatbin.label()) {
    Context& ctx = *context_;
    const format::Manifest& manifest = fatbin.manifest();
    description_ = "spirv " + choice.taken + (choice.skipped.empty() ? "" : " (" + choice.skipped + ")");
    info_.target = format::Target::SPIRV;
    std::vector<int> lazy_of_image(manifest.images.size(), -1);
    for (size_t k = 0; k < manifest.kernels.size(); ++k) {
      const format::Kernel& kernel = manifest.kernels[k];
      auto p = std::make_unique<KernelPipeline>();
      p->context = &ctx;
      p->name = kernel.name;
      p->symbol = kernel.symbol;
      p->param_count = static_cast<uint32_t>(kernel.params.size());
      for (const format::Param& param : kernel.params)
        p->scalar32.push_back(!param.is_buffer && (param.type == format::ScalarType::I32 || param.type == format::ScalarType::U32));
      const int image = choice.image[k];
      if (image < 0) {
        p->unusable = "it is not in a SPIR-V image of " + label_ + " this device can load: " + choice.why[k];
      } else {
        int& lazy = lazy_of_image[static_cast<size_t>(image)];
        if (lazy < 0) {
          lazy = static_cast<int>(images_.size());
          auto li = std::make_unique<LazyImage>();
          li->index = static_cast<size_t>(image);
          li->entry = manifest.images[li->index];
          std::span<const std::byte> frame = fatbin.image_frame(li->index);
          li->frame.assign(frame.begin(), frame.end());
          li->shader.context = &ctx;
          if (!std::count(archs_.begin(), archs_.end(), li->entry.arch)) archs_.push_back(li->entry.arch);
          images_.push_back(std::move(li));
        }
        p->image = static_cast<size_t>(lazy);
        p->unusable = check_limits(ctx.properties.limits, kernel);
        p->block = kernel.block;
        info_.kernels.push_back(kernel.symbol);
      }
      pipelines_.push_back(std::move(p));
    }
    for (const std::string& arch : archs_) info_.arch += (info_.arch.empty() ? "" : ", ") + arch;
    // One cache file for the module, named by the images it takes kernels from (their checksums,
    // in manifest order of the kernels), so another choice of images gets another file.
    std::vector<std::byte> key;
    for (const auto& p : pipelines_) {
      if (p->image == kNoImage) continue;
      const format::Image& e = images_[p->image]->entry;
      const size_t at = key.size();
      key.resize(at + sizeof e.checksum + p->symbol.size() + 1);
      std::memcpy(key.data() + at, &e.checksum, sizeof e.checksum);
      std::memcpy(key.data() + at + sizeof e.checksum, p->symbol.c_str(), p->symbol.size() + 1);
    }
    cache_ = std::make_unique<PipelineCache>(ctx, hash_bytes(key));
  }

  ~VulkanModule() override {
    // Submitted launches may still use these pipelines.
    if (context_->has_pending()) context_->drain_noexcept();
    if (unsaved_) cache_->save();
  }

  void launch(size_t kernel, Grid grid, std::span<const LaunchArg> args) override {
    Context& ctx = *context_;
    const Dispatch d = prepare(kernel, grid, args);
    LaunchSlot& slot = ctx.acquire_slot(d.p->param_count, ctx.scalar_stride() * std::max<size_t>(args.size(), 1));
    bool submitted = false;
    struct Abandon {
      Context& ctx;
      LaunchSlot& slot;
      bool& submitted;
      ~Abandon() {
        if (!submitted) ctx.abandon(slot);
      }
    } abandon{ctx, slot, submitted};
    slot.kernel = d.p->name;
    // The args buffer is untouched by the GPU until this slot's fence signals: safe to write.
    const VkDescriptorSet set = bind_arguments(d, slot.pool, slot.args, 0, args);

    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    ctx.check(ctx.vk.vkBeginCommandBuffer(slot.commands, &begin), d.who + ": vkBeginCommandBuffer");
    record_full_barrier(ctx.vk, slot.commands);
    ctx.record_timer_start(slot);
    record_dispatch(d, slot.commands, set, grid);
    submitted = true;   // finish_launch() records the closing barrier; it recycles the slot when it fails
    ctx.finish_launch(slot);
    // Written now, not at the module's destruction: the op library's modules live until the
    // process exits and are never destroyed. After the submission, so the device runs the kernel
    // meanwhile; once per newly compiled pipeline, a small cost beside that compilation.
    save_new_pipelines();
  }

  // A checked launch of one kernel, its pipeline made: what launch() and a recorded graph
  // (VulkanDevice::build_graph) bind and dispatch.
  struct Dispatch {
    KernelPipeline* p = nullptr;
    VkPipeline pipeline = VK_NULL_HANDLE;
    std::vector<const VulkanBuffer*> buffers;   // per argument; null for scalars
    std::string who;
  };

  Dispatch prepare(size_t kernel, Grid grid, std::span<const LaunchArg> args) {
    if (kernel >= pipelines_.size())
      throw Error(ErrorCode::InvalidArgument, "vulkan: kernel index " + std::to_string(kernel) +
                                                  " out of range (" + label_ + " has " +
                                                  std::to_string(pipelines_.size()) + " kernels)");
    Context& ctx = *context_;
    Dispatch d;
    d.p = pipelines_[kernel].get();
    KernelPipeline& p = *d.p;
    d.who = "vulkan: kernel '" + p.name + "'";
    const std::string& who = d.who;
    if (!p.unusable.empty())
      throw Error(p.image == kNoImage ? ErrorCode::NotFound : ErrorCode::DeviceError,
                  who + " cannot run on " + ctx.name + ": " + p.unusable);
    if (args.size() != p.param_count)
      throw Error(ErrorCode::InvalidArgument, who + " takes " + std::to_string(p.param_count) +
                                                  " arguments, got " + std::to_string(args.size()));
    const VkPhysicalDeviceLimits& limits = ctx.properties.limits;
    const uint32_t g[3] = {grid.x, grid.y, grid.z};
    for (int i = 0; i < 3; ++i)
      if (g[i] == 0 || g[i] > limits.maxComputeWorkGroupCount[i])
        throw Error(ErrorCode::InvalidArgument,
                    who + ": grid " + dims({grid.x, grid.y, grid.z}) + " is outside this device's range 1.." +
                        dims({limits.maxComputeWorkGroupCount[0], limits.maxComputeWorkGroupCount[1],
                              limits.maxComputeWorkGroupCount[2]}));

    // Every argument is checked before a slot is taken.
    d.buffers.assign(args.size(), nullptr);
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string arg = who + " argument " + std::to_string(i);
      if (args[i].buffer) {
        const auto* b = dynamic_cast<const VulkanBuffer*>(args[i].buffer);
        if (!b || b->context() != context_)
          throw Error(ErrorCode::InvalidArgument, arg + ": the buffer was allocated on another device or backend");
        if (b->allocation.size > limits.maxStorageBufferRange)
          throw Error(ErrorCode::InvalidArgument,
                      arg + ": a buffer of " + std::to_string(b->bytes) + " bytes exceeds this device's maxStorageBufferRange (" +
                          std::to_string(limits.maxStorageBufferRange) + " bytes)");
        d.buffers[i] = b;
      } else if (!args[i].scalar || args[i].scalar_size == 0 || args[i].scalar_size > 8) {
        throw Error(ErrorCode::InvalidArgument, arg + " has neither a buffer nor a scalar of 1..8 bytes");
      }
    }
    // The API layer holds the Device's lock around every call into it (backend.h), so one thread
    // at a time gets here: a pipeline is created once, however many threads launch its kernel.
    d.pipeline = pipeline_for(p, args);
    return d;
  }

  // A descriptor set from `pool` binding `args`: buffers whole, scalars written into `scalars`
  // from byte `base` on (one scalar_stride() per argument). Null when the kernel takes none.
  VkDescriptorSet bind_arguments(const Dispatch& d, VkDescriptorPool pool, const Allocation& scalars,
                                 VkDeviceSize base, std::span<const LaunchArg> args) {
    Context& ctx = *context_;
    if (args.empty()) return VK_NULL_HANDLE;
    const VkDeviceSize stride = ctx.scalar_stride();
    VkDescriptorSet set = VK_NULL_HANDLE;
    VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    alloc.descriptorPool = pool;
    alloc.descriptorSetCount = 1;
    alloc.pSetLayouts = &d.p->set_layout;
    ctx.check(ctx.vk.vkAllocateDescriptorSets(ctx.device, &alloc, &set), d.who + ": vkAllocateDescriptorSets");
    std::vector<VkDescriptorBufferInfo> infos(args.size());
    std::vector<VkWriteDescriptorSet> writes(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (d.buffers[i]) {
        infos[i] = {d.buffers[i]->allocation.buffer, 0, VK_WHOLE_SIZE};
      } else {
        const VkDeviceSize at = base + i * stride;
        std::memcpy(static_cast<std::byte*>(scalars.mapped) + at, args[i].scalar, args[i].scalar_size);
        infos[i] = {scalars.buffer, at, (args[i].scalar_size + 3u) & ~3u};
      }
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = set;
      writes[i].dstBinding = static_cast<uint32_t>(i);
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    ctx.vk.vkUpdateDescriptorSets(ctx.device, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
    return set;
  }

  void record_dispatch(const Dispatch& d, VkCommandBuffer commands, VkDescriptorSet set, Grid grid) {
    Context& ctx = *context_;
    ctx.vk.vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline);
    if (set)
      ctx.vk.vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE, d.p->layout, 0, 1, &set, 0, nullptr);
    ctx.vk.vkCmdDispatch(commands, grid.x, grid.y, grid.z);
  }

  void save_new_pipelines() {
    if (std::exchange(unsaved_, false)) cache_->save();
  }

  // A recorded graph's command buffer names these pipelines: a specialized one it uses is not
  // evicted (pipeline_for) until the graph releases it.
  void pin(VkPipeline pipeline) { ++pinned_[pipeline]; }
  void unpin(VkPipeline pipeline) {
    auto it = pinned_.find(pipeline);
    if (it != pinned_.end() && --it->second == 0) pinned_.erase(it);
  }

  std::string image_description() const override { return description_; }
  const ImageInfo& image_info() const override { return info_; }

 private:
  // The pipeline for this launch of `p`, created at its first launch (or, with specialized
  // parameters, at the first launch with these values). The API layer holds the Device's lock
  // around every call into it (backend.h), so one thread at a time gets here: a pipeline is
  // created once, however many threads launch its kernel.
  VkPipeline pipeline_for(KernelPipeline& p, std::span<const LaunchArg> args) {
    if (p.pipeline) return p.pipeline;   // made, no specialized parameter: nothing to look up
    if (!p.specialized) {
      // The image is read (and its entry point checked) at the kernel's first launch.
      shader_module(p);
      std::vector<uint32_t> ids;
      for (uint32_t id : images_[p.image]->info.spec_ids)
        if (id < p.param_count && p.scalar32[id]) ids.push_back(id);
      p.specialized = std::move(ids);
    }
    if (p.specialized->empty()) {
      unsaved_ = !create_pipeline(p, shader_module(p), {}, p.pipeline) || unsaved_;
      return p.pipeline;
    }
    std::vector<uint32_t> values;
    for (uint32_t i : *p.specialized) {
      if (!args[i].scalar || args[i].scalar_size != 4)
        throw Error(ErrorCode::InvalidArgument, "vulkan: kernel '" + p.name + "' argument " + std::to_string(i) +
                                                    ": a specialized parameter takes a 32-bit integer");
      uint32_t v = 0;
      std::memcpy(&v, args[i].scalar, 4);
      values.push_back(v);
    }
    ++use_clock_;
    for (KernelPipeline::Specialization& sp : p.specializations)
      if (sp.values == values) {
        sp.used = use_clock_;
        return sp.pipeline;
      }
    auto oldest = p.specializations.end();
    for (auto it = p.specializations.begin(); it != p.specializations.end(); ++it)
      if (!pinned_.contains(it->pipeline) && (oldest == p.specializations.end() || it->used < oldest->used)) oldest = it;
    if (p.specializations.size() >= kMaxSpecializations && oldest != p.specializations.end()) {
      // A submitted launch may still run it.
      if (context_->has_pending()) context_->drain("replacing a specialized pipeline of kernel '" + p.name + "'");
      context_->vk.vkDestroyPipeline(context_->device, oldest->pipeline, nullptr);
      p.specializations.erase(oldest);
    }
    KernelPipeline::Specialization made{std::move(values), VK_NULL_HANDLE, use_clock_};
    unsaved_ = !create_pipeline(p, shader_module(p), made.values, made.pipeline) || unsaved_;
    p.specializations.push_back(std::move(made));
    return p.specializations.back().pipeline;
  }

  // Creates a pipeline of `p` into `out` with `values` for its specialized parameters (and its
  // layouts, where an earlier attempt did not); returns whether the driver reports it came from
  // the pipeline cache. Throws naming the kernel.
  bool create_pipeline(KernelPipeline& p, VkShaderModule shader, const std::vector<uint32_t>& values, VkPipeline& out) {
    Context& ctx = *context_;
    const std::string who = "kernel '" + p.name + "' of " + label_;
    std::vector<VkDescriptorSetLayoutBinding> bindings(p.param_count);
    for (uint32_t i = 0; i < bindings.size(); ++i) {
      bindings[i].binding = i;
      bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      bindings[i].descriptorCount = 1;
      bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    if (!bindings.empty() && !p.set_layout) {
      VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
      set_info.bindingCount = static_cast<uint32_t>(bindings.size());
      set_info.pBindings = bindings.data();
      ctx.check(ctx.vk.vkCreateDescriptorSetLayout(ctx.device, &set_info, nullptr, &p.set_layout),
                "vkCreateDescriptorSetLayout for " + who);
    }
    if (!p.layout) {
      VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
      layout_info.setLayoutCount = p.set_layout ? 1 : 0;
      layout_info.pSetLayouts = p.set_layout ? &p.set_layout : nullptr;
      ctx.check(ctx.vk.vkCreatePipelineLayout(ctx.device, &layout_info, nullptr, &p.layout),
                "vkCreatePipelineLayout for " + who);
    }
    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = shader;
    info.stage.pName = p.symbol.c_str();
    info.layout = p.layout;
    // SpecId i is parameter i (docs/abi.md).
    std::vector<VkSpecializationMapEntry> entries;
    for (size_t j = 0; j < values.size(); ++j)
      entries.push_back({(*p.specialized)[j], static_cast<uint32_t>(4 * j), 4});
    VkSpecializationInfo specialization{static_cast<uint32_t>(entries.size()), entries.data(), 4 * values.size(),
                                        values.data()};
    if (!values.empty()) info.stage.pSpecializationInfo = &specialization;
    VkPipelineCreationFeedback whole{}, stage{};
    VkPipelineCreationFeedbackCreateInfo feedback{VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO};
    feedback.pPipelineCreationFeedback = &whole;
    feedback.pipelineStageCreationFeedbackCount = 1;
    feedback.pPipelineStageCreationFeedbacks = &stage;
    if (ctx.creation_feedback) info.pNext = &feedback;
    const bool statistics = ctx.pipeline_statistics && ctx.vk.vkGetPipelineExecutablePropertiesKHR &&
                            ctx.vk.vkGetPipelineExecutableStatisticsKHR;
    if (statistics) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    ctx.check(ctx.vk.vkCreateComputePipelines(ctx.device, cache_->handle(), 1, &info, nullptr, &out),
              "vkCreateComputePipelines for " + who);
    const bool hit = (whole.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT) &&
                     (whole.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT);
    count_pipeline_created(hit);
    if (statistics) print_statistics(ctx, out, p.symbol);
    return hit;
  }

  // The shader module of `p`'s image, made at the first launch of one of its kernels: the image
  // is checked (checksum, size, zstd frame), decompressed and inspected then, and `p`'s entry
  // point checked against the manifest. A bad image fails each launch of its kernels naming file,
  // image and kernel; it is never handed to the driver.
  VkShaderModule shader_module(KernelPipeline& p) {
    Context& ctx = *context_;
    LazyImage& image = *images_[p.image];
    const std::string where = "vulkan: " + label_ + ", image " + std::to_string(image.index) + " 'spirv " +
                              image.entry.arch + "'";
    if (!image.shader.handle) {
      std::vector<std::byte> data = format::FatBinary::check_image(image.frame, image.entry, image.index, label_);
      if (data.size() % 4 != 0)
        throw Error(ErrorCode::InvalidFatBinary, where + ": " + std::to_string(data.size()) +
                                                     " bytes is not a whole number of SPIR-V words");
      std::vector<uint32_t> words(data.size() / 4);
      if (!data.empty()) std::memcpy(words.data(), data.data(), data.size());
      try {
        image.info = inspect_spirv(words);
      } catch (const std::invalid_argument& e) {
        throw Error(ErrorCode::InvalidFatBinary, where + ": " + e.what());
      }
      VkShaderModuleCreateInfo shader_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
      shader_info.codeSize = data.size();
      shader_info.pCode = words.data();
      ctx.check(ctx.vk.vkCreateShaderModule(ctx.device, &shader_info, nullptr, &image.shader.handle),
                "vkCreateShaderModule for " + where);
      image.frame = {};   // not needed again
      image.frame.shrink_to_fit();
    }
    const SpirvEntryPoint* entry = image.info.find(p.symbol);
    if (!entry || entry->execution_model != kExecutionModelGLCompute)
      throw Error(ErrorCode::InvalidFatBinary, where + " lists kernel '" + p.name + "' but has no GLCompute entry point '" +
                                                   p.symbol + "'");
    if (entry->local_size && *entry->local_size != p.block)
      throw Error(ErrorCode::InvalidFatBinary, where + ": entry point '" + p.symbol + "' of kernel '" + p.name +
                                                   "' has LocalSize " + dims(*entry->local_size) +
                                                   " but the manifest says block " + dims(p.block));
    return image.shader.handle;
  }

  // One line per executable: "quiver vulkan stats <symbol>: <name>=<value>, ...".
  static void print_statistics(Context& ctx, VkPipeline pipeline, const std::string& symbol) {
    VkPipelineInfoKHR pipeline_info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
    pipeline_info.pipeline = pipeline;
    uint32_t count = 0;
    if (ctx.vk.vkGetPipelineExecutablePropertiesKHR(ctx.device, &pipeline_info, &count, nullptr) != VK_SUCCESS) return;
    std::vector<VkPipelineExecutablePropertiesKHR> executables(count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
    ctx.vk.vkGetPipelineExecutablePropertiesKHR(ctx.device, &pipeline_info, &count, executables.data());
    for (uint32_t e = 0; e < count; ++e) {
      VkPipelineExecutableInfoKHR exe{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
      exe.pipeline = pipeline;
      exe.executableIndex = e;
      uint32_t n = 0;
      if (ctx.vk.vkGetPipelineExecutableStatisticsKHR(ctx.device, &exe, &n, nullptr) != VK_SUCCESS) continue;
      std::vector<VkPipelineExecutableStatisticKHR> stats(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
      ctx.vk.vkGetPipelineExecutableStatisticsKHR(ctx.device, &exe, &n, stats.data());
      std::string line = "quiver vulkan stats " + symbol + " [" + executables[e].name + "]:";
      for (const auto& st : stats) {
        line += std::string(" ") + st.name + "=";
        switch (st.format) {
          case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: line += st.value.b32 ? "true" : "false"; break;
          case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: line += std::to_string(st.value.i64); break;
          case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: line += std::to_string(st.value.u64); break;
          case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: line += std::to_string(st.value.f64); break;
          default: line += "?";
        }
      }
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }

  std::shared_ptr<Context> context_;
  std::string label_;
  std::string description_;
  ImageInfo info_;
  std::vector<std::string> archs_;                    // of the images taken, first-seen order
  std::vector<std::unique_ptr<LazyImage>> images_;    // the images kernels are taken from
  std::unique_ptr<PipelineCache> cache_;
  bool unsaved_ = false;   // a pipeline was compiled (not found in the cache) and not yet written
  std::vector<std::unique_ptr<KernelPipeline>> pipelines_;   // manifest order
  uint64_t use_clock_ = 0;   // orders the specialized pipelines' uses
  std::map<VkPipeline, size_t> pinned_;   // pipelines recorded graphs use, and how many
};

// A recorded launch sequence (VulkanDevice::build_graph): its secondary command buffer and what
// that names — descriptor sets from its own pool, scalars in its own buffer, pinned pipelines.
struct VulkanGraph final : Graph {
  explicit VulkanGraph(std::shared_ptr<Context> context) : ctx(std::move(context)) {}
  ~VulkanGraph() override {
    // A replay may still run.
    if (ctx->has_pending()) ctx->drain_noexcept();
    ctx->free_secondary(commands);
    if (pool) ctx->vk.vkDestroyDescriptorPool(ctx->device, pool, nullptr);
    ctx->release(scalars);
    for (auto& [module, pipeline] : pins) module->unpin(pipeline);
  }
  void replay() override { ctx->submit_secondary(commands, name); }

  std::shared_ptr<Context> ctx;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  Allocation scalars;
  std::vector<std::pair<VulkanModule*, VkPipeline>> pins;
  std::string name;
};

class VulkanDevice final : public Device {
 public:
  explicit VulkanDevice(std::shared_ptr<Context> context) : context_(std::move(context)) {}

  std::string backend_name() const override { return "vulkan"; }
  std::string device_name() const override { return context_->name; }
  bool emulated_on_host() const override { return context_->properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU; }

  std::unique_ptr<Buffer> alloc(size_t bytes) override {
    return std::make_unique<VulkanBuffer>(context_, bytes);
  }

  void upload(Buffer& dst, const void* src, size_t bytes) override {
    VulkanBuffer& buffer = own(dst, "upload");
    check_size("upload", bytes, buffer.bytes);
    // Earlier launches may still read the old contents.
    context_->drain("upload");
    if (bytes == 0) return;
    if (buffer.allocation.mapped)
      std::memcpy(buffer.allocation.mapped, src, bytes);   // coherent: visible to later submissions
    else
      context_->copy_to_device(buffer.allocation, src, bytes);
  }

  void download(const Buffer& src, void* dst, size_t bytes) override {
    const VulkanBuffer& buffer = own(const_cast<Buffer&>(src), "download");
    check_size("download", bytes, buffer.bytes);
    context_->drain("download");
    if (bytes == 0) return;
    if (buffer.allocation.mapped)
      std::memcpy(dst, buffer.allocation.mapped, bytes);
    else
      context_->copy_from_device(buffer.allocation, dst, bytes);
  }

  // None: load reads no image (each is decompressed at its first kernel's launch).
  std::vector<size_t> images_to_load(const format::FatBinary&) const override { return {}; }

  std::unique_ptr<Module> load(const format::FatBinary& fatbin) override {
    const format::Manifest& manifest = fatbin.manifest();
    SpirvChoice choice = choose_spirv_images(manifest, context_->properties.apiVersion, context_->offers);
    if (!choice.any())
      throw Error(ErrorCode::NotFound,
                  "vulkan: " + fatbin.label() + " has no SPIR-V image for " + context_->name + ": " +
                      (manifest.kernels.empty() ? "it has no kernels" : "kernel '" + manifest.kernels[0].name + "': " + choice.why[0]) +
                      "; the file has: " + format::describe_images(manifest));
    return std::make_unique<VulkanModule>(context_, fatbin, choice);
  }

  void synchronize() override { context_->drain("synchronize"); }
  std::unique_ptr<Timer> start_timer() override {
    struct TimestampTimer final : Timer {
      std::shared_ptr<Context> ctx;
      TimerSlot* slot = nullptr;
      ~TimestampTimer() override {
        if (slot) ctx->release_timer(*slot);
      }
      void end() override { ctx->stop_timer(*slot); }
      double ms() override {
        TimerSlot* s = std::exchange(slot, nullptr);
        return ctx->timer_ms(*s);
      }
    };
    auto t = std::make_unique<TimestampTimer>();
    t->ctx = context_;
    t->slot = &context_->start_timer();
    return t;
  }

  // The launches recorded once into a secondary command buffer, with a barrier before each
  // dispatch as launch() records, their descriptor sets and scalars in storage of the graph's
  // own; a replay is one submission executing it.
  std::unique_ptr<Graph> build_graph(std::span<const RecordedLaunch> launches) override {
    if (launches.empty()) return Device::build_graph(launches);
    Context& ctx = *context_;
    auto g = std::make_unique<VulkanGraph>(context_);
    uint32_t descriptors = 0;
    size_t scalar_slots = 0;
    std::vector<VulkanModule::Dispatch> dispatches;
    for (const RecordedLaunch& l : launches) {
      auto* module = dynamic_cast<VulkanModule*>(l.module);
      if (!module)
        throw Error(ErrorCode::InvalidArgument, "vulkan: a recorded launch's module was loaded on another backend");
      dispatches.push_back(module->prepare(l.kernel, l.grid, l.args));
      module->pin(dispatches.back().pipeline);
      g->pins.emplace_back(module, dispatches.back().pipeline);
      descriptors += static_cast<uint32_t>(l.args.size());
      scalar_slots += l.args.size();
    }
    const VkDeviceSize stride = ctx.scalar_stride();
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max(descriptors, 1u)};
    VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    info.maxSets = static_cast<uint32_t>(launches.size());
    info.poolSizeCount = 1;
    info.pPoolSizes = &size;
    ctx.check(ctx.vk.vkCreateDescriptorPool(ctx.device, &info, nullptr, &g->pool), "vkCreateDescriptorPool (a graph)");
    g->scalars = ctx.allocate(std::max<VkDeviceSize>(stride * scalar_slots, 256), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                              Context::Memory::Upload, "a graph's scalar arguments");
    g->commands = ctx.begin_secondary();
    // QUIVER_VULKAN_GRAPH_FULL_BARRIERS (docs/runtime.md): a graph's launches separated as single
    // launches are, for comparing the two.
    const bool full_barriers = std::getenv("QUIVER_VULKAN_GRAPH_FULL_BARRIERS") != nullptr;
    VkDeviceSize base = 0;
    for (size_t i = 0; i < launches.size(); ++i) {
      auto* module = static_cast<VulkanModule*>(launches[i].module);
      const VkDescriptorSet set = module->bind_arguments(dispatches[i], g->pool, g->scalars, base, launches[i].args);
      base += stride * launches[i].args.size();
      // Between the graph's own launches, kernel to kernel; submit_secondary's full barriers order
      // the graph against copies and host access before and after it.
      if (i > 0 && !full_barriers) record_kernel_barrier(ctx.vk, g->commands);
      else if (i > 0) record_full_barrier(ctx.vk, g->commands);
      module->record_dispatch(dispatches[i], g->commands, set, launches[i].grid);
    }
    ctx.check(ctx.vk.vkEndCommandBuffer(g->commands), "vkEndCommandBuffer (a graph)");
    // Pipelines the graph's first launches compiled go to the disk cache, once per module.
    for (const auto& [module, pipeline] : g->pins) module->save_new_pipelines();
    g->name = "a graph of " + std::to_string(launches.size()) + " launches (" + dispatches.front().p->name + " ... " +
              dispatches.back().p->name + ")";
    return g;
  }

  void* native_stream() const override {
    context_->flush_held();   // work the caller submits to the queue comes after ours
    return context_->queue;
  }
  void* native_device() const override { return context_->device; }

  std::unique_ptr<Buffer> import_memory(uint64_t, size_t) override {
    // A Vulkan buffer needs a VkDeviceMemory of this VkDevice; a raw address cannot become one
    // (external-memory import is a different mechanism, not offered in v1).
    throw Error(ErrorCode::InvalidArgument,
                "vulkan: foreign memory cannot be wrapped as a buffer of " + context_->name +
                    " (DLPack import is supported by the cuda and cpu backends)");
  }

 private:
  VulkanBuffer& own(Buffer& b, const char* what) const {
    auto* buffer = dynamic_cast<VulkanBuffer*>(&b);
    if (!buffer || buffer->context() != context_)
      throw Error(ErrorCode::InvalidArgument,
                  std::string("vulkan: ") + what + ": the buffer was allocated on another device or backend");
    return *buffer;
  }
  static void check_size(const char* what, size_t bytes, size_t have) {
    if (bytes > have)
      throw Error(ErrorCode::InvalidArgument, std::string("vulkan: ") + what + " of " + std::to_string(bytes) +
                                                  " bytes into a buffer of " + std::to_string(have) + " bytes");
  }
  std::shared_ptr<Context> context_;
};

size_t count_devices(std::string& why_not) { return Context::count(why_not); }

std::unique_ptr<Device> open_device(size_t index, size_t& device_count, std::string& why_not) {
  std::shared_ptr<Context> context = Context::open(index, device_count, why_not);
  if (!context) return nullptr;
  return std::make_unique<VulkanDevice>(std::move(context));
}

}  // namespace
}  // namespace vulkan

extern const Factory vulkan_factory;
const Factory vulkan_factory{"vulkan", &vulkan::count_devices, &vulkan::open_device};

}  // namespace quiver::backend
