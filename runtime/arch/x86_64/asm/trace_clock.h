/* SPDX-License-Identifier: MIT */
/*
 * arch/x86_64/asm/trace_clock.h - the cycle counter behind usft_trace_clock()
 * (the kernel's sched_clock()/trace_clock_local() on the TSC).
 *
 * Plain RDTSC, no fence: like trace_clock_local(), ordering against the
 * surrounding instructions does not matter for tracing, and the fenced
 * forms cost twice as much in a VM.
 */
#ifndef USFT_X86_64_ASM_TRACE_CLOCK_H
#define USFT_X86_64_ASM_TRACE_CLOCK_H

#include <cpuid.h>
#include <stdbool.h>

/* the kernel clocksource that is this counter (it is in use only when the
 * kernel found it synchronised across CPUs) */
#define ARCH_TRACE_CLOCKSOURCE	"tsc"

static inline __attribute__((always_inline)) unsigned long long arch_trace_cycles(void)
{
	unsigned int lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((unsigned long long)hi << 32) | lo;
}

/* invariant TSC: CPUID 0x80000007 EDX bit 8 (constant rate, runs in C-states) */
static inline bool arch_trace_cycles_usable(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(0x80000007, &a, &b, &c, &d))
		return false;
	return d & (1u << 8);
}

#endif /* USFT_X86_64_ASM_TRACE_CLOCK_H */
