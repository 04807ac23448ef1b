// SPDX-License-Identifier: MIT
/*
 * The stack walk of a traced call (<usft/stacktrace.h>; the kernel's
 * stack_trace_save() as __trace_stack() and the stack tracer use it): the
 * chain continues past usft's trampoline into the traced function's
 * callers, usft's own frames are not in it, function_graph's return hooks
 * read as the real return addresses, and a corrupt frame chain ends the
 * walk without a fault (nothing outside the thread's stack is read).
 * Built with frame pointers.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <usft/fgraph.h>
#include <usft/ftrace_probe.h>
#include <usft/stacktrace.h>
#include "test_common.h"

TRACEE long cf_st_leaf(long x)
{
	TRACEE_BODY();
	return x + 1;
}

TRACEE long cf_st_mid(long x)
{
	long r = cf_st_leaf(x) * 2;

	TRACEE_BODY();
	return r;
}

TRACEE long cf_st_outer(long x)
{
	long r = cf_st_mid(x) + 3;

	TRACEE_BODY();
	return r;
}

static unsigned long frames[USFT_STACK_ENTRIES], slots[USFT_STACK_ENTRIES];
static unsigned int nframes;
static unsigned long cb_sp;

static notrace void walk_cb(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			    struct ftrace_regs *fregs)
{
	(void)op;
	cb_sp = ftrace_regs_get_stack_pointer(fregs);
	nframes = usft_stack_trace_save_fregs(fregs, ip, parent_ip, frames, slots,
					      USFT_STACK_ENTRIES);
}

static const char *fn_of(unsigned long a)
{
	const char *n = usft_kallsyms_lookup(a, NULL);

	return n ? n : "?";
}

static void expect_chain(void)
{
	cr_assert_geq(nframes, 4, "%u frames", nframes);
	cr_assert_eq(frames[0], tc_site(cf_st_leaf), "frame 0 is the traced function");
	cr_assert_str_eq(fn_of(frames[1]), "cf_st_mid");
	cr_assert_str_eq(fn_of(frames[2]), "cf_st_outer");
	/* no frame of usft's (trampoline, dispatch, callback) */
	for (unsigned int i = 0; i < nframes; i++)
		cr_assert(strncmp(fn_of(frames[i]), "walk_cb", 7) && strncmp(fn_of(frames[i]),
			  "ftrace_", 7), "frame %u is usft's own: %s", i, fn_of(frames[i]));
}

Test(stacktrace, from_a_callback_past_the_trampoline)
{
	static struct ftrace_ops ops = { .func = walk_cb };

	cr_assert_eq(tc_set_filter(&ops, "cf_st_leaf", 1), 0);
	cr_assert_eq(register_ftrace_function(&ops), 0);
	cr_assert_eq(cf_st_outer(1), 7);
	cr_assert_eq(unregister_ftrace_function(&ops), 0);
	expect_chain();
	/* the slots: at the entry sp, then upward inside the stack */
	cr_assert_eq(slots[0], cb_sp);
	cr_assert_eq(slots[1], cb_sp);
	for (unsigned int i = 2; i < nframes; i++)
		cr_assert_gt(slots[i], slots[i - 1], "slot %u", i);
}

static notrace int graph_ent(struct ftrace_graph_ent *trace, struct fgraph_ops *gops,
			     struct ftrace_regs *fregs)
{
	(void)trace, (void)gops, (void)fregs;
	return 1;	/* hook the return: the stack holds return_to_handler */
}

static notrace void graph_ret(struct ftrace_graph_ret *trace, struct fgraph_ops *gops,
			      struct ftrace_regs *fregs)
{
	(void)trace, (void)gops, (void)fregs;
}

