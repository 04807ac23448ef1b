# SPDX-License-Identifier: MIT
# Cross toolchain: Debian 12 gcc-aarch64-linux-gnu, tests run under qemu-user.
#   scripts/setup-arm64.sh                      (once, as root)
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#   ctest --test-dir build-arm64 --timeout 120 -L 'unit|conformance'
# USFT_ARM64_SYSROOT: where setup-arm64.sh unpacked criterion:arm64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
# C++ only where g++-aarch64-linux-gnu is installed (check_language(CXX) users)
find_program(USFT_AARCH64_CXX aarch64-linux-gnu-g++)
if(USFT_AARCH64_CXX)
  set(CMAKE_CXX_COMPILER ${USFT_AARCH64_CXX})
endif()
set(CMAKE_ASM_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

if(NOT USFT_ARM64_SYSROOT)
  if(DEFINED ENV{USFT_ARM64_SYSROOT})
    set(USFT_ARM64_SYSROOT $ENV{USFT_ARM64_SYSROOT})
  else()
    set(USFT_ARM64_SYSROOT /opt/usft-arm64-sysroot)
  endif()
endif()
set(USFT_ARM64_SYSROOT ${USFT_ARM64_SYSROOT} CACHE PATH "criterion:arm64 sysroot (scripts/setup-arm64.sh)")
# try_compile() projects see the toolchain file again: pass the value on
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES USFT_ARM64_SYSROOT)

# arm64 .pc files only: the multiarch directory plus the criterion sysroot
set(ENV{PKG_CONFIG_LIBDIR}
  "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig:${USFT_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Every add_test() command runs through qemu.  Never pass -L (or set
# QEMU_LD_PREFIX): criterion's BoxFort then spins forever; the multiarch
# libc6:arm64 provides /lib/ld-linux-aarch64.so.1 instead.  BoxFort also
# re-executes /proc/self/exe, which needs the binfmt_misc handler.
set(CMAKE_CROSSCOMPILING_EMULATOR
  qemu-aarch64
  -E LD_LIBRARY_PATH=${USFT_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu)
