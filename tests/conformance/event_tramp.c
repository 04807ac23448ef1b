// SPDX-License-Identifier: MIT
/*
 * The per-ops trampoline that writes its ops' event itself (x86-64
 * ftrace_event_caller, arch/x86_64/entry.S; core/ops_event.h): for an ops
 * described with ftrace_ops_set_event(), a site's call writes the three
 * words the function tracer's callback would write, into a ring slot the
 * test owns, and every case the fast path does not take reaches the
 * callback instead, with nothing written.  docs/design.md, "The function
 * tracer's event trampoline".
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_common.h"
#include "core/ops_event.h"
#include "core/trace_clock.h"
#include "ring_buffer.h"

#define RING_WORDS	64UL
#define EV_BITS		((uint64_t)EV_FUNC << EV_TYPE_SHIFT)

TRACEE long et_func(long x)
{
	TRACEE_BODY();
	return x + 1;
}

TRACEE long et_args(long a, long b, long c, long d, long e, long f)
{
	TRACEE_BODY();
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

TRACEE double et_vsum(int n, ...)
{
	double s = 0;
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, double);
	va_end(ap);
	return s;
}

static __thread struct usft_tbuf *et_slot __attribute__((tls_model("initial-exec")));
static struct usft_tbuf et_ring;
static uint64_t et_data[RING_WORDS];
static const volatile unsigned int et_cpu = 5;
static int et_on = 1;
static unsigned long long et_base;
static struct trace_clock_state et_clock;
static _Atomic unsigned long cb_calls, cb2_calls;

static notrace void et_cb(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			  struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)op, (void)fregs;
	atomic_fetch_add(&cb_calls, 1);
}

static notrace void et_cb2(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			   struct ftrace_regs *fregs)
{
	(void)ip, (void)pip, (void)op, (void)fregs;
	atomic_fetch_add(&cb2_calls, 1);
}

static struct ftrace_ops et_ops = { .func = et_cb };
static struct ftrace_ops_event et_event = { .ops = &et_ops };

static notrace unsigned long long tsc(void)
{
	unsigned int lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((unsigned long long)hi << 32) | lo;
}

/* a fresh ring slot, a counter clock that reads the TSC as it is */
static void et_setup(void)
{
	memset(&et_ring, 0, sizeof(et_ring));
	memset(et_data, 0, sizeof(et_data));
	et_ring.size = RING_WORDS * 8;
	et_ring.wmask = RING_WORDS - 1;
	et_ring.data = et_data;
	et_ring.limit = RING_WORDS * 8;
	et_ring.cpu = &et_cpu;
	et_slot = &et_ring;
	et_on = 1;
	et_base = 0;
	et_clock = (struct trace_clock_state){ .mult = 1ULL << 32, .kind = CLOCK_KIND_COUNTER };
	et_event.on = &et_on;
	et_event.slot_tpoff = (unsigned long)((char *)&et_slot - (char *)__builtin_thread_pointer());
	et_event.clock = &et_clock;
	et_event.base = &et_base;
	et_event.w1_bits = EV_BITS;
	atomic_store(&cb_calls, 0);
	atomic_store(&cb2_calls, 0);
}

static bool option_on(const char *name)
{
	char buf[16];

	return usft_get_option(name, buf, sizeof(buf)) >= 0 && !strcmp(buf, "1");
}

/*
 * whether the site's ops gets an event trampoline in this configuration
 * (per_callsite_ops too: a site with one ops calls the ops' trampoline)
 */
static bool fast_expected(void)
{
	return option_on("event_tramp") && option_on("ops_trampolines");
}

static struct usft_stats stats(void)
{
	struct usft_stats st = { .sz = sizeof(st) };

	cr_assert_eq(usft_stat(&st), 0);
	return st;
}

static void et_start(void)
{
	et_setup();
	cr_assert_eq(usft_init(), 0);
	ftrace_ops_set_event(&et_event);
	cr_assert_eq(tc_set_filter(&et_ops, "et_func et_args et_vsum", 1), 0);
	cr_assert_eq(register_ftrace_function(&et_ops), 0);
	cr_assert(tc_is_call(et_func));
	cr_assert_eq(stats().nr_event_trampolines, fast_expected() ? 1UL : 0UL);
}

/* a static ops keeps its trampolines for its next registration (the kernel's) */
static void et_stop(void)
{
	cr_assert_eq(unregister_ftrace_function(&et_ops), 0);
	cr_assert(!tc_is_call(et_func));
}

