// A stand-in for ROCm's libhsa-runtime64.so.1 (loaded by the HIP backend through
// QUIVER_HSA_LIBRARY), so that the backend's device, memory, loading and dispatch code runs on a
// machine without an AMD GPU. It has one GPU agent (QV_FAKE_HSA_ISA, default gfx90a); memory is
// host memory; a code object is "loaded" by reading its ELF: the kernel descriptors
// (<name>.kd, 64 bytes: group segment size at byte 0, private at 4, kernarg size at 8) give what
// hsa_executable_symbol_get_info reports. A thread plays the command processor: it waits for
// packets, checks each is a valid kernel dispatch, records it with its kernarg bytes, and
// completes it by decrementing the completion signal. No kernel code runs.
// qv_fake_hsa_dispatches() hands the recorded packets to the test.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hsa_api.h"

using namespace quiver::backend::hsa;

namespace {

struct FakeSignal {
  std::atomic<int64_t> value;
};

struct FakeQueue {
  hsa_queue_t queue{};
  std::atomic<uint64_t> write_index{0};
  std::atomic<uint64_t> read_index{0};
  FakeSignal doorbell{};
  std::thread processor;
  std::atomic<bool> stop{false};
};

struct Symbol {
  std::string name;
  const unsigned char* descriptor = nullptr;   // 64 bytes inside the executable's copy
};

struct Executable {
  std::vector<unsigned char> image;
  std::vector<Symbol> symbols;
};

struct Reader {
  const unsigned char* data;
  size_t size;
};

std::mutex g_mutex;
std::vector<std::vector<unsigned char>> g_dispatches;   // 64-byte packet + kernarg bytes each
int g_init = 0;

constexpr uint64_t kCpuAgent = 1, kGpuAgent = 2;
constexpr uint64_t kDeviceRegion = 10, kKernargRegion = 11;
constexpr size_t kKernargCopy = 256;

// The dynamic symbols of an ELF64 code object that end in ".kd", with their bytes.
bool read_descriptors(Executable& e) {
  const unsigned char* b = e.image.data();
  size_t size = e.image.size();
  if (size < 64 || std::memcmp(b, "\x7f" "ELF", 4) != 0 || b[4] != 2) return false;
  uint64_t shoff;
  uint16_t shentsize, shnum;
  std::memcpy(&shoff, b + 40, 8);
  std::memcpy(&shentsize, b + 58, 2);
  std::memcpy(&shnum, b + 60, 2);
  if (shentsize != 64 || shoff + uint64_t{shnum} * 64 > size) return false;
  struct Section { uint32_t type, link; uint64_t addr, offset, size; };
  std::vector<Section> sections(shnum);
  for (uint16_t i = 0; i < shnum; ++i) {
    const unsigned char* h = b + shoff + i * 64u;
    std::memcpy(&sections[i].type, h + 4, 4);
    std::memcpy(&sections[i].addr, h + 16, 8);
    std::memcpy(&sections[i].offset, h + 24, 8);
    std::memcpy(&sections[i].size, h + 32, 8);
    std::memcpy(&sections[i].link, h + 40, 4);
  }
  for (const Section& s : sections) {
    if (s.type != 11 /* SHT_DYNSYM */ || s.link >= shnum) continue;
    const Section& strings = sections[s.link];
    for (uint64_t at = s.offset; at + 24 <= s.offset + s.size && at + 24 <= size; at += 24) {
      uint32_t name;
      uint64_t value, bytes;
      std::memcpy(&name, b + at, 4);
      std::memcpy(&value, b + at + 8, 8);
      std::memcpy(&bytes, b + at + 16, 8);
      if (strings.offset + name >= size) continue;
      std::string n(reinterpret_cast<const char*>(b + strings.offset + name));
      if (n.size() < 4 || n.compare(n.size() - 3, 3, ".kd") != 0 || bytes != 64) continue;
      for (const Section& holder : sections)   // the descriptor's file offset, from its address
        if (holder.type == 1 /* PROGBITS */ && value >= holder.addr && value + 64 <= holder.addr + holder.size &&
            holder.offset + (value - holder.addr) + 64 <= size)
          e.symbols.push_back({n, b + holder.offset + (value - holder.addr)});
    }
  }
  return !e.symbols.empty();
}

void process(FakeQueue* q) {
  while (!q->stop.load()) {
    uint64_t read = q->read_index.load();
    auto* slot = static_cast<hsa_kernel_dispatch_packet_t*>(q->queue.base_address) + (read & (q->queue.size - 1));
    uint32_t word = __atomic_load_n(reinterpret_cast<uint32_t*>(slot), __ATOMIC_ACQUIRE);
    if ((word & 0xff) != HSA_PACKET_TYPE_KERNEL_DISPATCH) {
      std::this_thread::yield();
      continue;
    }
    std::vector<unsigned char> record(64 + kKernargCopy);
    std::memcpy(record.data(), slot, 64);
    if (slot->kernarg_address) std::memcpy(record.data() + 64, slot->kernarg_address, kKernargCopy);
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      g_dispatches.push_back(std::move(record));
    }
    hsa_signal_t done = slot->completion_signal;
    __atomic_store_n(reinterpret_cast<uint16_t*>(slot), uint16_t{1} /* INVALID */, __ATOMIC_RELEASE);
    q->read_index.store(read + 1);
    if (done.handle) reinterpret_cast<FakeSignal*>(done.handle)->value.fetch_sub(1);
  }
}

}  // namespace

