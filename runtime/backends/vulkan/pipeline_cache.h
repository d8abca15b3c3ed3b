// The Vulkan backend's pipeline cache: one VkPipelineCache per loaded module, kept on disk between
// processes so that a kernel's pipeline is compiled by the driver once per machine, not once per
// process (NVIDIA's driver takes ~0.25 s a kernel; lavapipe tens of ms).
//
// One file per (device, driver, module's SPIR-V images): "vulkan-<identity>-<images>.qvpc" in the cache
// directory ($QUIVER_CACHE_DIR, else $XDG_CACHE_HOME/quiver, else $HOME/.cache/quiver; an empty
// QUIVER_CACHE_DIR turns the disk cache off). The driver's data is framed by a header of our
// own (magic, version, identity and image hashes, size, checksums); a file that is missing,
// truncated, corrupt, made for another device or driver, owned by another user, or over the
// size bound is ignored (the cache starts empty and the file is replaced at the next write).
// Files are written to a unique temporary name in the same directory and renamed over the old
// one, so readers see either the old file or the new one, never a mix. The directory is
// bounded: at most kMaxCacheFiles of these files and QUIVER_CACHE_MAX_BYTES (default 256 MiB)
// in all, the least recently used going first. Nothing here ever fails a load or a launch: a
// directory that cannot be created or written just means no disk cache. docs/runtime.md,
// "Vulkan pipelines".
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "vulkan_api.h"

namespace quiver::backend::vulkan {

class Context;

inline constexpr size_t kMaxCacheFiles = 64;
inline constexpr uint64_t kDefaultCacheMaxBytes = 256ull << 20;
inline constexpr size_t kCacheFileHeaderBytes = 64;

// What decides whether the driver can reuse its compiled code: a file made under another
// identity is never handed to the driver.
struct CacheIdentity {
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint8_t pipeline_cache_uuid[VK_UUID_SIZE] = {};
  uint64_t key = 0;   // hash of the above, the driver version, driverUUID and the device name
};
CacheIdentity cache_identity(const Context& ctx);

// A 64-bit hash of `data` (not cryptographic: file names and corruption checks).
uint64_t hash_bytes(std::span<const std::byte> data, uint64_t seed = 0);

// The cache directory the environment names; "" when the disk cache is off.
std::string cache_directory();
// QUIVER_CACHE_MAX_BYTES, or kDefaultCacheMaxBytes when unset or not a positive integer.
uint64_t cache_max_bytes();
// "vulkan-<identity key>-<image hash>.qvpc"
std::string cache_file_name(uint64_t identity_key, uint64_t image_hash);

// A file's bytes: our header, then the driver's data (vkGetPipelineCacheData).
std::vector<std::byte> frame_cache_file(const CacheIdentity& id, uint64_t image_hash,
                                        std::span<const std::byte> driver_data);
// The driver's data inside `file` once our header (magic, version, sizes, checksums, identity,
// image) and the driver's VkPipelineCacheHeaderVersionOne (version, vendorID, deviceID,
// pipelineCacheUUID against this device) have been checked; nullopt with `why` otherwise.
std::optional<std::span<const std::byte>> unframe_cache_file(std::span<const std::byte> file,
                                                             const CacheIdentity& id, uint64_t image_hash,
                                                             std::string& why);

// Removes the least recently modified cache files of `dir` (other files are left alone) until
// at most `max_files` remain and they hold at most `max_bytes`; never `keep` (a file name).
// Temporary files of writers that died more than ten minutes ago are removed too.
void evict_cache_files(const std::string& dir, const std::string& keep, uint64_t max_bytes, size_t max_files);

// Process-wide counts, for tests and diagnostics.
struct PipelineCacheCounters {
  size_t pipelines_created = 0;   // vkCreateComputePipelines calls that succeeded
  size_t cache_hits = 0;          // of those, the driver reported an application-cache hit
  size_t files_accepted = 0;      // cache files read and handed to the driver
  size_t files_rejected = 0;      // cache files present but ignored (corrupt, foreign, too big)
  size_t files_written = 0;       // cache files written (renamed into place)
};
PipelineCacheCounters pipeline_cache_counters();
void count_pipeline_created(bool cache_hit);

// One version of a file: a writer renames a new inode into place, and mtime changes with it.
struct FileStamp {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = -1;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

// The cache of one module: created at load from the file (when there is a valid one), used for
// every pipeline the module creates, written back by save().
class PipelineCache {
 public:
  // `images_hash` names the SPIR-V images the module takes its kernels from (a hash over their
  // checksums): another set of images is another file.
  PipelineCache(Context& ctx, uint64_t images_hash);
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;
  ~PipelineCache();

  VkPipelineCache handle() const { return cache_; }   // VK_NULL_HANDLE when the driver refused one
  // Writes the cache to its file, merged with what another process wrote there since this one
  // read or wrote it. Never throws; does nothing without a cache directory.
  void save() noexcept;

 private:
  // Reads and checks the file; the driver data when it is valid (counts a rejected file; the
  // caller counts it accepted once the driver has taken it).
  std::optional<std::vector<std::byte>> read_file();
  void merge_newer_file();
  VkPipelineCache create(std::span<const std::byte> initial) const;

  Context& ctx_;
  CacheIdentity identity_;
  uint64_t image_hash_ = 0;
  std::string dir_;    // "" : no disk cache
  std::string path_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  // The file as last read or written by this object: a different one at save() time was
  // written by someone else, whose pipelines are merged in first.
  std::optional<FileStamp> seen_;
};

}  // namespace quiver::backend::vulkan