static notrace __attribute__((noinline)) long call_et_func(long x)
{
	long r = et_func(x);

	__asm__ __volatile__("" ::: "memory");
	return r;
}

/* the event at word index @i: et_func's site, a parent inside call_et_func() */
static void check_event(unsigned long i, unsigned long long t_lo, unsigned long long t_hi)
{
	uint64_t w0 = et_data[i & (RING_WORDS - 1)], w1 = et_data[(i + 1) & (RING_WORDS - 1)];
	uint64_t w2 = et_data[(i + 2) & (RING_WORDS - 1)];
	unsigned long long ts = w0 & EV_TS_MASK;

	cr_assert_eq(w1, (tc_site(et_func) & EV_IP_MASK) | EV_BITS, "w1 %#lx", (unsigned long)w1);
	cr_assert(w2 > (uintptr_t)call_et_func && w2 < (uintptr_t)call_et_func + 64,
		  "parent %#lx", (unsigned long)w2);
	cr_assert_eq(w0 >> EV_CPU_SHIFT, 5U);
	cr_assert(ts >= (t_lo & EV_TS_MASK) && ts <= (t_hi & EV_TS_MASK),
		  "ts %llu outside [%llu, %llu]", ts, t_lo & EV_TS_MASK, t_hi & EV_TS_MASK);
}

Test(event_tramp, writes_the_callbacks_event_itself)
{
	unsigned long long t0, t1;

	et_start();
	t0 = tsc();
	for (long i = 0; i < 3; i++)
		cr_assert_eq(call_et_func(i), i + 1);
	t1 = tsc();
	if (!fast_expected()) {
		cr_assert_eq(atomic_load(&cb_calls), 3UL);
		cr_assert_eq(et_ring.head, 0UL);
		et_stop();
		return;
	}
	cr_assert_eq(atomic_load(&cb_calls), 0UL, "the fast path called the callback");
	cr_assert_eq(et_ring.head, 9 * 8UL);
	cr_assert_eq(et_ring.commit, 9 * 8UL);
	cr_assert_eq(et_ring.nest, 0U);
	cr_assert_eq(et_ring.reserving, 0U);
	for (unsigned long e = 0; e < 3; e++)
		check_event(3 * e, t0, t1);
	et_stop();
}

Test(event_tramp, the_base_is_taken_off_the_timestamp)
{
	unsigned long long t0, t1;

	et_start();
	if (!fast_expected())
		return;
	et_base = tsc() - 1000000;
	t0 = tsc() - et_base;
	call_et_func(1);
	t1 = tsc() - et_base;
	check_event(0, t0, t1);
	et_stop();
}

Test(event_tramp, arguments_and_rax_reach_the_function)
{
	et_start();
	cr_assert_eq(et_args(1, 2, 3, 4, 5, 6), 1 + 4 + 9 + 16 + 25 + 36);
	cr_assert_eq(et_vsum(3, 0.5, 1.5, 2.0), 4.0);
	if (fast_expected())
		cr_assert_eq(et_ring.head, 6 * 8UL);
	et_stop();
}

Test(event_tramp, tracing_off_writes_nothing_and_calls_nothing)
{
	et_start();
	et_on = 0;
	call_et_func(1);
	cr_assert_eq(et_ring.head, 0UL);
	if (fast_expected())
		cr_assert_eq(atomic_load(&cb_calls), 0UL);
	et_stop();
}

/* each of these is the callback's case: it is called once, the ring untouched */
static void expect_callback_only(void)
{
	call_et_func(1);
	cr_assert_eq(atomic_load(&cb_calls), 1UL);
	cr_assert_eq(et_ring.head, 0UL);
	cr_assert_eq(et_data[0], 0UL);
}

Test(event_tramp, a_thread_without_a_slot_takes_the_callback)
{
	et_start();
	et_slot = NULL;
	expect_callback_only();
	et_slot = USFT_TBUF_SELF;
	call_et_func(1);
	cr_assert_eq(atomic_load(&cb_calls), 2UL);
	et_stop();
}

