# SPDX-License-Identifier: MIT
# usft_add_criterion_test(NAME <name> SOURCES <src>... LABEL <label>
#                         [INSTRUMENT] [STATIC] [SERIAL] [TIMEOUT <s>] [LIBS <libs>...])
# STATIC links usft_static (internals reachable, for unit tests) instead of usft::usft.
# One criterion executable = one ctest test carrying <label>.
#
# ThreadSanitizer builds: criterion cannot start under TSan (its sandbox maps
# an arena at random fixed addresses inside TSan's shadow range and aborts,
# Snaipe/Criterion#274), so the suites the tsan stage runs (labels stress and
# torture) are built against a small stand-in with the same macros
# (tests/torture/criterion-shim) and a copy of usft_test_common built with it.
set(USFT_TSAN_SHIM OFF)
if("thread" IN_LIST USFT_SANITIZE)
  set(USFT_TSAN_SHIM ON)
endif()
function(usft_tsan_shim_libs)
  if(TARGET usft_test_common_shim)
    return()
  endif()
  set(_shim ${PROJECT_SOURCE_DIR}/tests/torture/criterion-shim)
  add_library(usft_criterion_shim STATIC ${_shim}/shim.c)
  target_include_directories(usft_criterion_shim BEFORE PUBLIC ${_shim})
  target_link_libraries(usft_criterion_shim PRIVATE usft_warnings usft_sanitize)
  get_target_property(_common_src usft_test_common SOURCES)
  get_target_property(_common_inc usft_test_common INTERFACE_INCLUDE_DIRECTORIES)
  add_library(usft_test_common_shim STATIC ${_common_src})
  target_include_directories(usft_test_common_shim PUBLIC ${_common_inc})
  target_link_libraries(usft_test_common_shim PUBLIC usft_criterion_shim usft_warnings
    Threads::Threads PRIVATE usft_sanitize)
endfunction()

function(usft_add_criterion_test)
  cmake_parse_arguments(T "INSTRUMENT;SERIAL;STATIC" "NAME;LABEL;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  if(T_STATIC)
    set(_lib usft_static)
  else()
    set(_lib usft::usft)
  endif()
  set(_common usft_test_common PkgConfig::CRITERION)
  if(USFT_TSAN_SHIM AND T_LABEL MATCHES "^(stress|torture)$")
    usft_tsan_shim_libs()
    set(_common usft_test_common_shim)
  endif()
  target_link_libraries(${T_NAME} PRIVATE ${_lib} ${_common}
    Threads::Threads ${CMAKE_DL_LIBS} usft_warnings usft_sanitize ${T_LIBS})
  if(T_INSTRUMENT)
    usft_instrument(${T_NAME})
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} --jobs 1 --timeout ${T_TIMEOUT})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABEL}" TIMEOUT ${T_TIMEOUT})
  if(T_SERIAL)
    set_tests_properties(${T_NAME} PROPERTIES RUN_SERIAL TRUE)
  endif()
  # every conformance suite also runs with the per-callsite dispatch path
  if(T_LABEL STREQUAL "conformance")
    add_test(NAME ${T_NAME}.callsite COMMAND ${T_NAME} --jobs 1 --timeout ${T_TIMEOUT})
    set_tests_properties(${T_NAME}.callsite PROPERTIES LABELS "${T_LABEL};callsite"
      TIMEOUT ${T_TIMEOUT} ENVIRONMENT "USFT_OPTIONS=per_callsite_ops=1")
  endif()
endfunction()