Test(stacktrace, function_graph_return_hooks_read_as_real_addresses)
{
	static struct ftrace_ops ops = { .func = walk_cb };
	static struct fgraph_ops gops = { .entryfunc = graph_ent, .retfunc = graph_ret };

	cr_assert_eq(tc_set_filter(&gops.ops, "cf_st_mid", 1), 0);
	cr_assert_eq(tc_set_filter(&gops.ops, "cf_st_outer", 0), 0);
	cr_assert_eq(register_ftrace_graph(&gops), 0);
	cr_assert_eq(tc_set_filter(&ops, "cf_st_leaf", 1), 0);
	cr_assert_eq(register_ftrace_function(&ops), 0);
	cr_assert_eq(cf_st_outer(1), 7);
	cr_assert_eq(unregister_ftrace_function(&ops), 0);
	unregister_ftrace_graph(&gops);
	expect_chain();
}

static notrace void dump_stack(struct trace_array *tr, unsigned long ip, int skip)
{
	(void)tr, (void)ip, (void)skip;
	nframes = stack_trace_save(frames, USFT_STACK_ENTRIES, 0);
}

static notrace bool tr_on(struct trace_array *tr)
{
	(void)tr;
	return true;
}

static notrace void tr_set(struct trace_array *tr, bool on)
{
	(void)tr, (void)on;
}

Test(stacktrace, stack_trace_save_in_the_stacktrace_command)
{
	static const struct usft_trace_array_ops tops = {
		.sz = sizeof(tops), .is_on = tr_on, .set_on = tr_set, .dump_stack = dump_stack,
	};

	cr_assert_eq(usft_set_trace_array_ops(&tops), 0);
	cr_assert_eq(usft_ftrace_regex_cmd(NULL, "cf_st_leaf:stacktrace", 1), 0);
	nframes = 0;
	cr_assert_eq(cf_st_outer(1), 7);
	cr_assert_eq(usft_ftrace_regex_cmd(NULL, "!cf_st_leaf:stacktrace", 1), 0);
	expect_chain();
	/* outside a probe: from the caller of stack_trace_save() */
	nframes = stack_trace_save(frames, USFT_STACK_ENTRIES, 0);
	cr_assert_geq(nframes, 1);
}

/* a fake ftrace_regs: the entry sp and the frame pointer the walk starts from */
static void fake_regs(struct ftrace_regs *f, unsigned long sp, unsigned long fp)
{
#if defined(__aarch64__)
	arch_ftrace_regs(f)->sp = sp;
	arch_ftrace_regs(f)->fp = fp;
#else
	arch_ftrace_regs(f)->regs.sp = sp;
	arch_ftrace_regs(f)->regs.bp = fp;
#endif
}

