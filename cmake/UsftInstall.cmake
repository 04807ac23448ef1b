# SPDX-License-Identifier: MIT
# Install rules (docs/getting-started.md), included at the end of the
# top-level CMakeLists.txt when USFT_INSTALL is ON.
#
#   include/usft/*.h, include/usft/asm/*.h   public headers (+ generated version.h)
#   lib/libusft.so*, lib/libusft.a            usft::usft, usft::usft_static
#   lib/cmake/usft/                           usftConfig.cmake, usftConfigVersion.cmake,
#                                             usftTargets*.cmake, UsftInstrument.cmake
#   lib/pkgconfig/usft.pc                     with the patch_cflags variable
#
# Also, at configure time, <build>/pkgconfig/usft.pc: the same module for the
# build tree itself (headers from the source tree, libusft.so from
# <build>/runtime/, found at run time through an rpath), so the README's
# compile line works right after `make demo`:
#   PKG_CONFIG_PATH=$PWD/build/pkgconfig cc $(pkg-config --cflags usft) ...
#
# The tests/install suite (ctest -L install) checks all of it.
include(CMakePackageConfigHelpers)

set(USFT_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/usft"
  CACHE STRING "Install directory of the usft CMake package (relative to the prefix)")
set(USFT_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
  CACHE STRING "Install directory of usft.pc (relative to the prefix)")

