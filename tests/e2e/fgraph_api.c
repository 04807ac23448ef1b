// SPDX-License-Identifier: MIT
/*
 * <usft/fgraph.h> in-process: register/unregister, entry and return
 * callbacks, return values and registers, two fgraph_ops on one function,
 * tail calls, longjmp, ftrace_graph_ret_addr() and the unwind pair, the
 * site bytes of graph jmp mode (x86-64) and registration under calling
 * threads.  Runs as is (graph_jmp=1 by default) and as e2e_fgraph_api.call
 * (graph_jmp=0: every hooked return goes through return_to_handler).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <usft/fgraph.h>
#include <usft/usft.h>
#include "core/trace_clock.h"	/* the shim's inline read of the same clock */

#if defined(__clang__)
#define TRACEE __attribute__((noinline, used))
#else
#define TRACEE __attribute__((noinline, noipa, used))
#endif
#define KEEP() __asm__ __volatile__("" ::: "memory")

TRACEE long fg_leaf(long x)
{
	KEEP();
	return x + 1;
}

TRACEE double fg_double(double x)
{
	KEEP();
	return x * 1.5;
}

TRACEE long fg_parent(long x)
{
	long r = fg_leaf(x) * 2;

	KEEP();
	return r;
}

TRACEE long fg_tail_callee(long x)
{
	KEEP();
	return x * 3;
}

TRACEE long fg_tail(long x)
{
	return fg_tail_callee(x + 1);
}

static jmp_buf jb;

TRACEE void fg_jump_inner(int v)
{
	KEEP();
	longjmp(jb, v);
}

TRACEE void fg_jump_outer(int v)
{
	fg_jump_inner(v);
	KEEP();
}

static unsigned long ret_slot_seen, ret_addr_seen;

TRACEE void fg_peek(void)
{
	unsigned long *slot = (unsigned long *)__builtin_frame_address(0) + 1;

	ret_slot_seen = (unsigned long)slot;
	ret_addr_seen = ftrace_graph_ret_addr(NULL, NULL, *slot, slot);
	KEEP();
}

TRACEE void fg_peek_caller(void)
{
	fg_peek();
	KEEP();
}

/* a hooked function looks at its own return slot (frame record / [rbp + 8]) */
static unsigned long own_hooked, own_real, own_during, own_after;

TRACEE void fg_peek_own(void)
{
	unsigned long *slot = (unsigned long *)__builtin_frame_address(0) + 1;
	unsigned long dummy;

	own_hooked = *slot;
	own_real = ftrace_graph_ret_addr(NULL, NULL, *slot, slot);
	usft_fgraph_unwind_begin();
	own_during = *slot;
	/* nothing below our locals is gone: the hook comes back */
	usft_fgraph_unwind_end((unsigned long)&dummy);
	own_after = *slot;
	KEEP();
}

TRACEE void fg_peek_own_caller(void)
{
	fg_peek_own();
	KEEP();
}

#define MAXLOG 64
struct logent {
	char kind;		/* 'E' entry, 'R' return, 'U' unwound */
	const char *name;
	int depth;
	unsigned long retval;
};

struct log {
	struct logent e[MAXLOG];
	int n;
};

static struct log log_a, log_b;

static notrace void add(struct log *l, char kind, unsigned long func, int depth, unsigned long rv)
{
	if (l->n < MAXLOG)
		l->e[l->n++] = (struct logent){ kind, usft_kallsyms_lookup(func, NULL), depth, rv };
}

static notrace int ent_a(struct ftrace_graph_ent *t, struct fgraph_ops *g, struct ftrace_regs *r)
{
	add(&log_a, 'E', t->func, t->depth, 0);
	return 1;
}

static notrace void ret_a(struct ftrace_graph_ret *t, struct fgraph_ops *g, struct ftrace_regs *r)
{
	cr_assert(t->rettime >= t->calltime);
	add(&log_a, t->flags & FGRAPH_RET_UNWOUND ? 'U' : 'R', t->func, t->depth, t->retval);
}

static notrace int ent_b(struct ftrace_graph_ent *t, struct fgraph_ops *g, struct ftrace_regs *r)
{
	add(&log_b, 'E', t->func, t->depth, 0);
	return 1;
}

static notrace void ret_b(struct ftrace_graph_ret *t, struct fgraph_ops *g, struct ftrace_regs *r)
{
	add(&log_b, t->flags & FGRAPH_RET_UNWOUND ? 'U' : 'R', t->func, t->depth, t->retval);
}

