# Cross build of the runtime (libquiver) and its CPU tests for 64-bit Arm Linux, with Debian's
# cross toolchain (g++-aarch64-linux-gnu) and arm64 libraries from Debian multiarch
# (`dpkg --add-architecture arm64`; libzstd-dev:arm64, libgtest-dev:arm64), all installed by
# scripts/bootstrap.sh. Tests run under qemu-user (qemu-aarch64). quiverc is not cross-built:
#
#   cmake -S . -B build/aarch64 -G Ninja --toolchain cmake/toolchains/aarch64-linux-gnu.cmake \
#     -DCMAKE_BUILD_TYPE=Release -DQUIVER_BUILD_COMPILER=OFF \
#     -DQUIVER_HOST_QUIVERC=$PWD/build/default/bin/quiverc -DQUIVER_FATBIN_TARGETS=cpu:aarch64
#
# which is the `aarch64` preset (CMakePresets.json; scripts/test.sh's aarch64 part;
# docs/targets.md "Other CPU architectures").
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Libraries and CMake packages come from the multiarch directories (/usr/lib/aarch64-linux-gnu,
# found through CMAKE_LIBRARY_ARCHITECTURE, which CMake reads off the compiler); headers that
# are the same for every arch (dlpack, Vulkan, nlohmann-json, CLI11) from /usr/include. No
# sysroot: Debian installs arm64 libraries beside the build machine's, not under one.

# ctest runs the test programs through qemu, with one glibc: the dynamic loader and libc must
# come from the same build (pthread_create of libc 2.36-9 spins forever on the thread-stack list
# when loaded by the cross toolchain's ld.so of 2.36-8). Where Debian's arm64 libc6 is installed
# (multiarch, with libstdc++6:arm64; scripts/bootstrap.sh installs both) qemu runs
# /lib/ld-linux-aarch64.so.1 and everything comes from /lib/aarch64-linux-gnu; elsewhere -L
# points qemu at the cross toolchain's own runtime.
find_program(QUIVER_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(QUIVER_QEMU_AARCH64)
  if(EXISTS /lib/ld-linux-aarch64.so.1 AND EXISTS /usr/lib/aarch64-linux-gnu/libstdc++.so.6)
    set(CMAKE_CROSSCOMPILING_EMULATOR "${QUIVER_QEMU_AARCH64}")
  else()
    set(CMAKE_CROSSCOMPILING_EMULATOR "${QUIVER_QEMU_AARCH64};-L;/usr/aarch64-linux-gnu")
  endif()
endif()
