// SPDX-License-Identifier: MIT
/*
 * core/recursion.c - the kernel's trace_recursion bits (trace_recursion.h)
 * kept per thread in usft_task.recursion.
 *
 * Context levels map to nested signal handlers: level 0 = the thread's
 * normal flow (TRACE_CTX_NORMAL), 1 = a signal handler (SOFTIRQ slot),
 * 2 = a handler interrupting a handler (IRQ), 3+ = deeper (NMI).  The level
 * is usft_task.sig_depth; with it unknown (0) a handler that interrupts a
 * callback is let through once by the TRANSITION bit, as in the kernel.
 */
#include "core/internal.h"

static __always_inline int interrupt_context_level(void)
{
	int d = usft_task.sig_depth;

	return d > 3 ? 3 : d;
}

int trace_test_and_set_recursion(unsigned long ip, unsigned long pip, int start)
{
	unsigned long val = usft_task.recursion;
	int bit = start + TRACE_CTX_NORMAL - interrupt_context_level();

	if (unlikely(val & (1UL << bit))) {
		/*
		 * An interrupt (signal) may arrive before the context level is
		 * updated: allow one extra level through the transition bit.
		 */
		bit = start + TRACE_CTX_TRANSITION;
		if (val & (1UL << bit))
			return -1;
	}
	usft_task.recursion = val | (1UL << bit);
	barrier();
	return bit;
}

void trace_clear_recursion(int bit)
{
	barrier();
	usft_task.recursion &= ~(1UL << bit);
}

USFT_API int ftrace_test_recursion_trylock(unsigned long ip, unsigned long parent_ip)
{
	return trace_test_and_set_recursion(ip, parent_ip, TRACE_FTRACE_START);
}

USFT_API void ftrace_test_recursion_unlock(int bit)
{
	if (bit >= 0)
		trace_clear_recursion(bit);
}

/* ---- libusft's own work in a program thread ---------------------------- */

static void (*notrace_hook)(int begin);

USFT_API void usft_set_notrace_hook(void (*hook)(int begin))
{
	__atomic_store_n(&notrace_hook, hook, __ATOMIC_RELEASE);
}

void usft_notrace_begin(void)
{
	void (*hook)(int) = __atomic_load_n(&notrace_hook, __ATOMIC_ACQUIRE);

	if (hook)
		hook(1);
}

void usft_notrace_end(void)
{
	void (*hook)(int) = __atomic_load_n(&notrace_hook, __ATOMIC_ACQUIRE);

	if (hook)
		hook(0);
}