static struct fgraph_ops gops_a = { .entryfunc = ent_a, .retfunc = ret_a };
static struct fgraph_ops gops_b = { .entryfunc = ent_b, .retfunc = ret_b };

static notrace void filter(struct fgraph_ops *g, const char *globs)
{
	cr_assert_eq(ftrace_set_filter(&g->ops, (unsigned char *)globs, -1, 1), 0, "%s", globs);
}

static notrace void expect(struct log *l, const char *want)
{
	char got[1024] = "";
	size_t n = 0;

	for (int i = 0; i < l->n; i++)
		n += snprintf(got + n, sizeof(got) - n, "%s%c%d:%s", i ? " " : "", l->e[i].kind,
			      l->e[i].depth, l->e[i].name ? l->e[i].name : "?");
	cr_assert_str_eq(got, want);
}

Test(fgraph, nesting_and_return_values)
{
	memset(&log_a, 0, sizeof(log_a));
	filter(&gops_a, "fg_leaf fg_parent fg_double");
	long r;
	double d;

	cr_assert_eq(register_ftrace_graph(&gops_a), 0);
	r = fg_parent(4);	/* criterion's asserts evaluate their arguments twice */
	d = fg_double(2.0);
	unregister_ftrace_graph(&gops_a);
	cr_assert_eq(r, 10);
	cr_assert_float_eq(d, 3.0, 1e-12);
	expect(&log_a, "E0:fg_parent E1:fg_leaf R1:fg_leaf R0:fg_parent E0:fg_double R0:fg_double");
	cr_assert_eq(log_a.e[2].retval, 5);
	cr_assert_eq(log_a.e[3].retval, 10);
	/* unregistered: nothing more */
	fg_parent(1);
	cr_assert_eq(log_a.n, 6);
}

Test(fgraph, register_twice_is_ebusy)
{
	filter(&gops_a, "fg_leaf");
	cr_assert_eq(register_ftrace_graph(&gops_a), 0);
	cr_assert_eq(register_ftrace_graph(&gops_a), -EBUSY);
	cr_assert_eq(errno, EBUSY);
	unregister_ftrace_graph(&gops_a);
	cr_assert_eq(register_ftrace_graph(NULL), -EINVAL);
}

Test(fgraph, two_ops_share_a_frame)
{
	long r;

	memset(&log_a, 0, sizeof(log_a));
	memset(&log_b, 0, sizeof(log_b));
	filter(&gops_a, "fg_leaf fg_parent");
	filter(&gops_b, "fg_leaf");
	cr_assert_eq(register_ftrace_graph(&gops_a), 0);
	cr_assert_eq(register_ftrace_graph(&gops_b), 0);
	r = fg_parent(1);
	unregister_ftrace_graph(&gops_b);
	unregister_ftrace_graph(&gops_a);
	cr_assert_eq(r, 4);
	expect(&log_a, "E0:fg_parent E1:fg_leaf R1:fg_leaf R0:fg_parent");
	/* one frame for fg_leaf: b sees the same depth */
	expect(&log_b, "E1:fg_leaf R1:fg_leaf");
}

Test(fgraph, tail_call_nests)
{
	memset(&log_a, 0, sizeof(log_a));
	filter(&gops_a, "fg_tail fg_tail_callee");
	long r;

	cr_assert_eq(register_ftrace_graph(&gops_a), 0);
	r = fg_tail(1);
	unregister_ftrace_graph(&gops_a);
	cr_assert_eq(r, 6);
	expect(&log_a, "E0:fg_tail E1:fg_tail_callee R1:fg_tail_callee R0:fg_tail");
}

Test(fgraph, longjmp_unwinds)
{
	memset(&log_a, 0, sizeof(log_a));
	filter(&gops_a, "fg_jump_* fg_leaf");
	cr_assert_eq(register_ftrace_graph(&gops_a), 0);
	for (int i = 1; i <= 3; i++) {
		if (!setjmp(jb))
			fg_jump_outer(i);
	}
	fg_leaf(1);
	unregister_ftrace_graph(&gops_a);
	/* each round's frames are gone at the next call reusing their slots */
	cr_assert_eq(log_a.e[0].kind, 'E');
	cr_assert_eq(log_a.n, 3 * 4 + 2, "%d events", log_a.n);
	cr_assert_eq(log_a.e[log_a.n - 2].kind, 'E');
	cr_assert_eq(log_a.e[log_a.n - 2].depth, 0);
	cr_assert_eq(log_a.e[log_a.n - 1].kind, 'R');
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(log_a.e[4 * i + 2].kind, 'U');
		cr_assert_eq(log_a.e[4 * i + 3].kind, 'U');
	}
}

