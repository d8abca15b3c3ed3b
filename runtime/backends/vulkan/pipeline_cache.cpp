#include "pipeline_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string_view>

#include "vulkan_context.h"

namespace quiver::backend::vulkan {

namespace {

// ---- Counters ----

std::atomic<size_t> g_created{0}, g_hits{0}, g_accepted{0}, g_rejected{0}, g_written{0};

// ---- File header (native byte order: every host quiver builds for is little-endian, and a
// file from another byte order fails the magic and checksum checks anyway) ----

constexpr char kMagic[8] = {'q', 'u', 'i', 'v', 'e', 'r', 'P', 'C'};
constexpr uint32_t kFormatVersion = 1;
namespace off {
constexpr size_t kMagic = 0, kVersion = 8, kHeaderBytes = 12, kIdentity = 16, kImage = 24, kDataBytes = 32,
                 kDataChecksum = 40, kHeaderChecksum = 48;   // 56..63 reserved, zero
}
constexpr uint64_t kHeaderSeed = 0x6865616465720001ull, kDataSeed = 0x6461746100000001ull;

template <typename T>
void store(std::vector<std::byte>& out, size_t at, T v) {
  std::memcpy(out.data() + at, &v, sizeof v);
}
template <typename T>
T load(std::span<const std::byte> in, size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof v);
  return v;
}

std::string hex16(uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[i] = digits[v & 15];
  return s;
}

constexpr uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

// ---- Files ----

std::atomic<uint64_t> g_temp_counter{0};

bool write_all(int fd, std::span<const std::byte> data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Reads up to `limit` + 1 bytes: a file that grows past the limit while being read still shows.
bool read_all(int fd, std::vector<std::byte>& out, uint64_t limit) {
  out.clear();
  std::byte chunk[1 << 16];
  while (out.size() <= limit) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out.insert(out.end(), chunk, chunk + n);
  }
  return true;
}

FileStamp stamp_of(const struct stat& st) {
  return {st.st_dev, st.st_ino, st.st_size, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

bool ensure_directory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return std::filesystem::is_directory(dir, ec);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

uint64_t hash_bytes(std::span<const std::byte> data, uint64_t seed) {
  uint64_t h = mix(seed ^ (data.size() * 0x9e3779b97f4a7c15ull));
  size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, data.data() + i, 8);
    h = std::rotl(h ^ (w * 0x87c37b91114253d5ull), 29) * 0x4cf5ad432745937full;
  }
  uint64_t tail = 0;
  if (i < data.size()) std::memcpy(&tail, data.data() + i, data.size() - i);
  return mix(h ^ tail ^ (uint64_t{data.size() - i} << 56));
}

CacheIdentity cache_identity(const Context& ctx) {
  CacheIdentity id;
  id.vendor_id = ctx.properties.vendorID;
  id.device_id = ctx.properties.deviceID;
  std::memcpy(id.pipeline_cache_uuid, ctx.properties.pipelineCacheUUID, VK_UUID_SIZE);
  // The driver version and driverUUID as well as pipelineCacheUUID: some drivers keep one
  // pipelineCacheUUID across releases (lavapipe's is a constant string), and the device name
  // tells lavapipe's LLVM version and vector width apart.
  std::vector<std::byte> key;
  auto add = [&](const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    key.insert(key.end(), b, b + n);
  };
  add(&id.vendor_id, 4);
  add(&id.device_id, 4);
  add(&ctx.properties.driverVersion, 4);
  add(id.pipeline_cache_uuid, VK_UUID_SIZE);
  add(ctx.driver_uuid, VK_UUID_SIZE);
  add(ctx.properties.deviceName, std::strlen(ctx.properties.deviceName));
  id.key = hash_bytes(key, 0x6964656e74697479ull);
  return id;
}

std::string cache_directory() {
  if (const char* dir = std::getenv("QUIVER_CACHE_DIR")) return dir;   // "" : off
  // The XDG base directory specification ignores relative paths.
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/') return std::string(xdg) + "/quiver";
  if (const char* home = std::getenv("HOME"); home && home[0] != '\0') return std::string(home) + "/.cache/quiver";
  return "";
}

uint64_t cache_max_bytes() {
  const char* v = std::getenv("QUIVER_CACHE_MAX_BYTES");
  if (!v || *v < '0' || *v > '9') return kDefaultCacheMaxBytes;
  char* end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(v, &end, 10);
  if (errno != 0 || *end != '\0' || n == 0) return kDefaultCacheMaxBytes;
  return n;
}

std::string cache_file_name(uint64_t identity_key, uint64_t image_hash) {
  return "vulkan-" + hex16(identity_key) + "-" + hex16(image_hash) + ".qvpc";
}

std::vector<std::byte> frame_cache_file(const CacheIdentity& id, uint64_t image_hash,
                                        std::span<const std::byte> driver_data) {
  std::vector<std::byte> out(kCacheFileHeaderBytes + driver_data.size());
  std::memcpy(out.data() + off::kMagic, kMagic, sizeof kMagic);
  store<uint32_t>(out, off::kVersion, kFormatVersion);
  store<uint32_t>(out, off::kHeaderBytes, kCacheFileHeaderBytes);
  store<uint64_t>(out, off::kIdentity, id.key);
  store<uint64_t>(out, off::kImage, image_hash);
  store<uint64_t>(out, off::kDataBytes, driver_data.size());
  store<uint64_t>(out, off::kDataChecksum, hash_bytes(driver_data, kDataSeed));
  store<uint64_t>(out, off::kHeaderChecksum,
                  hash_bytes(std::span<const std::byte>(out).first(off::kHeaderChecksum), kHeaderSeed));
  if (!driver_data.empty()) std::memcpy(out.data() + kCacheFileHeaderBytes, driver_data.data(), driver_data.size());
  return out;
}

std::optional<std::span<const std::byte>> unframe_cache_file(std::span<const std::byte> file,
                                                             const CacheIdentity& id, uint64_t image_hash,
                                                             std::string& why) {
  if (file.size() < kCacheFileHeaderBytes) {
    why = std::to_string(file.size()) + " bytes, shorter than the " + std::to_string(kCacheFileHeaderBytes) +
          "-byte header";
    return std::nullopt;
  }
  if (std::memcmp(file.data() + off::kMagic, kMagic, sizeof kMagic) != 0) {
    why = "not a quiver pipeline cache (magic)";
    return std::nullopt;
  }
  if (load<uint32_t>(file, off::kVersion) != kFormatVersion ||
      load<uint32_t>(file, off::kHeaderBytes) != kCacheFileHeaderBytes) {
    why = "format version " + std::to_string(load<uint32_t>(file, off::kVersion)) + ", this runtime reads " +
          std::to_string(kFormatVersion);
    return std::nullopt;
  }
  if (load<uint64_t>(file, off::kHeaderChecksum) != hash_bytes(file.first(off::kHeaderChecksum), kHeaderSeed)) {
    why = "header checksum mismatch";
    return std::nullopt;
  }
  if (load<uint64_t>(file, off::kIdentity) != id.key) {
    why = "made for another device or driver";
    return std::nullopt;
  }
  if (load<uint64_t>(file, off::kImage) != image_hash) {
    why = "made for another SPIR-V image";
    return std::nullopt;
  }
  const uint64_t data_bytes = load<uint64_t>(file, off::kDataBytes);
  std::span<const std::byte> data = file.subspan(kCacheFileHeaderBytes);
  if (data_bytes != data.size()) {
    why = "the header says " + std::to_string(data_bytes) + " bytes of driver data, the file holds " +
          std::to_string(data.size());
    return std::nullopt;
  }
  if (load<uint64_t>(file, off::kDataChecksum) != hash_bytes(data, kDataSeed)) {
    why = "driver data checksum mismatch";
    return std::nullopt;
  }
  // The driver's own header (Vulkan spec, "Pipeline Cache"): drivers should reject foreign data
  // themselves, but not all check it well, so it is checked here against this device too.
  VkPipelineCacheHeaderVersionOne header;
  if (data.size() < sizeof header) {
    why = "the driver data is shorter than VkPipelineCacheHeaderVersionOne";
    return std::nullopt;
  }
  std::memcpy(&header, data.data(), sizeof header);
  if (header.headerSize < sizeof header || header.headerSize > data.size() ||
      header.headerVersion != VK_PIPELINE_CACHE_HEADER_VERSION_ONE) {
    why = "the driver data's header is not a VkPipelineCacheHeaderVersionOne";
    return std::nullopt;
  }
  if (header.vendorID != id.vendor_id || header.deviceID != id.device_id ||
      std::memcmp(header.pipelineCacheUUID, id.pipeline_cache_uuid, VK_UUID_SIZE) != 0) {
    why = "the driver data was made by another device or driver (vendorID, deviceID, pipelineCacheUUID)";
    return std::nullopt;
  }
  return data;
}

void evict_cache_files(const std::string& dir, const std::string& keep, uint64_t max_bytes, size_t max_files) {
  struct File {
    std::string path;
    uint64_t bytes;
    int64_t mtime_ns;
  };
  std::vector<File> files;
  uint64_t total = 0;
  size_t count = 0;
  const time_t now = std::time(nullptr);
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with("vulkan-")) continue;
    const bool temporary = name.find(".qvpc.tmp.") != std::string::npos;
    if (!temporary && !name.ends_with(".qvpc")) continue;
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (temporary) {
      if (now - st.st_mtime > 600) ::unlink(it->path().c_str());   // its writer died
      continue;
    }
    total += static_cast<uint64_t>(st.st_size);
    ++count;
    if (name != keep)
      files.push_back({it->path().string(), static_cast<uint64_t>(st.st_size), stamp_of(st).mtime_ns});
  }
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) { return a.mtime_ns < b.mtime_ns; });
  for (const File& f : files) {
    if (count <= max_files && total <= max_bytes) break;
    if (::unlink(f.path.c_str()) == 0 || errno == ENOENT) {   // ENOENT: another process evicted it
      --count;
      total -= f.bytes;
    }
  }
}

