# SPDX-License-Identifier: MIT
add_library(usft_warnings INTERFACE)
target_compile_options(usft_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers>
  $<$<BOOL:${USFT_WERROR}>:-Werror>)
add_library(usft_sanitize INTERFACE)
if(USFT_SANITIZE)
  string(REPLACE ";" "," _san "${USFT_SANITIZE}")
  target_compile_options(usft_sanitize INTERFACE -fsanitize=${_san} -fno-omit-frame-pointer)
  target_link_options(usft_sanitize INTERFACE -fsanitize=${_san})
  if("thread" IN_LIST USFT_SANITIZE)
    # gcc warns that TSan does not model standalone fences (smp_mb/rmb/wmb);
    # the orderings they provide are covered by the acquire/release atomics
    # next to them or named in tests/tsan.supp.
    target_compile_options(usft_sanitize INTERFACE $<$<C_COMPILER_ID:GNU>:-Wno-tsan>)
  endif()
endif()
# Debug builds: yields and short spins at every step of the text patcher
# (USFT_TEXT_STEP() in runtime/core/text.h) to widen races for the torture
# suite.  usft_sanitize is what the runtime objects link, so it carries it.
if(USFT_DEBUG_YIELDS)
  target_compile_definitions(usft_sanitize INTERFACE USFT_DEBUG_YIELDS)
endif()
