/* SPDX-License-Identifier: MIT */
/*
 * arch/arm64/asm/prefetch.h - a prefetch for writing (PRFM PSTL1KEEP, the
 * kernel's prefetchw() on arm64): part of the base instruction set.
 */
#ifndef USFT_ARM64_ASM_PREFETCH_H
#define USFT_ARM64_ASM_PREFETCH_H

#include <stdbool.h>

static inline __attribute__((always_inline)) void arch_prefetch_w(const void *p)
{
	__asm__ __volatile__("prfm pstl1keep, %a0" : : "p"(p));
}

static inline bool arch_prefetch_w_usable(void)
{
	return true;
}

#endif /* USFT_ARM64_ASM_PREFETCH_H */