PipelineCacheCounters pipeline_cache_counters() {
  return {g_created.load(), g_hits.load(), g_accepted.load(), g_rejected.load(), g_written.load()};
}

void count_pipeline_created(bool cache_hit) {
  g_created.fetch_add(1);
  if (cache_hit) g_hits.fetch_add(1);
}

// ---------------------------------------------------------------------------------------------

PipelineCache::PipelineCache(Context& ctx, uint64_t images_hash)
    : ctx_(ctx), identity_(cache_identity(ctx)), image_hash_(images_hash), dir_(cache_directory()) {
  std::optional<std::vector<std::byte>> data;
  if (!dir_.empty()) {
    path_ = dir_ + "/" + cache_file_name(identity_.key, image_hash_);
    data = read_file();
  }
  if (data) {
    cache_ = create(*data);
    if (cache_) {
      g_accepted.fetch_add(1);
      // Recently used: eviction takes the least recently modified files first.
      ::utimensat(AT_FDCWD, path_.c_str(), nullptr, 0);
      struct stat st;
      if (seen_ && ::stat(path_.c_str(), &st) == 0 && seen_->inode == st.st_ino) seen_ = stamp_of(st);
    } else {
      g_rejected.fetch_add(1);   // the driver refused it: start empty
    }
  }
  if (!cache_) cache_ = create({});
}

