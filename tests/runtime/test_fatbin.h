// Builds .qfb files for the runtime tests by hand: the CPU image is the shared object compiled
// from cpu_kernels.c, packed with format::write_fatbin and a manifest describing its kernels.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "format/fatbin.h"

namespace quiver::test {

// The manifest for cpu_kernels.c, plus "gpu_only" (a kernel with a ptx image only).
format::Manifest test_manifest();

// Bytes of the compiled cpu_kernels shared object.
std::vector<std::byte> cpu_kernels_so();
// The same kernels exporting __qv_cpu_abi = 1000: an image for a later CPU ABI.
std::vector<std::byte> cpu_kernels_future_abi_so();

// The host's arch string for CPU images ("x86_64" / "aarch64").
std::string host_arch();

// A fat binary with a placeholder PTX image first and the real CPU image second, so the CPU
// backend has to pick its image rather than take the first.
std::vector<std::byte> make_test_fatbin();

// A fat binary for `manifest` with a placeholder PTX image (arch sm_80) and `cpu_image` (raw
// bytes) as the CPU image for `arch`; each image lists the kernels whose targets name it.
std::vector<std::byte> make_fatbin(format::Manifest manifest, std::vector<std::byte> cpu_image,
                                   std::string arch);
// The same with one CPU image (the same bytes) for each of `archs`.
std::vector<std::byte> make_fatbin(format::Manifest manifest, std::vector<std::byte> cpu_image,
                                   std::vector<std::string> archs);

}  // namespace quiver::test
