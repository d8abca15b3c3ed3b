#!/usr/bin/env bash
# Installs every Debian package quiver's build and tests need. Idempotent: packages already
# present are skipped, and apt-get waits for a held dpkg lock instead of failing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  llvm-19-dev libmlir-19-dev mlir-19-tools clang-19 libclang-19-dev libclang-cpp19-dev lld-19
  llvm-19-tools   # lit and FileCheck: the compiler's pass tests (tests/compiler/lit)
  libclang-rt-19-dev   # libFuzzer and the sanitizer runtimes of clang 19 (tests/fuzz)
  spirv-tools spirv-cross glslang-tools
  libspirv-cross-c-shared-dev   # SPIRV-Cross C++ static libraries (the msl target)
  libhsa-runtime64-1   # ROCm's HSA runtime: the hip backend's detection is tested against it (no GPU needed)
  libcli11-dev nlohmann-json3-dev libzstd-dev zstd libgtest-dev libdlpack-dev
  python3-numpy   # tests/tools/gguf_gen.py writes the GGUF reader's test models
  libopenblas0-pthread   # numpy on OpenBLAS: the CPU table's anchors (scripts/cpu-bench.py)
  libvulkan-dev mesa-vulkan-drivers vulkan-tools
  vulkan-validationlayers   # VK_LAYER_KHRONOS_validation: the *.vulkan_validation ctests
  libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri nodejs   # tests/web: Dawn (npm webgpu) on Mesa llvmpipe, OpenGL ES
  chromium   # tests/web: the JavaScript loader in a headless browser (WebGPU on SwiftShader)
  # The aarch64 cross build (cmake/toolchains/aarch64-linux-gnu.cmake) and qemu to run its tests;
  # the arm64 libraries come from Debian multiarch (the architecture is added below), the C++
  # runtime too, so that the tests run on one arm64 glibc (the toolchain file says why).
  g++-aarch64-linux-gnu qemu-user libzstd-dev:arm64 libgtest-dev:arm64 libstdc++6:arm64
)
# npm for tests/web (`npm ci`); a Node.js that bundles its own npm (nodesource) must not get
# Debian's npm package, which depends on Debian's nodejs.
command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "bootstrap: installing ${missing[*]}"
APT=(-o DPkg::Lock::Timeout=600 -y --no-install-recommends)
export DEBIAN_FRONTEND=noninteractive
# The :arm64 packages need arm64 in dpkg's architectures (then apt-get update fetches its lists).
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "bootstrap: dpkg --add-architecture arm64"
  $SUDO dpkg --add-architecture arm64
fi
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -q
$SUDO apt-get "${APT[@]}" install -q "${missing[@]}"