PipelineCache::~PipelineCache() {
  if (cache_) ctx_.vk.vkDestroyPipelineCache(ctx_.device, cache_, nullptr);
}

VkPipelineCache PipelineCache::create(std::span<const std::byte> initial) const {
  VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  info.initialDataSize = initial.size();
  info.pInitialData = initial.empty() ? nullptr : initial.data();
  VkPipelineCache cache = VK_NULL_HANDLE;
  if (ctx_.vk.vkCreatePipelineCache(ctx_.device, &info, nullptr, &cache) != VK_SUCCESS) return VK_NULL_HANDLE;
  return cache;
}

std::optional<std::vector<std::byte>> PipelineCache::read_file() {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;   // none yet (or unreadable): nothing to reject
  struct stat st;
  std::vector<std::byte> bytes;
  const uint64_t limit = cache_max_bytes();
  // The descriptor holds one inode: a writer renaming a new file over it meanwhile is not seen.
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  seen_ = stamp_of(st);   // judged once: save() looks again only when it has changed
  // Another user's file is not trusted: for most drivers the data is machine code, and a shared
  // directory (QUIVER_CACHE_DIR=/tmp/...) would let anyone plant one.
  const bool read = S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && static_cast<uint64_t>(st.st_size) <= limit &&
                    read_all(fd, bytes, limit);
  ::close(fd);
  if (!read) {
    g_rejected.fetch_add(1);
    return std::nullopt;
  }
  std::string why;
  std::optional<std::span<const std::byte>> data = unframe_cache_file(bytes, identity_, image_hash_, why);
  if (!data) {
    g_rejected.fetch_add(1);
    return std::nullopt;
  }
  return std::vector<std::byte>(data->begin(), data->end());
}

