// SPDX-License-Identifier: MIT
/*
 * core/trace_clock.c - the clock of the tracers and of fgraph's
 * calltime/rettime (the kernel's kernel/trace/trace_clock.c):
 * usft_trace_clock(), usft_set_trace_clock(), usft_trace_clock_name().
 *
 * "counter": the arch's cycle counter (asm/trace_clock.h), calibrated
 * against CLOCK_MONOTONIC over 2 ms.  "mono": clock_gettime(CLOCK_MONOTONIC)
 * on every read.  "auto" (the default): the counter when the kernel trusts
 * it too (it is the current clocksource, so one thread's events stay in
 * order across CPUs), else mono.
 * The read itself is trace_clock_local() in trace_clock.h.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <usft/fgraph.h>
#include "core/internal.h"
#include "core/trace_clock.h"

struct trace_clock_state usft_tclock;
static pthread_once_t tclock_once = PTHREAD_ONCE_INIT;
static int tclock_ready;
static int tclock_want;		/* 0 auto, 1 mono, 2 counter */
static pthread_mutex_t tclock_lock = PTHREAD_MUTEX_INITIALIZER;

#if HAVE_ARCH_TRACE_CYCLES
#define TCLOCK_SKEW	(1ULL << 24)	/* counts: milliseconds at any clock rate */

/* one (counter, ns) pair: the tightest bracket of 8 tries */
static void clock_pair(unsigned long long *c, unsigned long long *t)
{
	unsigned long long best = ~0ULL;

	for (int i = 0; i < 8; i++) {
		unsigned long long a = mono_ns();
		unsigned long long cc = arch_trace_cycles();
		unsigned long long b = mono_ns();

		if (b - a < best) {
			best = b - a;
			*c = cc;
			*t = a + (b - a) / 2;
		}
	}
}

/*
 * Events of one thread are put in time order across CPUs, so the counter
 * must agree between CPUs: trust it when the kernel does, i.e. when it is
 * the current clocksource (the kernel drops a counter it finds unsynchronised).
 */
static bool kernel_uses_counter(void)
{
	char buf[32] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");

	if (!f)
		return true;	/* no sysfs: the CPUID check alone */
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return !strcmp(buf, ARCH_TRACE_CLOCKSOURCE);
}

static bool tclock_calibrate_counter(void)
{
	unsigned long long c0, t0, c1, t1;

	if (!arch_trace_cycles_usable() || (tclock_want != 2 && !kernel_uses_counter()))
		return false;
	clock_pair(&c0, &t0);
	/* 2 ms window: a few ppm, i.e. microseconds per second of trace */
	while (mono_ns() - t0 < 2000000)
		;
	clock_pair(&c1, &t1);
	if (c1 <= c0 || t1 <= t0)
		return false;
	usft_tclock.mult = ((t1 - t0) << 32) / (c1 - c0);
	/*
	 * The origin is moved back by TCLOCK_SKEW counts, so that a counter
	 * read a little behind c1 (another CPU's, just after calibration)
	 * still gives a positive delta: the hot path converts unsigned.
	 */
	usft_tclock.c0 = c1 - TCLOCK_SKEW;
	usft_tclock.t0 = t1 - (unsigned long long)(((unsigned __int128)TCLOCK_SKEW *
						     usft_tclock.mult) >> 32);
	return usft_tclock.mult != 0;
}
#else
static bool tclock_calibrate_counter(void)
{
	return false;
}
#endif

static void tclock_init(void)
{
	int kind = CLOCK_KIND_MONO;

	if (tclock_want != 1 && tclock_calibrate_counter())
		kind = CLOCK_KIND_COUNTER;
	smp_store_release(&usft_tclock.kind, kind);
	smp_store_release(&tclock_ready, 1);
}

void trace_clock_setup(void)
{
	pthread_once(&tclock_once, tclock_init);
}

USFT_API unsigned long long usft_trace_clock(void)
{
	if (unlikely(!smp_load_acquire(&tclock_ready)))
		trace_clock_setup();
	return trace_clock_local();
}

USFT_API int usft_set_trace_clock(const char *name)
{
	int want, ret = 0;

	if (!name)
		return usft_err(-EINVAL);
	if (!strcmp(name, "auto"))
		want = 0;
	else if (!strcmp(name, "mono"))
		want = 1;
	else if (!strcmp(name, "counter"))
		want = 2;
	else
		return usft_err(-EINVAL);
	pthread_mutex_lock(&tclock_lock);
	trace_clock_setup();
	tclock_want = want;
	if (want == 1) {
		WRITE_ONCE(usft_tclock.kind, CLOCK_KIND_MONO);
	} else if (usft_tclock.kind != CLOCK_KIND_COUNTER) {
		if (tclock_calibrate_counter())
			smp_store_release(&usft_tclock.kind, CLOCK_KIND_COUNTER);
		else if (want == 2)
			ret = -EOPNOTSUPP;
	}
	pthread_mutex_unlock(&tclock_lock);
	return usft_err(ret);
}

/* calibrated on return (trace_clock.h) */
USFT_API const struct trace_clock_state *usft_trace_clock_state(void)
{
	trace_clock_setup();
	return &usft_tclock;
}

USFT_API const char *usft_trace_clock_name(void)
{
	trace_clock_setup();
	return READ_ONCE(usft_tclock.kind) == CLOCK_KIND_COUNTER ? "counter" : "mono";
}