Test(event_tramp, a_nested_event_takes_the_callback)
{
	et_start();
	et_ring.nest = 1;
	expect_callback_only();
	cr_assert_eq(et_ring.nest, 1U);
	et_ring.nest = 0;
	et_ring.reserving = 1;
	call_et_func(1);
	cr_assert_eq(atomic_load(&cb_calls), 2UL);
	cr_assert_eq(et_ring.reserving, 1U);
	et_ring.reserving = 0;
	et_stop();
}

Test(event_tramp, a_full_ring_takes_the_callback_and_publishes)
{
	et_start();
	if (!fast_expected())
		return;
	et_ring.limit = 16;
	expect_callback_only();
	cr_assert_eq(et_ring.nest, 0U);
	cr_assert_eq(et_ring.reserving, 0U);
	cr_assert_eq(et_ring.commit, 0UL);
	et_stop();
}

Test(event_tramp, a_clock_it_cannot_read_takes_the_callback)
{
	et_start();
	et_clock.kind = CLOCK_KIND_MONO;
	expect_callback_only();
	et_stop();
}

Test(event_tramp, the_event_wraps_at_the_ring_end)
{
	unsigned long long t0, t1;

	et_start();
	if (!fast_expected())
		return;
	et_ring.head = et_ring.commit = (RING_WORDS - 1) * 8;
	et_ring.limit = et_ring.head + RING_WORDS * 8;
	t0 = tsc();
	call_et_func(1);
	t1 = tsc();
	cr_assert_eq(et_ring.head, (RING_WORDS + 2) * 8);
	check_event(RING_WORDS - 1, t0, t1);
	et_stop();
}

/* a pvclock page as a KVM host writes it: ns = system_time + scaled (tsc - tsc_timestamp) */
static struct arch_pvclock et_pv __attribute__((aligned(64)));

Test(event_tramp, the_pvclock_is_read_with_its_signed_shift)
{
	unsigned long long now;
	uint64_t ts;

	et_start();
	if (!fast_expected())
		return;
	now = tsc();
	et_pv = (struct arch_pvclock){ .version = 2, .tsc_timestamp = now, .system_time = 1ULL << 40,
				       .tsc_to_system_mul = 1U << 31, .tsc_shift = 1,
				       .flags = PVCLOCK_TSC_STABLE_BIT };
	et_clock.kind = CLOCK_KIND_PVCLOCK;
	et_clock.pvti = &et_pv;
	et_clock.pv_off = 5000;
	/* shift 1, mul 2^31: ns = sys + (tsc - origin) + pv_off */
	call_et_func(1);
	ts = et_data[0] & EV_TS_MASK;
	cr_assert(ts >= (1ULL << 40) + 5000 && ts < (1ULL << 40) + 5000 + (tsc() - now) + 1,
		  "ts %llu", (unsigned long long)ts);
	/* shift -1: a quarter of the cycles */
	et_pv.tsc_shift = -1;
	et_pv.tsc_timestamp = now = tsc();
	call_et_func(1);
	ts = et_data[3] & EV_TS_MASK;
	cr_assert(ts >= (1ULL << 40) + 5000 && ts <= (1ULL << 40) + 5000 + (tsc() - now) / 4 + 1,
		  "ts %llu", (unsigned long long)ts);
	/* a TSC before the page's: counted from the page's own time */
	et_pv.tsc_shift = 0;
	et_pv.tsc_timestamp = tsc() + (1ULL << 40);
	call_et_func(1);
	cr_assert_eq(et_data[6] & EV_TS_MASK, (1ULL << 40) + 5000);
	cr_assert_eq(atomic_load(&cb_calls), 0UL);
	/* the host took the stable bit away: the callback reads the vDSO */
	et_pv.flags = 0;
	call_et_func(1);
	cr_assert_eq(atomic_load(&cb_calls), 1UL);
	cr_assert_eq(et_ring.head, 9 * 8UL);
	et_stop();
}

Test(event_tramp, a_changed_callback_is_called_not_bypassed)
{
	et_start();
	cr_assert_eq(unregister_ftrace_function(&et_ops), 0);
	et_ops.func = et_cb2;
	cr_assert_eq(register_ftrace_function(&et_ops), 0);
	call_et_func(1);
	cr_assert_eq(atomic_load(&cb2_calls), 1UL);
	cr_assert_eq(et_ring.head, 0UL);
	cr_assert_eq(unregister_ftrace_function(&et_ops), 0);
	et_ops.func = et_cb;
}

