# SPDX-License-Identifier: MIT
# Map CMAKE_SYSTEM_PROCESSOR to USFT_ARCH.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(USFT_ARCH x86_64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(USFT_ARCH arm64)
else()
  message(FATAL_ERROR "usft: unsupported processor '${CMAKE_SYSTEM_PROCESSOR}' (x86_64 and aarch64 only)")
endif()
