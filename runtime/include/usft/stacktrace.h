/* SPDX-License-Identifier: MIT */
/*
 * usft/stacktrace.h - the calling thread's stack, walked from a callback
 * (the kernel's stack_trace_save() and stack_trace_save_regs(),
 * kernel/stacktrace.c, as __trace_stack() and the stack tracer use them).
 *
 * A frame-pointer walk: each frame record is {caller's frame pointer,
 * return address} (x86-64 rbp, arm64 x29), read only inside the thread's
 * own stack, so a program built without frame pointers gets a short or
 * wrong chain, never a fault (docs/tracers.md, "Stack traces").  Callable
 * from any callback: no allocation, lock, syscall or errno change;
 * async-signal-safe.  usft's own frames (trampoline, dispatch, callback)
 * are never in the result, as the kernel skips the tracer's.
 */
#ifndef USFT_STACKTRACE_H
#define USFT_STACKTRACE_H

#include <stdbool.h>
#include <usft/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ftrace_regs;

/* the most entries usft's own users record (kernel FTRACE_STACK_ENTRIES is larger) */
#define USFT_STACK_ENTRIES	64

/**
 * usft_stack_trace_save_fregs() - the stack of a traced call, from its
 * callback's arguments: @ip (the traced function), @parent_ip, then the
 * return addresses of the frames above.
 * @fregs: the callback's; NULL: only @ip and @parent_ip
 * @store: filled with at most @size addresses
 * @slots: NULL, or where each entry's return address lives on the stack
 *	(entry 0 and 1: the traced function's entry stack pointer), for depths
 *	as the stack tracer reports them
 * Return: the entries stored.  function_graph's return hooks are replaced by
 * the real return addresses (ftrace_graph_ret_addr()).
 */
USFT_API unsigned int usft_stack_trace_save_fregs(struct ftrace_regs *fregs, unsigned long ip,
						  unsigned long parent_ip, unsigned long *store,
						  unsigned long *slots, unsigned int size);

/**
 * stack_trace_save() - the calling thread's stack at this point.  Inside a
 * function probe's callback (the stacktrace command, <usft/ftrace_probe.h>)
 * it starts at the probed function, as the kernel's does once it skipped
 * the tracer's frames; elsewhere at the caller of stack_trace_save(), with
 * @skipnr more frames left out.
 * Return: the entries stored.
 */
USFT_API unsigned int stack_trace_save(unsigned long *store, unsigned int size,
				       unsigned int skipnr);

/**
 * usft_stack_bounds() - the calling thread's stack as the walker bounds it:
 * [*@lo, *@hi) holds @sp (the thread's stack block up to its thread
 * pointer; the main thread's up to __libc_stack_end).
 * Return: false when @sp is on no stack the walker knows (an alternate
 * signal stack, a coroutine's): then nothing above @sp is read.
 */
USFT_API bool usft_stack_bounds(unsigned long sp, unsigned long *lo, unsigned long *hi);

#ifdef __cplusplus
}
#endif

#endif /* USFT_STACKTRACE_H */