Test(fgraph, ret_addr_and_unwind_pair)
{
	filter(&gops_a, "fg_peek_caller");
	cr_assert_eq(register_ftrace_graph(&gops_a), 0);
	fg_peek_caller();
	/* fg_peek is not hooked; its caller's slot is: through the caller's frame */
	unregister_ftrace_graph(&gops_a);
	cr_assert_neq(ret_addr_seen, 0);
	cr_assert_eq(ftrace_graph_ret_addr(NULL, NULL, 1234, NULL), 1234);
	/* the pair is a no-op without hooked frames */
	usft_fgraph_unwind_begin();
	usft_fgraph_unwind_end((unsigned long)__builtin_frame_address(0));
}

/* the real return address of a hooked frame, from its slot (arm64: the x30
 * the function saved in its frame record) */
Test(fgraph, ret_addr_of_a_hooked_frame)
{
	unsigned long caller = (unsigned long)fg_peek_own_caller;

	memset(&log_a, 0, sizeof(log_a));
	filter(&gops_a, "fg_peek_own");
	cr_assert_eq(register_ftrace_graph(&gops_a), 0);
	fg_peek_own_caller();
	unregister_ftrace_graph(&gops_a);
	expect(&log_a, "E0:fg_peek_own R0:fg_peek_own");
	cr_assert_neq(own_hooked, own_real, "the slot was not hooked");
	cr_assert(own_real > caller && own_real < caller + 256,
		  "ftrace_graph_ret_addr() = %#lx, not into fg_peek_own_caller %#lx", own_real,
		  caller);
	cr_assert_eq(own_during, own_real, "usft_fgraph_unwind_begin() did not restore the slot");
	cr_assert_eq(own_after, own_hooked, "usft_fgraph_unwind_end() did not hook it again");
}

Test(fgraph, trace_clock_is_monotonic)
{
	unsigned long long a = usft_trace_clock(), b = usft_trace_clock();
	const char *name = usft_trace_clock_name();

	cr_assert_geq(b, a);
	cr_assert(!strcmp(name, "counter") || !strcmp(name, "pvclock") || !strcmp(name, "mono"));
	cr_assert_eq(usft_set_trace_clock("bogus"), -EINVAL);
	cr_assert_eq(usft_set_trace_clock(NULL), -EINVAL);
	cr_assert(!usft_trace_clock_known("bogus"));
	cr_assert(usft_trace_clock_known("pvclock"));
	cr_assert_eq(usft_set_trace_clock("mono"), 0);
	cr_assert_str_eq(usft_trace_clock_name(), "mono");
	cr_assert_eq(usft_set_trace_clock("auto"), 0);
	cr_assert_str_eq(usft_trace_clock_name(), name);
}

/* the kernel's current clocksource, as trace_clock.c's "auto" reads it */
static bool clocksource_is(const char *want)
{
	char buf[32] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");

	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return !strcmp(buf, want);
}

static unsigned long long mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void *clock_reader(void *arg)
{
	unsigned long long *bad = arg, last = usft_trace_clock();

	for (int i = 0; i < 200000; i++) {
		unsigned long long t = usft_trace_clock();

		if (t < last)
			(*bad)++;
		last = t;
		if (!(i & 1023))
			sched_yield();	/* and from another CPU */
	}
	return NULL;
}

/*
 * On an x86-64 KVM guest whose clocksource is kvm-clock (as in CI), "auto"
 * is the host's pvclock page: on CLOCK_MONOTONIC's line, never backwards in
 * a thread that moves between CPUs.  Elsewhere "pvclock" is refused and
 * leaves the clock as it was.
 */