extern "C" {

// For the test: every dispatch so far (64-byte packet, then the first 256 kernarg bytes).
size_t qv_fake_hsa_dispatches(unsigned char* out, size_t capacity) {
  std::lock_guard<std::mutex> lock(g_mutex);
  size_t n = 0;
  for (const auto& d : g_dispatches) {
    if ((n + 1) * d.size() > capacity) break;
    std::memcpy(out + n * d.size(), d.data(), d.size());
    ++n;
  }
  return g_dispatches.size();
}
void qv_fake_hsa_clear() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_dispatches.clear();
}

hsa_status_t hsa_init() { ++g_init; return HSA_STATUS_SUCCESS; }
hsa_status_t hsa_shut_down() { --g_init; return HSA_STATUS_SUCCESS; }
hsa_status_t hsa_status_string(hsa_status_t, const char** text) { *text = "fake HSA status"; return HSA_STATUS_SUCCESS; }
hsa_status_t hsa_system_get_info(hsa_system_info_t attribute, void* value) {
  *static_cast<uint16_t*>(value) = attribute == HSA_SYSTEM_INFO_VERSION_MAJOR ? 1 : 1;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_iterate_agents(hsa_status_t (*callback)(hsa_agent_t, void*), void* data) {
  for (uint64_t agent : {kCpuAgent, kGpuAgent})
    if (hsa_status_t s = callback(hsa_agent_t{agent}, data); s != HSA_STATUS_SUCCESS) return s;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_agent_get_info(hsa_agent_t agent, hsa_agent_info_t attribute, void* value) {
  const char* isa = std::getenv("QV_FAKE_HSA_ISA");
  switch (attribute) {
    case HSA_AGENT_INFO_DEVICE:
      *static_cast<hsa_device_type_t*>(value) = agent.handle == kGpuAgent ? HSA_DEVICE_TYPE_GPU : HSA_DEVICE_TYPE_CPU;
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_NAME:
      std::snprintf(static_cast<char*>(value), 64, "%s", isa ? isa : "gfx90a");
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_PRODUCT_NAME:
      std::snprintf(static_cast<char*>(value), 64, "Fake AMD GPU");
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_PROFILE:
      *static_cast<hsa_profile_t*>(value) = HSA_PROFILE_BASE;
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_WORKGROUP_MAX_SIZE:
      *static_cast<uint32_t*>(value) = 1024;
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_QUEUE_MAX_SIZE:
      *static_cast<uint32_t*>(value) = 4096;
      return HSA_STATUS_SUCCESS;
    default:
      return HSA_STATUS_ERROR;
  }
}

hsa_status_t hsa_agent_iterate_regions(hsa_agent_t agent, hsa_status_t (*callback)(hsa_region_t, void*), void* data) {
  if (agent.handle != kGpuAgent) return HSA_STATUS_SUCCESS;
  for (uint64_t region : {kDeviceRegion, kKernargRegion})
    if (hsa_status_t s = callback(hsa_region_t{region}, data); s != HSA_STATUS_SUCCESS) return s;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_region_get_info(hsa_region_t region, hsa_region_info_t attribute, void* value) {
  switch (attribute) {
    case HSA_REGION_INFO_SEGMENT:
      *static_cast<hsa_region_segment_t*>(value) = HSA_REGION_SEGMENT_GLOBAL;
      return HSA_STATUS_SUCCESS;
    case HSA_REGION_INFO_GLOBAL_FLAGS:
      *static_cast<uint32_t*>(value) = region.handle == kDeviceRegion
                                           ? HSA_REGION_GLOBAL_FLAG_COARSE_GRAINED
                                           : HSA_REGION_GLOBAL_FLAG_KERNARG | HSA_REGION_GLOBAL_FLAG_FINE_GRAINED;
      return HSA_STATUS_SUCCESS;
    case HSA_REGION_INFO_RUNTIME_ALLOC_ALLOWED:
      *static_cast<bool*>(value) = true;
      return HSA_STATUS_SUCCESS;
    default:
      return HSA_STATUS_ERROR;
  }
}

hsa_status_t hsa_memory_allocate(hsa_region_t, size_t size, void** pointer) {
  *pointer = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  return *pointer ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_OUT_OF_RESOURCES;
}
hsa_status_t hsa_memory_free(void* pointer) { std::free(pointer); return HSA_STATUS_SUCCESS; }
hsa_status_t hsa_memory_copy(void* dst, const void* src, size_t size) { std::memcpy(dst, src, size); return HSA_STATUS_SUCCESS; }

hsa_status_t hsa_queue_create(hsa_agent_t, uint32_t size, uint32_t, void (*)(hsa_status_t, hsa_queue_t*, void*), void*,
                              uint32_t, uint32_t, hsa_queue_t** queue) {
  auto* q = new FakeQueue;
  q->queue.size = size;
  q->queue.base_address = std::aligned_alloc(64, size * 64);
  for (uint32_t i = 0; i < size; ++i)   // every slot starts INVALID, as the spec says
    static_cast<hsa_kernel_dispatch_packet_t*>(q->queue.base_address)[i].header = 1;
  q->queue.doorbell_signal.handle = reinterpret_cast<uint64_t>(&q->doorbell);
  q->processor = std::thread(process, q);
  *queue = &q->queue;   // first member: the backend's pointer is the FakeQueue's
  return HSA_STATUS_SUCCESS;
}
hsa_status_t hsa_queue_destroy(hsa_queue_t* queue) {
  auto* q = reinterpret_cast<FakeQueue*>(queue);
  q->stop = true;
  q->processor.join();
  std::free(q->queue.base_address);
  delete q;
  return HSA_STATUS_SUCCESS;
}
uint64_t hsa_queue_add_write_index_scacq_screl(const hsa_queue_t* queue, uint64_t value) {
  return reinterpret_cast<FakeQueue*>(const_cast<hsa_queue_t*>(queue))->write_index.fetch_add(value);
}
uint64_t hsa_queue_load_read_index_scacquire(const hsa_queue_t* queue) {
  return reinterpret_cast<FakeQueue*>(const_cast<hsa_queue_t*>(queue))->read_index.load();
}

hsa_status_t hsa_signal_create(hsa_signal_value_t initial, uint32_t, const hsa_agent_t*, hsa_signal_t* signal) {
  auto* s = new FakeSignal;
  s->value = initial;
  signal->handle = reinterpret_cast<uint64_t>(s);
  return HSA_STATUS_SUCCESS;
}
hsa_status_t hsa_signal_destroy(hsa_signal_t signal) { delete reinterpret_cast<FakeSignal*>(signal.handle); return HSA_STATUS_SUCCESS; }
hsa_signal_value_t hsa_signal_load_scacquire(hsa_signal_t signal) { return reinterpret_cast<FakeSignal*>(signal.handle)->value.load(); }
void hsa_signal_store_screlease(hsa_signal_t signal, hsa_signal_value_t value) { reinterpret_cast<FakeSignal*>(signal.handle)->value.store(value); }
hsa_signal_value_t hsa_signal_wait_scacquire(hsa_signal_t signal, hsa_signal_condition_t condition, hsa_signal_value_t compare,
                                             uint64_t, hsa_wait_state_t) {
  auto* s = reinterpret_cast<FakeSignal*>(signal.handle);
  for (int spins = 0; spins < 100000; ++spins) {   // a bounded wait, as the real one may return early
    int64_t v = s->value.load();
    if ((condition == HSA_SIGNAL_CONDITION_LT && v < compare) || (condition == HSA_SIGNAL_CONDITION_EQ && v == compare))
      return v;
    std::this_thread::yield();
  }
  return s->value.load();
}

hsa_status_t hsa_code_object_reader_create_from_memory(const void* data, size_t size, hsa_code_object_reader_t* reader) {
  reader->handle = reinterpret_cast<uint64_t>(new Reader{static_cast<const unsigned char*>(data), size});
  return HSA_STATUS_SUCCESS;
}
hsa_status_t hsa_code_object_reader_destroy(hsa_code_object_reader_t reader) { delete reinterpret_cast<Reader*>(reader.handle); return HSA_STATUS_SUCCESS; }
hsa_status_t hsa_executable_create_alt(hsa_profile_t, hsa_default_float_rounding_mode_t, const char*, hsa_executable_t* e) {
  e->handle = reinterpret_cast<uint64_t>(new Executable);
  return HSA_STATUS_SUCCESS;
}
hsa_status_t hsa_executable_load_agent_code_object(hsa_executable_t e, hsa_agent_t, hsa_code_object_reader_t reader, const char*,
                                                   hsa_loaded_code_object_t*) {
  auto* exe = reinterpret_cast<Executable*>(e.handle);
  auto* r = reinterpret_cast<Reader*>(reader.handle);
  exe->image.assign(r->data, r->data + r->size);
  return read_descriptors(*exe) ? HSA_STATUS_SUCCESS : static_cast<hsa_status_t>(0x1010);   // INVALID_CODE_OBJECT
}
hsa_status_t hsa_executable_freeze(hsa_executable_t, const char*) { return HSA_STATUS_SUCCESS; }
hsa_status_t hsa_executable_destroy(hsa_executable_t e) { delete reinterpret_cast<Executable*>(e.handle); return HSA_STATUS_SUCCESS; }
hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t e, const char* name, const hsa_agent_t*, hsa_executable_symbol_t* symbol) {
  for (Symbol& s : reinterpret_cast<Executable*>(e.handle)->symbols)
    if (s.name == name) {
      symbol->handle = reinterpret_cast<uint64_t>(&s);
      return HSA_STATUS_SUCCESS;
    }
  return static_cast<hsa_status_t>(0x1013);   // INVALID_SYMBOL_NAME
}
hsa_status_t hsa_executable_symbol_get_info(hsa_executable_symbol_t symbol, hsa_executable_symbol_info_t attribute, void* value) {
  const auto* s = reinterpret_cast<const Symbol*>(symbol.handle);
  switch (attribute) {
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT:
      *static_cast<uint64_t*>(value) = reinterpret_cast<uint64_t>(s->descriptor);
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE:
      std::memcpy(value, s->descriptor + 0, 4);
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE:
      std::memcpy(value, s->descriptor + 4, 4);
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE:
      std::memcpy(value, s->descriptor + 8, 4);
      return HSA_STATUS_SUCCESS;
    default:
      return HSA_STATUS_ERROR;
  }
}

}  // extern "C"