Test(stacktrace, a_corrupt_chain_never_faults)
{
	static unsigned long fregs_mem[64] __attribute__((aligned(16)));
	struct ftrace_regs *f = (struct ftrace_regs *)fregs_mem;
	unsigned long rec[16] __attribute__((aligned(16)));
	unsigned long sp = (unsigned long)&rec[0], lo, hi, out[8];
	long pg = sysconf(_SC_PAGESIZE);
	unsigned long none = (unsigned long)mmap(NULL, (size_t)pg, PROT_NONE,
						 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *heap = malloc(4096);
	unsigned int n;

	cr_assert_neq(none, (unsigned long)MAP_FAILED);
	cr_assert(usft_stack_bounds(sp, &lo, &hi));
	cr_assert(lo <= sp && sp < hi);
	/* a record whose next frame is an unreadable page: that page is not read */
	rec[4] = none;
	rec[5] = 0x1234;
	fake_regs(f, sp, (unsigned long)&rec[4]);
	n = usft_stack_trace_save_fregs(f, 0x10, 0x20, out, NULL, 8);
	cr_assert_eq(n, 3, "ip, parent, the one good record: %u", n);
	cr_assert_eq(out[2], 0x1234);
	/* the unreadable page itself as the frame pointer */
	fake_regs(f, sp, none);
	cr_assert_eq(usft_stack_trace_save_fregs(f, 0x10, 0x20, out, NULL, 8), 2);
	/* a cycle, a record below sp, a misaligned one, one past the top */
	rec[4] = (unsigned long)&rec[4];
	fake_regs(f, sp, (unsigned long)&rec[4]);
	cr_assert_eq(usft_stack_trace_save_fregs(f, 0x10, 0x20, out, NULL, 8), 3);
	fake_regs(f, sp, sp - 64);
	cr_assert_eq(usft_stack_trace_save_fregs(f, 0x10, 0x20, out, NULL, 8), 2);
	fake_regs(f, sp, (unsigned long)&rec[4] + 4);
	cr_assert_eq(usft_stack_trace_save_fregs(f, 0x10, 0x20, out, NULL, 8), 2);
	fake_regs(f, sp, hi);
	cr_assert_eq(usft_stack_trace_save_fregs(f, 0x10, 0x20, out, NULL, 8), 2);
	/* records chained upward end at the first garbage link, size bounds the rest */
	rec[4] = (unsigned long)&rec[8];
	rec[8] = (unsigned long)&rec[12];
	rec[9] = 0x5678;
	rec[12] = ~0UL & ~15UL;
	rec[13] = 0x9abc;
	fake_regs(f, sp, (unsigned long)&rec[4]);
	cr_assert_eq(usft_stack_trace_save_fregs(f, 0x10, 0x20, out, NULL, 8), 5);
	cr_assert_eq(out[4], 0x9abc);
	cr_assert_eq(usft_stack_trace_save_fregs(f, 0x10, 0x20, out, NULL, 3), 3);
	/* an sp on no known stack (the heap): nothing but the registers */
	cr_assert_not(usft_stack_bounds((unsigned long)heap + 2048, &lo, &hi));
	fake_regs(f, (unsigned long)heap + 2048, (unsigned long)heap + 2064);
	cr_assert_eq(usft_stack_trace_save_fregs(f, 0x10, 0x20, out, NULL, 8), 2);
	cr_assert_eq(usft_stack_trace_save_fregs(NULL, 0x10, 0x20, out, NULL, 8), 2);
	cr_assert_eq(usft_stack_trace_save_fregs(NULL, 0x10, 0, out, NULL, 8), 1);
	free(heap);
	munmap((void *)none, (size_t)pg);
}

static volatile int alt_known = -1;

static void alt_handler(int sig)
{
	unsigned long lo, hi, here = (unsigned long)__builtin_frame_address(0);

	(void)sig;
	alt_known = usft_stack_bounds(here, &lo, &hi);
}

static void *thread_bounds(void *arg)
{
	unsigned long lo, hi, here = (unsigned long)__builtin_frame_address(0);

	(void)arg;
	return (void *)(uintptr_t)(usft_stack_bounds(here, &lo, &hi) &&
				   hi == (unsigned long)__builtin_thread_pointer() && lo < here);
}

Test(stacktrace, bounds_of_threads_and_signal_stacks)
{
	struct sigaction sa = { .sa_handler = alt_handler, .sa_flags = SA_ONSTACK }, old;
	stack_t ss = { .ss_size = 65536 }, oss;
	pthread_t t;
	void *ok = NULL;

	cr_assert_eq(pthread_create(&t, NULL, thread_bounds, NULL), 0);
	cr_assert_eq(pthread_join(t, &ok), 0);
	cr_assert(ok, "a thread's stack ends at its thread pointer");
	/* a handler on an alternate signal stack: that stack is not walked */
	ss.ss_sp = malloc(ss.ss_size);
	cr_assert_eq(sigaltstack(&ss, &oss), 0);
	cr_assert_eq(sigaction(SIGUSR2, &sa, &old), 0);
	raise(SIGUSR2);
	sigaction(SIGUSR2, &old, NULL);
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
	free(ss.ss_sp);
	cr_assert_eq(alt_known, 0);
}
