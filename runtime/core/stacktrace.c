// SPDX-License-Identifier: MIT
/*
 * core/stacktrace.c - the stack walk of a traced call (kernel
 * kernel/stacktrace.c stack_trace_save(), stack_trace_save_regs(); the
 * frame-pointer unwinder of arch/x86/kernel/unwind_frame.c and
 * arch/arm64/kernel/stacktrace.c).
 *
 * Frame records have the same shape on both architectures: at the frame
 * pointer, the caller's frame pointer, then the return address into the
 * caller.  A callback starts from the traced function's entry state in
 * its ftrace_regs: the function itself, its return address (x86-64: the
 * word at the entry sp; arm64: the link register the site saved), and the
 * frame pointer the caller left, which the function has not pushed yet.
 * So the chain never goes through usft's own frames: the trampoline's
 * frame is not a frame record on x86-64 (it points rbp at the register
 * frame) and both arches' callbacks run below the traced function's entry
 * sp, which the walk starts above.
 *
 * Fault safety without a syscall: a record is read only if it lies
 * inside the calling thread's stack, [entry sp, top), with top the
 * thread's pointer (glibc puts a thread's TCB and static TLS at the top of
 * its stack block, so [sp, tp) is one mapping) or, for the main thread,
 * __libc_stack_end.  An sp that is no more than the default thread stack
 * size (or the main stack's limit) below that top is on the thread's own
 * stack; anything else (a sigaltstack, a coroutine's stack) is walked no
 * further than the two entries the registers give.  Each frame pointer
 * must be 16-byte aligned and above the last, so a program built without
 * frame pointers (rbp/x29 used as a general register) stops the walk at
 * the first bad record or records garbage return addresses, never faults.
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/resource.h>
#include <usft/fgraph.h>
#include <usft/ftrace_regs.h>
#include <usft/stacktrace.h>
#include "core/internal.h"

extern void *__libc_stack_end;

/* below the top, how far a thread's own stack reaches (set at load) */
static unsigned long thread_stack_max = 8UL << 20;
static unsigned long main_stack_max = 8UL << 20;

#define MAIN_STACK_CAP	(128UL << 20)	/* the kernel keeps mmap that far below the stack */

__attribute__((constructor)) static void stack_bounds_init(void)
{
	pthread_attr_t a;
	struct rlimit rl;
	size_t sz;

	if (!pthread_getattr_default_np(&a)) {
		if (!pthread_attr_getstacksize(&a, &sz) && sz >= (64UL << 10))
			thread_stack_max = sz;
		pthread_attr_destroy(&a);
	}
	if (!getrlimit(RLIMIT_STACK, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur >= (64UL << 10))
		main_stack_max = rl.rlim_cur < MAIN_STACK_CAP ? rl.rlim_cur : MAIN_STACK_CAP;
	else
		main_stack_max = MAIN_STACK_CAP;
}

USFT_API bool usft_stack_bounds(unsigned long sp, unsigned long *lo, unsigned long *hi)
{
	unsigned long tp = (unsigned long)__builtin_thread_pointer();
	unsigned long top = (unsigned long)__libc_stack_end;

	/* a thread's stack block: its guard at the bottom, TLS and TCB at the top */
	if (tp > sp && tp - sp <= thread_stack_max + (64UL << 10)) {
		*lo = tp - thread_stack_max - (64UL << 10);
		*hi = tp;
		return true;
	}
	if (top > sp && top - sp <= main_stack_max) {
		*lo = top - main_stack_max;
		*hi = top;
		return true;
	}
	return false;
}

/* the real return address behind function_graph's hook, if it is one */
static inline unsigned long real_ret(unsigned long ret, unsigned long slot)
{
	return ftrace_graph_ret_addr(NULL, NULL, ret, (unsigned long *)slot);
}

/*
 * Frame records from @fp up, inside [@sp, @hi): appended to @store from
 * index @n.  Not instrumented: a wrong frame pointer may point at a
 * sanitizer's redzone, which is still this thread's stack.
 */
__attribute__((no_sanitize_address, no_sanitize_thread)) static unsigned int
walk_records(unsigned long fp, unsigned long sp, unsigned long hi, unsigned long *store,
	     unsigned long *slots, unsigned int n, unsigned int size, unsigned int skip)
{
	unsigned long prev = sp;

	while (n < size) {
		const volatile unsigned long *rec = (const volatile unsigned long *)fp;
		unsigned long next, ret;

		if ((fp & 15) || fp < prev || fp > hi - 2 * sizeof(long))
			break;
		next = rec[0];
		ret = rec[1];
		if (!ret)
			break;
		if (skip) {
			skip--;
		} else {
			if (slots)
				slots[n] = fp + sizeof(long);
			store[n++] = real_ret(ret, fp + sizeof(long));
		}
		if (next <= fp)
			break;
		prev = fp + 2 * sizeof(long);
		fp = next;
	}
	return n;
}

USFT_API unsigned int usft_stack_trace_save_fregs(struct ftrace_regs *fregs, unsigned long ip,
						  unsigned long parent_ip, unsigned long *store,
						  unsigned long *slots, unsigned int size)
{
	unsigned long sp, lo, hi;
	unsigned int n = 0;

	if (!size)
		return 0;
	sp = fregs ? ftrace_regs_get_stack_pointer(fregs) : 0;
	if (slots)
		slots[0] = sp;
	store[n++] = ip;
	if (n < size && parent_ip) {
		if (slots)
			slots[n] = sp;
		store[n++] = real_ret(parent_ip, sp);
	}
	if (!fregs || !usft_stack_bounds(sp, &lo, &hi))
		return n;
	return walk_records(ftrace_regs_get_frame_pointer(fregs), sp, hi, store, slots, n, size, 0);
}

__thread struct usft_stack_ctx *usft_stack_ctx __attribute__((tls_model("initial-exec")));

USFT_API __attribute__((noinline)) unsigned int stack_trace_save(unsigned long *store,
								 unsigned int size,
								 unsigned int skipnr)
{
	const struct usft_stack_ctx *c = usft_stack_ctx;
	unsigned long fp = (unsigned long)__builtin_frame_address(0), lo, hi;

	if (c)
		return usft_stack_trace_save_fregs(c->fregs, c->ip, c->parent_ip, store, NULL,
						   size);
	if (!size || !usft_stack_bounds(fp, &lo, &hi))
		return 0;
	/* this frame's record holds the return into our caller: keep that one */
	return walk_records(fp, fp, hi, store, NULL, 0, size, skipnr);
}
