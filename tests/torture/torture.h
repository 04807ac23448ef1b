/* SPDX-License-Identifier: MIT */
/* tests/torture: the generated traced functions (funcs.c). */
#ifndef USFT_TORTURE_H
#define USFT_TORTURE_H

#include "test_common.h"

#define TT_NR_FUNCS 256

extern const tc_fn_t tt_funcs[TT_NR_FUNCS];

/* what tt_funcs[i](x) returns */
static inline notrace long tt_expect(int i, long x)
{
	return x * (2L * i + 3) + i;
}

#endif
