// Interop with other GPU libraries (docs/runtime.md, "Interop"): native handles and DLPack
// export / import for the cuda and cpu backends. The DLPack structs come from Debian's
// libdlpack-dev (DLPack 0.6 ABI, which is what every later version keeps for DLManagedTensor).
#include <dlpack/dlpack.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "api/impl.h"

namespace quiver::detail {
namespace {

// kDLBool, added to DLPack in 0.8; Debian's 0.6 header does not name it yet.
constexpr uint8_t kDLBoolCode = 6;

struct DType {
  uint8_t code;
  uint8_t bits;
};

DType dtype_of(Elem e) {
  switch (e) {
    case Elem::Bool: return {kDLBoolCode, 8};
    case Elem::I8: return {kDLInt, 8};
    case Elem::U8: return {kDLUInt, 8};
    case Elem::I16: return {kDLInt, 16};
    case Elem::U16: return {kDLUInt, 16};
    case Elem::I32: return {kDLInt, 32};
    case Elem::U32: return {kDLUInt, 32};
    case Elem::I64: return {kDLInt, 64};
    case Elem::U64: return {kDLUInt, 64};
    case Elem::F16: return {kDLFloat, 16};
    case Elem::BF16: return {kDLBfloat, 16};
    case Elem::F32: return {kDLFloat, 32};
    case Elem::F64: return {kDLFloat, 64};
  }
  throw Error(ErrorCode::InvalidArgument, "to_dlpack: invalid element type");
}

bool elem_of_dtype(const DLDataType& t, Elem& out) {
  if (t.lanes != 1) return false;
  static constexpr Elem kAll[] = {Elem::Bool, Elem::I8,  Elem::U8,   Elem::I16, Elem::U16,
                                  Elem::I32,  Elem::U32, Elem::I64,  Elem::U64, Elem::F16,
                                  Elem::BF16, Elem::F32, Elem::F64};
  for (Elem e : kAll) {
    const DType d = dtype_of(e);
    if (d.code == t.code && d.bits == t.bits) {
      out = e;
      return true;
    }
  }
  return false;
}

size_t elem_size(Elem e) { return dtype_of(e).bits / 8; }

std::string dtype_name(const DLDataType& t) {
  std::string code;
  switch (t.code) {
    case kDLInt: code = "kDLInt"; break;
    case kDLUInt: code = "kDLUInt"; break;
    case kDLFloat: code = "kDLFloat"; break;
    case kDLOpaqueHandle: code = "kDLOpaqueHandle"; break;
    case kDLBfloat: code = "kDLBfloat"; break;
    case kDLComplex: code = "kDLComplex"; break;
    case kDLBoolCode: code = "kDLBool"; break;
    default: code = "code " + std::to_string(t.code); break;
  }
  std::string s = code + " " + std::to_string(t.bits) + " bits";
  if (t.lanes != 1) s += " x " + std::to_string(t.lanes) + " lanes";
  return s;
}

std::string device_type_name(int type) {
  switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    case kDLVPI: return "kDLVPI";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLExtDev: return "kDLExtDev";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    default: return "device type " + std::to_string(type);
  }
}

// The largest power of two (up to 256) that divides `address`: what the launch checker may
// assume about an imported buffer.
size_t alignment_of(uint64_t address) {
  size_t a = 1;
  while (a < 256 && address % (a * 2) == 0) a *= 2;
  return a;
}

// What an exported tensor points back to: the buffer stays alive until the deleter runs.
struct ExportedTensor {
  DLManagedTensor tensor{};
  std::shared_ptr<BufferImpl> buffer;
  int64_t shape[1] = {0};
};

void delete_exported(DLManagedTensor* self) {
  if (self != nullptr) delete static_cast<ExportedTensor*>(self->manager_ctx);
}

// Where this device's memory sits in DLPack's terms, or throws for backends without a DLPack form.
DLDevice dlpack_device(const DeviceImpl& d, const char* what) {
  if (d.backend_name() == "cpu") return DLDevice{kDLCPU, 0};   // one host address space: device 0
  if (d.backend_name() == "cuda") return DLDevice{kDLCUDA, static_cast<int>(d.index())};
  throw Error(ErrorCode::InvalidArgument,
              std::string(what) + ": DLPack interop is supported by the cuda and cpu backends, not by " +
                  d.selector() + " (use native_handle() for its " + d.backend_name() + " handle)");
}

}  // namespace

uint64_t buffer_native_handle(const BufferImpl* b) {
  if (b == nullptr) throw Error(ErrorCode::InvalidArgument, "native_handle of an unallocated Buffer (use Device::alloc)");
  return b->backend().native_handle();
}

DLManagedTensor* buffer_to_dlpack(const std::shared_ptr<BufferImpl>& b, Elem elem, size_t count) {
  if (!b) throw Error(ErrorCode::InvalidArgument, "to_dlpack of an unallocated Buffer (use Device::alloc)");
  const DeviceImpl& d = *b->device();
  const DLDevice device = dlpack_device(d, "Buffer::to_dlpack");
  if (count > static_cast<size_t>(INT64_MAX)) {
    throw Error(ErrorCode::InvalidArgument, "to_dlpack: " + std::to_string(count) + " elements do not fit DLPack's int64 shape");
  }
  // Consumers may read on another stream or thread: every launch queued so far must be done.
  {
    std::lock_guard lock(d.mutex());
    d.backend().synchronize();
  }
  auto out = std::make_unique<ExportedTensor>();
  out->buffer = b;
  out->shape[0] = static_cast<int64_t>(count);
  DLTensor& t = out->tensor.dl_tensor;
  t.data = count == 0 ? nullptr : reinterpret_cast<void*>(static_cast<uintptr_t>(b->backend().native_handle()));
  t.device = device;
  t.ndim = 1;
  const DType dt = dtype_of(elem);
  t.dtype = DLDataType{dt.code, dt.bits, 1};
  t.shape = out->shape;
  t.strides = nullptr;   // compact row-major
  t.byte_offset = 0;
  out->tensor.manager_ctx = out.get();
  out->tensor.deleter = &delete_exported;
  return &out.release()->tensor;
}

