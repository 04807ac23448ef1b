/* SPDX-License-Identifier: MIT */
/*
 * arch/x86_64/asm/prefetch.h - a prefetch for writing: the line's
 * ownership asked for ahead of the store (PREFETCHW, the kernel's
 * prefetchw()), where the CPU lists it: CPUID 0x80000001 ECX bit 8
 * ("3DNowPrefetch"), as the kernel's alternative does.
 */
#ifndef USFT_X86_64_ASM_PREFETCH_H
#define USFT_X86_64_ASM_PREFETCH_H

#include <cpuid.h>
#include <stdbool.h>

static inline __attribute__((always_inline)) void arch_prefetch_w(const void *p)
{
	__asm__ __volatile__("prefetchw %0" : : "m"(*(const char *)p));
}

static inline bool arch_prefetch_w_usable(void)
{
	unsigned int a, b, c, d;

	return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & (1U << 8));
}

#endif /* USFT_X86_64_ASM_PREFETCH_H */