Test(fgraph, trace_clock_pvclock_on_kvm_clock)
{
	bool kvm = clocksource_is("kvm-clock");
	int ret;

#if !defined(__x86_64__)
	kvm = false;
#endif
	cr_assert_eq(usft_set_trace_clock("auto"), 0);
	if (!kvm) {
		const char *was = usft_trace_clock_name();

		cr_assert_eq(usft_set_trace_clock("pvclock"), -EOPNOTSUPP);
		cr_assert_str_eq(usft_trace_clock_name(), was);
		return;
	}
	cr_assert_str_eq(usft_trace_clock_name(), "pvclock");
	cr_assert_eq(usft_set_trace_clock("mono"), 0);
	ret = usft_set_trace_clock("pvclock");
	cr_assert_eq(ret, 0, "pvclock refused on kvm-clock: %d", ret);
	cr_assert_str_eq(usft_trace_clock_name(), "pvclock");
	for (int i = 0; i < 100; i++) {
		unsigned long long a = mono_now(), t = usft_trace_clock(), b = mono_now();

		/* within a millisecond of CLOCK_MONOTONIC: an offset, not a guess */
		cr_assert(t + 1000000 >= a && t <= b + 1000000, "%llu not near [%llu, %llu]", t, a, b);
	}
	{
		pthread_t th[2];
		unsigned long long bad[2] = { 0, 0 };

		for (int i = 0; i < 2; i++)
			cr_assert_eq(pthread_create(&th[i], NULL, clock_reader, &bad[i]), 0);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		cr_assert_eq(bad[0] + bad[1], 0, "%llu reads went backwards", bad[0] + bad[1]);
	}
	cr_assert_eq(usft_set_trace_clock("auto"), 0);
}

/*
 * The preload shim's function tracer reads the clock inline through the
 * exported calibration (usft_trace_clock_state()): that read lies between two
 * usft_trace_clock() reads, with each clock this machine has.
 */
Test(fgraph, trace_clock_state_is_the_clock)
{
	const char *clocks[] = { "auto", "mono", "pvclock", "counter", "auto" };

	const struct trace_clock_state *st = usft_trace_clock_state();

	cr_assert_eq(st->kind == CLOCK_KIND_COUNTER,
		     !strcmp(usft_trace_clock_name(), "counter"));
	cr_assert_eq(st->kind == CLOCK_KIND_PVCLOCK,
		     !strcmp(usft_trace_clock_name(), "pvclock"));
	for (int c = 0; c < 5; c++) {
		if (usft_set_trace_clock(clocks[c]) == -EOPNOTSUPP)
			continue;	/* not on this machine */
		cr_assert_str_eq(usft_trace_clock_name(),
				 strcmp(clocks[c], "auto") ? clocks[c] : usft_trace_clock_name());
		for (int i = 0; i < 1000; i++) {
			unsigned long long a = usft_trace_clock();
			unsigned long long b = trace_clock_read(st);
			unsigned long long d = usft_trace_clock();

			cr_assert(a <= b && b <= d, "%s: %llu %llu %llu", clocks[c], a, b, d);
		}
	}
}

/* graph jmp mode: a site whose only ops is a graph ops jumps (E9) to its stub */
Test(fgraph, site_bytes_follow_graph_jmp)
{
#if defined(__x86_64__)
	char opt[8] = "";
	const unsigned char *site = (const unsigned char *)fg_leaf;
	unsigned char want;

	filter(&gops_a, "fg_leaf");
	cr_assert_eq(register_ftrace_graph(&gops_a), 0);
	/* after the first registration: USFT_OPTIONS is read at initialisation */
	cr_assert_eq(usft_get_option("graph_jmp", opt, sizeof(opt)), 0);
	want = opt[0] == '1' ? 0xe9 : 0xe8;
	cr_assert_eq(site[0], want, "graph_jmp=%s: site byte %#x, want %#x", opt, site[0], want);
	cr_assert_eq(fg_parent(20), 42);
	unregister_ftrace_graph(&gops_a);
	cr_assert_eq(site[0], 0x0f, "the NOP is back");
#else
	cr_skip_test("graph jmp mode is x86-64 only");
#endif
}

/* registration churn while threads run hooked functions */
static long churn_entries, churn_returns;
static volatile int churn_stop;

static notrace int ent_count(struct ftrace_graph_ent *t, struct fgraph_ops *g,
			     struct ftrace_regs *r)
{
	__atomic_add_fetch(&churn_entries, 1, __ATOMIC_RELAXED);
	return 1;
}

static notrace void ret_count(struct ftrace_graph_ret *t, struct fgraph_ops *g,
			      struct ftrace_regs *r)
{
	__atomic_add_fetch(&churn_returns, 1, __ATOMIC_RELAXED);
}

static struct fgraph_ops gops_count = { .entryfunc = ent_count, .retfunc = ret_count };

static int churn_running;