std::shared_ptr<BufferImpl> buffer_from_dlpack(const std::shared_ptr<DeviceImpl>& device,
                                               DLManagedTensor* tensor, const Elem* expected,
                                               Elem& elem, size_t& count) {
  if (!device) throw Error(ErrorCode::InvalidArgument, "quiver::Device is empty (moved-from)");
  const DeviceImpl& d = *device;
  const std::string who = "from_dlpack on " + d.selector();
  auto fail = [&](const std::string& why) -> void { throw Error(ErrorCode::InvalidArgument, who + ": " + why); };
  if (tensor == nullptr) fail("the DLManagedTensor is NULL");
  dlpack_device(d, "Device::from_dlpack");
  const DLTensor& t = tensor->dl_tensor;

  // Device: memory this device can address directly.
  const int type = static_cast<int>(t.device.device_type);
  const std::string where = device_type_name(type) + ":" + std::to_string(t.device.device_id);
  if (d.backend_name() == "cpu") {
    if (type == kDLCPU && t.device.device_id != 0)
      fail("the tensor is on " + where + ", but DLPack numbers host memory kDLCPU:0");
    if (type != kDLCPU && type != kDLCUDAHost)
      fail("the tensor is on " + where + "; the cpu backend takes kDLCPU or kDLCUDAHost (pinned host) memory");
  } else {
    if (type != kDLCUDA && type != kDLCUDAManaged)
      fail("the tensor is on " + where + "; the cuda backend takes kDLCUDA or kDLCUDAManaged memory");
    if (t.device.device_id != static_cast<int>(d.index()))
      fail("the tensor is on " + where + ", but this Device is cuda device " + std::to_string(d.index()) +
           " (open \"cuda:" + std::to_string(t.device.device_id) + "\" for it)");
  }

  // Element type.
  if (!elem_of_dtype(t.dtype, elem)) fail("dtype " + dtype_name(t.dtype) + " has no quiver element type");
  if (expected != nullptr && elem != *expected) {
    fail("dtype " + dtype_name(t.dtype) + " is " + std::string(elem_name(elem)) + ", but the Buffer is of " +
         std::string(elem_name(*expected)));
  }

  // Shape and layout: compact row-major (strides NULL, or equal to the compact ones wherever
  // the extent is above 1), flattened into one dimension.
  if (t.ndim < 0) fail("ndim is " + std::to_string(t.ndim));
  if (t.ndim > 0 && t.shape == nullptr) fail("shape is NULL for ndim " + std::to_string(t.ndim));
  const size_t esize = elem_size(elem);
  uint64_t elements = 1;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0) fail("shape[" + std::to_string(i) + "] is " + std::to_string(t.shape[i]));
    const uint64_t extent = static_cast<uint64_t>(t.shape[i]);
    if (extent != 0 && elements > (SIZE_MAX / esize) / extent) fail("the tensor's size overflows size_t");
    elements *= extent;
  }
  if (t.strides != nullptr && elements > 0) {
    int64_t compact = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      if (t.shape[i] != 1 && t.strides[i] != compact) {
        fail("the tensor is not contiguous: dimension " + std::to_string(i) + " has stride " +
             std::to_string(t.strides[i]) + " elements where a compact row-major layout has " +
             std::to_string(compact) + " (make it contiguous first)");
      }
      compact *= t.shape[i];
    }
  }
  count = static_cast<size_t>(elements);
  const size_t bytes = count * esize;

  // Address.
  const uint64_t base = reinterpret_cast<uintptr_t>(t.data);
  if (base == 0 && count > 0) fail("data is NULL for a tensor of " + std::to_string(count) + " elements");
  const uint64_t address = base + t.byte_offset;
  if (address < base) fail("data + byte_offset overflows");
  if (address % esize != 0) {
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(address));
    fail(std::string("the first element's address ") + text + " is not aligned to its size (" +
         std::to_string(esize) + " bytes)");
  }

  // Wrap. The owner is armed only once nothing else can fail: until then the caller owns the tensor.
  auto owner = std::make_unique<backend::ExternalOwner>([tensor] {
    if (tensor->deleter != nullptr) tensor->deleter(tensor);
  });
  backend::ExternalOwner* armable = owner.get();
  std::unique_ptr<backend::Buffer> buf;
  {
    std::lock_guard lock(d.mutex());
    buf = d.backend().import_memory(address, bytes);
  }
  buf->bytes = bytes;
  buf->external = std::move(owner);
  std::shared_ptr<BufferImpl> impl;
  try {
    impl = std::make_shared<BufferImpl>(device, std::move(buf), address == 0 ? 256 : alignment_of(address));
  } catch (...) {
    std::lock_guard lock(d.mutex());   // backend objects are only touched under the device lock
    buf.reset();
    throw;
  }
  armable->arm();
  return impl;
}

}  // namespace quiver::detail
