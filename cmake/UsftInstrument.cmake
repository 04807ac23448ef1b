# SPDX-License-Identifier: MIT
# usft_instrument(<target> [CALL_OPS] [EXCLUDE <files>...] [LINK])
# Adds the -fpatchable-function-entry flags of the target architecture
# (kernel CC_FLAGS_FTRACE analogue) to the C/C++ sources of <target>.
include(CheckCCompilerFlag)
if(NOT USFT_ARCH)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
    set(USFT_ARCH arm64)
  else()
    set(USFT_ARCH x86_64)
  endif()
endif()
if(USFT_ARCH STREQUAL "arm64")
  set(USFT_CC_FLAGS_FTRACE -fpatchable-function-entry=2)
  set(USFT_CC_FLAGS_FTRACE_CALL_OPS -fpatchable-function-entry=4,2 -falign-functions=8)
else()
  set(USFT_CC_FLAGS_FTRACE -fpatchable-function-entry=5)
  set(USFT_CC_FLAGS_FTRACE_CALL_OPS -fpatchable-function-entry=5)
endif()

# Every usft_instrument() in this build uses the CALL_OPS layout (arm64 test
# stage: the suites run once per layout).
option(USFT_INSTRUMENT_CALL_OPS "usft_instrument() always uses the CALL_OPS layout" OFF)

function(usft_instrument target)
  cmake_parse_arguments(UI "CALL_OPS;LINK" "" "EXCLUDE" ${ARGN})
  if(UI_CALL_OPS OR USFT_INSTRUMENT_CALL_OPS)
    set(_flags ${USFT_CC_FLAGS_FTRACE_CALL_OPS})
  else()
    set(_flags ${USFT_CC_FLAGS_FTRACE})
  endif()
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:${_flags}>)
  foreach(_f IN LISTS UI_EXCLUDE)
    set_source_files_properties(${_f} TARGET_DIRECTORY ${target}
      PROPERTIES COMPILE_OPTIONS "-fpatchable-function-entry=0")
  endforeach()
  if(UI_LINK)
    target_link_libraries(${target} PRIVATE usft::usft)
  endif()
endfunction()