# ---------------------------------------------------------------- headers
file(GLOB _usft_public_headers CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/runtime/include/usft/*.h)
file(GLOB _usft_public_asm_headers CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/runtime/include/usft/asm/*.h)
install(FILES ${_usft_public_headers}
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/usft COMPONENT Development)
install(FILES ${_usft_public_asm_headers}
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/usft/asm COMPONENT Development)
# Generated headers (version.h, and config.h once it exists), taken at install time.
install(DIRECTORY ${PROJECT_BINARY_DIR}/runtime/include/usft/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/usft COMPONENT Development
  FILES_MATCHING PATTERN "*.h")

# ---------------------------------------------------------------- libraries
install(TARGETS usft usft_static EXPORT usftTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime
    NAMELINK_COMPONENT Development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime)

# The preload shim and the CLI (inject/), when they are built.
if(TARGET usft_preload)
  install(TARGETS usft_preload
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime)
endif()
if(TARGET usft-cli)
  install(TARGETS usft-cli
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime)
endif()

# ---------------------------------------------------------------- dependencies
# The exported targets name the imported targets they link (usft_static links
# PkgConfig::LIBELF/LIBDW/LIBURCU and Threads::Threads PUBLIC).  Collect them
# from the targets themselves, so a dependency added in runtime/ reaches
# usftConfig.cmake (which recreates PkgConfig::<X> from its module) and the
# Requires.private of usft.pc without an edit here.
set(USFT_CONFIG_PKG_DEPS "")   # <PREFIX>=<module>;...
set(USFT_PC_REQUIRES_PRIVATE "")
set(USFT_CONFIG_FIND_THREADS OFF)
foreach(_t usft usft_static)
  get_target_property(_libs ${_t} INTERFACE_LINK_LIBRARIES)
  if(NOT _libs)
    continue()
  endif()
  foreach(_l IN LISTS _libs)
    if(_l MATCHES "^\\$<BUILD_INTERFACE:")
      continue()
    endif()
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" _l "${_l}")
    if(_l MATCHES "^PkgConfig::(.+)$")
      set(_p ${CMAKE_MATCH_1})
      if(NOT ${_p}_MODULE_NAME)
        message(FATAL_ERROR "usft: ${_t} links ${_l}, whose pkg-config module is "
          "unknown (pkg_check_modules(${_p} ...) with one module gives it)")
      endif()
      list(APPEND USFT_CONFIG_PKG_DEPS "${_p}=${${_p}_MODULE_NAME}")
      list(APPEND USFT_PC_REQUIRES_PRIVATE "${${_p}_MODULE_NAME}")
    elseif(_l STREQUAL "Threads::Threads")
      set(USFT_CONFIG_FIND_THREADS ON)
    elseif(_l MATCHES "::")
      message(FATAL_ERROR "usft: ${_t} links ${_l}; teach cmake/usftConfig.cmake.in "
        "to find it (or link it PRIVATE / $<BUILD_INTERFACE:...>)")
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES USFT_CONFIG_PKG_DEPS)
list(REMOVE_DUPLICATES USFT_PC_REQUIRES_PRIVATE)
list(JOIN USFT_PC_REQUIRES_PRIVATE " " USFT_PC_REQUIRES_PRIVATE)

# ---------------------------------------------------------------- CMake package
install(EXPORT usftTargets
  NAMESPACE usft::
  DESTINATION ${USFT_INSTALL_CMAKEDIR}
  COMPONENT Development)

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/usftConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/usftConfig.cmake
  INSTALL_DESTINATION ${USFT_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/usftConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
    ${PROJECT_BINARY_DIR}/cmake/usftConfig.cmake
    ${PROJECT_BINARY_DIR}/cmake/usftConfigVersion.cmake
    ${PROJECT_SOURCE_DIR}/cmake/UsftInstrument.cmake
  DESTINATION ${USFT_INSTALL_CMAKEDIR}
  COMPONENT Development)

# ---------------------------------------------------------------- pkg-config
# usft.pc is finished at install time so that its prefix is the real one,
# including `cmake --install <dir> --prefix <p>`.  Every other directory is
# ${prefix}-relative (pkg-config --define-prefix keeps working).
list(JOIN USFT_CC_FLAGS_FTRACE " " USFT_PC_PATCH_CFLAGS)
list(JOIN USFT_CC_FLAGS_FTRACE_CALL_OPS " " USFT_PC_PATCH_CFLAGS_CALL_OPS)
foreach(_d LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_d}}")
    set(USFT_PC_${_d} "${CMAKE_INSTALL_${_d}}")
  else()
    set(USFT_PC_${_d} "\${prefix}/${CMAKE_INSTALL_${_d}}")
  endif()
endforeach()
set(USFT_PC_DL_LIBS "")
foreach(_l IN LISTS CMAKE_DL_LIBS)
  string(APPEND USFT_PC_DL_LIBS " -l${_l}")
endforeach()
string(STRIP "${USFT_PC_DL_LIBS}" USFT_PC_DL_LIBS)
set(USFT_PC_PREFIX "@USFT_PC_PREFIX@")  # substituted again at install time
configure_file(${PROJECT_SOURCE_DIR}/runtime/usft.pc.in
  ${PROJECT_BINARY_DIR}/usft.pc.stage @ONLY)
install(CODE "
  set(USFT_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_BINARY_DIR}/usft.pc.stage\"
                 \"${PROJECT_BINARY_DIR}/usft.pc\" @ONLY)
" COMPONENT Development)
install(FILES ${PROJECT_BINARY_DIR}/usft.pc
  DESTINATION ${USFT_INSTALL_PKGCONFIGDIR}
  COMPONENT Development)

# The build tree's usft.pc (no install needed; see the top of this file).
set(USFT_PC_PREFIX "${PROJECT_BINARY_DIR}")
set(USFT_PC_LIBDIR "${PROJECT_BINARY_DIR}/runtime")
set(USFT_PC_INCLUDEDIR
  "${PROJECT_SOURCE_DIR}/runtime/include -I${PROJECT_BINARY_DIR}/runtime/include")
configure_file(${PROJECT_SOURCE_DIR}/runtime/usft.pc.in
  ${PROJECT_BINARY_DIR}/pkgconfig/usft.pc.tmp @ONLY)
file(READ ${PROJECT_BINARY_DIR}/pkgconfig/usft.pc.tmp _usft_pc)
file(REMOVE ${PROJECT_BINARY_DIR}/pkgconfig/usft.pc.tmp)
string(REPLACE "Libs: -L\${libdir} -lusft" "Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lusft"
  _usft_pc "${_usft_pc}")
string(REPLACE "Description: " "Description: (build tree, not installed) " _usft_pc "${_usft_pc}")
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/pkgconfig/usft.pc CONTENT "${_usft_pc}" @ONLY)