static notrace void *churn_caller(void *arg)
{
	long bad = 0;

	__atomic_add_fetch(&churn_running, 1, __ATOMIC_RELAXED);
	for (long i = 0; !churn_stop; i++) {
		if (fg_parent(i) != (i + 1) * 2 || fg_tail(i) != (i + 1) * 3)
			bad++;
		if (fg_double((double)i) != (double)i * 1.5)
			bad++;
	}
	return (void *)bad;
}

/* two threads running churn_caller(), seen running before this returns */
static notrace void callers_start(pthread_t th[2])
{
	churn_stop = 0;
	churn_running = 0;
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, churn_caller, NULL), 0);
	while (__atomic_load_n(&churn_running, __ATOMIC_RELAXED) < 2)
		sched_yield();
}

static notrace void callers_stop(pthread_t th[2])
{
	void *bad;

	churn_stop = 1;
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(pthread_join(th[i], &bad), 0);
		cr_assert_eq((long)bad, 0, "a call computed a wrong result");
	}
}

Test(fgraph, register_unregister_while_threads_call)
{
	pthread_t th[2];

	cr_assert_eq(ftrace_set_filter(&gops_count.ops, (unsigned char *)"fg_parent fg_leaf fg_tail*",
				       -1, 1), 0);
	callers_start(th);
	for (int round = 0; round < 150; round++) {
		cr_assert_eq(register_ftrace_graph(&gops_count), 0, "round %d", round);
		for (volatile int spin = 0; spin < 20000; spin++)
			;
		/* the last round stays until the callers were seen (a loaded machine) */
		for (int w = 0; round == 149 && w < 5000 &&
				!__atomic_load_n(&churn_returns, __ATOMIC_RELAXED); w++)
			usleep(1000);
		unregister_ftrace_graph(&gops_count);
	}
	callers_stop(th);
	cr_assert_gt(__atomic_load_n(&churn_entries, __ATOMIC_RELAXED), 0);
	/* every hooked return ran its callback or was unwound: never more returns */
	cr_assert_leq(churn_returns, churn_entries);
}

/*
 * Sites move between graph jmp mode (E9 to the site's stub: the graph ops
 * alone), the list caller (E8: a second ops joins) and the NOP while
 * threads run through them; every result must stay right and every site
 * must end as the NOP it started as.
 */
static long plain_hits;

static notrace void plain_cb(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			     struct ftrace_regs *fregs)
{
	__atomic_add_fetch(&plain_hits, 1, __ATOMIC_RELAXED);
}

static struct ftrace_ops plain_ops = { .func = plain_cb };

Test(fgraph, sites_change_mode_under_callers)
{
	static const void *fns[] = { fg_leaf, fg_parent, fg_tail, fg_tail_callee, fg_double };
	unsigned char before[5][5];
	pthread_t th[2];

	for (int i = 0; i < 5; i++)
		memcpy(before[i], (const void *)ftrace_location((unsigned long)fns[i]), 5);
	cr_assert_eq(ftrace_set_filter(&gops_count.ops, (unsigned char *)"fg_*", -1, 1), 0);
	cr_assert_eq(ftrace_set_filter(&plain_ops, (unsigned char *)"fg_leaf fg_tail_callee", -1,
				       1), 0);
	callers_start(th);
	for (int round = 0; round < 60; round++) {
		cr_assert_eq(register_ftrace_graph(&gops_count), 0, "round %d", round);
		usleep(500);
		cr_assert_eq(register_ftrace_function(&plain_ops), 0, "round %d", round);
		usleep(500);
		/* the last round stays until the callers were seen (a loaded machine) */
		for (int w = 0; round == 59 && w < 5000 &&
				!__atomic_load_n(&plain_hits, __ATOMIC_RELAXED); w++)
			usleep(1000);
		/* a live refilter of the graph ops while the other one shares sites */
		cr_assert_eq(ftrace_set_filter(&gops_count.ops,
					       (unsigned char *)(round & 1 ? "fg_leaf fg_parent" : "fg_*"),
					       -1, 1), 0);
		usleep(500);
		cr_assert_eq(unregister_ftrace_function(&plain_ops), 0, "round %d", round);
		usleep(500);
		unregister_ftrace_graph(&gops_count);
	}
	callers_stop(th);
	cr_assert_gt(__atomic_load_n(&plain_hits, __ATOMIC_RELAXED), 0);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(memcmp(before[i], (const void *)ftrace_location((unsigned long)fns[i]), 5),
			     0, "site %d is not the NOP it was", i);
}
