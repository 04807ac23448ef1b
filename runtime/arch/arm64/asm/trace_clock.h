/* SPDX-License-Identifier: MIT */
/*
 * arch/arm64/asm/trace_clock.h - the counter behind usft_trace_clock() (the
 * kernel's arch_timer sched_clock): the generic timer's virtual count,
 * readable at EL0 on Linux (CNTKCTL_EL1.EL0VCTEN), constant rate.
 *
 * No ISB before the read: like trace_clock_local(), ordering against the
 * surrounding instructions does not matter for tracing.
 */
#ifndef USFT_ARM64_ASM_TRACE_CLOCK_H
#define USFT_ARM64_ASM_TRACE_CLOCK_H

#include <stdbool.h>

/* the kernel's name for this counter as a clocksource */
#define ARCH_TRACE_CLOCKSOURCE	"arch_sys_counter"

static inline __attribute__((always_inline)) unsigned long long arch_trace_cycles(void)
{
	unsigned long long c;

	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(c));
	return c;
}

/* the architecture guarantees a constant-rate, monotonic system counter */
static inline bool arch_trace_cycles_usable(void)
{
	return true;
}

#endif /* USFT_ARM64_ASM_TRACE_CLOCK_H */