Test(event_tramp, an_ops_that_is_not_described_gets_none)
{
	static struct ftrace_ops plain = { .func = et_cb };

	et_setup();
	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(tc_set_filter(&plain, "et_func", 1), 0);
	cr_assert_eq(register_ftrace_function(&plain), 0);
	cr_assert_eq(stats().nr_event_trampolines, 0UL);
	call_et_func(1);
	cr_assert_eq(atomic_load(&cb_calls), 1UL);
	cr_assert_eq(et_ring.head, 0UL);
	cr_assert_eq(unregister_ftrace_function(&plain), 0);
}

/* describing again: the newest description stays the ops' own, and the list stays a list */
Test(event_tramp, describing_again_keeps_the_newest_description, .timeout = 30)
{
	static struct ftrace_ops_event other = { .ops = &et_ops };
	static struct ftrace_ops plain = { .func = et_cb };
	static int off;

	et_setup();
	cr_assert_eq(usft_init(), 0);
	other = et_event;
	other.next = NULL;
	other.on = &off;
	ftrace_ops_set_event(&et_event);
	ftrace_ops_set_event(&other);
	ftrace_ops_set_event(&et_event);
	/* an ops with no description walks the whole list */
	cr_assert_eq(tc_set_filter(&plain, "et_args", 1), 0);
	cr_assert_eq(register_ftrace_function(&plain), 0);
	cr_assert_eq(unregister_ftrace_function(&plain), 0);
	cr_assert_eq(tc_set_filter(&et_ops, "et_func", 1), 0);
	cr_assert_eq(register_ftrace_function(&et_ops), 0);
	call_et_func(1);
	if (fast_expected()) {
		/* "other" says tracing is off: nothing written, nothing called */
		cr_assert_eq(et_ring.head, 0UL);
		cr_assert_eq(atomic_load(&cb_calls), 0UL);
	}
	et_stop();
}

/*
 * Signals: a handler's call that lands inside the thread's own event is
 * the callback's (nested), anywhere else it writes its own; every call is
 * either a whole event in the ring or one callback call, never both,
 * never neither.
 */
static _Atomic bool et_stop_flag;
static _Atomic unsigned long et_handler_calls;
static pthread_t et_target;

static notrace void et_handler(int sig)
{
	(void)sig;
	call_et_func(2);
	atomic_fetch_add(&et_handler_calls, 1);
}

static notrace void *et_kicker(void *arg)
{
	(void)arg;
	while (!atomic_load(&et_stop_flag)) {
		pthread_kill(et_target, SIGUSR1);
		usleep(20);
	}
	return NULL;
}

#define BIG_WORDS (1UL << 20)

Test(event_tramp, signal_handlers_never_break_an_event, .timeout = 60)
{
	struct sigaction sa = { .sa_handler = et_handler, .sa_flags = SA_RESTART };
	uint64_t *big = calloc(BIG_WORDS, 8);
	unsigned long calls = 0, events;
	pthread_t k;

	cr_assert_not_null(big);
	et_start();
	et_ring.data = big;
	et_ring.size = BIG_WORDS * 8;
	et_ring.wmask = BIG_WORDS - 1;
	et_ring.limit = BIG_WORDS * 8;
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	et_target = pthread_self();
	atomic_store(&et_stop_flag, false);
	cr_assert_eq(pthread_create(&k, NULL, et_kicker, NULL), 0);
	/* room for every event: stop well before the ring would wrap */
	while (et_ring.head < (BIG_WORDS - 4096) * 8 && calls < 200000) {
		call_et_func(1);
		calls++;
	}
	atomic_store(&et_stop_flag, true);
	pthread_join(k, NULL);
	signal(SIGUSR1, SIG_IGN);
	cr_assert_eq(et_ring.nest, 0U);
	cr_assert_eq(et_ring.commit, et_ring.head);
	events = et_ring.head / 24;
	cr_assert_eq(et_ring.head % 24, 0UL);
	for (unsigned long e = 0; e < events; e++)
		cr_assert_eq(big[3 * e + 1], (tc_site(et_func) & EV_IP_MASK) | EV_BITS,
			     "event %lu", e);
	cr_assert_eq(events + atomic_load(&cb_calls), calls + atomic_load(&et_handler_calls),
		     "%lu events + %lu callbacks for %lu + %lu calls", events,
		     (unsigned long)atomic_load(&cb_calls), calls,
		     (unsigned long)atomic_load(&et_handler_calls));
	et_stop();
	free(big);
}
