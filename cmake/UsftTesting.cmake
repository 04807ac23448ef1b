# SPDX-License-Identifier: MIT
# usft_add_criterion_test(NAME <name> SOURCES <src>... LABEL <label>
#                         [INSTRUMENT] [STATIC] [SERIAL] [TIMEOUT <s>] [LIBS <libs>...])
# STATIC links usft_static (internals reachable, for unit tests) instead of usft::usft.
# One criterion executable = one ctest test carrying <label>.
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
  target_link_libraries(${T_NAME} PRIVATE ${_lib} usft_test_common PkgConfig::CRITERION
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
