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
endif()