void PipelineCache::merge_newer_file() {
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0) return;
  if (seen_ && *seen_ == stamp_of(st)) return;   // ours, or one already merged
  std::optional<std::vector<std::byte>> data = read_file();
  if (!data) return;
  VkPipelineCache theirs = create(*data);
  if (!theirs) {
    g_rejected.fetch_add(1);
    return;
  }
  g_accepted.fetch_add(1);
  ctx_.vk.vkMergePipelineCaches(ctx_.device, cache_, 1, &theirs);
  ctx_.vk.vkDestroyPipelineCache(ctx_.device, theirs, nullptr);
}

void PipelineCache::save() noexcept {
  if (dir_.empty() || !cache_) return;
  try {
    merge_newer_file();
    const Api& vk = ctx_.vk;
    size_t size = 0;
    if (vk.vkGetPipelineCacheData(ctx_.device, cache_, &size, nullptr) != VK_SUCCESS) return;
    std::vector<std::byte> data(size);
    if (vk.vkGetPipelineCacheData(ctx_.device, cache_, &size, data.data()) != VK_SUCCESS) return;
    data.resize(size);
    if (data.size() < sizeof(VkPipelineCacheHeaderVersionOne)) return;   // nothing a reader would accept
    const std::vector<std::byte> file = frame_cache_file(identity_, image_hash_, data);
    const uint64_t max_bytes = cache_max_bytes();
    if (file.size() > max_bytes || !ensure_directory(dir_)) return;

    // A name no other writer uses (process id and a counter), in the same directory so that
    // rename() replaces the file atomically.
    const std::string temporary = path_ + ".tmp." + std::to_string(::getpid()) + "." +
                                  std::to_string(g_temp_counter.fetch_add(1));
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return;
    struct stat st;
    bool ok = write_all(fd, file) && ::fstat(fd, &st) == 0;
    ok = ::close(fd) == 0 && ok;
    if (!ok || ::rename(temporary.c_str(), path_.c_str()) != 0) {
      ::unlink(temporary.c_str());
      return;
    }
    seen_ = stamp_of(st);
    g_written.fetch_add(1);
    evict_cache_files(dir_, cache_file_name(identity_.key, image_hash_), max_bytes, kMaxCacheFiles);
  } catch (...) {
    // Out of memory while copying the cache: the disk cache is an optimisation, the launch stands.
  }
}

}  // namespace quiver::backend::vulkan
