// SPDX-License-Identifier: MIT
/*
 * core/trace_clock.c - the clock of the tracers and of fgraph's
 * calltime/rettime (the kernel's kernel/trace/trace_clock.c):
 * usft_trace_clock(), usft_set_trace_clock(), usft_trace_clock_name().
 *
 * "counter": the arch's cycle counter (asm/trace_clock.h), calibrated
 * against CLOCK_MONOTONIC over 2 ms.  "pvclock" (x86-64 KVM guests): the
 * host's paravirtual clock page that the vDSO maps (what the kernel's
 * trace_clock_local() reads on such a guest), moved onto CLOCK_MONOTONIC by
 * an offset.  "mono": clock_gettime(CLOCK_MONOTONIC) on every read.
 * "auto" (the default): the counter when the kernel trusts it too (it is
 * the current clocksource, so one thread's events stay in order across
 * CPUs), else the pvclock when it is (kvm-clock), else mono.
 * The read itself is trace_clock_local() in trace_clock.h.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <usft/fgraph.h>
#include "core/internal.h"
#include "core/trace_clock.h"

/* an arch whose trampolines write events (x86-64: ftrace_event_caller) */
#if __has_include("asm/event.h")
#include <stddef.h>
#include "asm/event.h"
/* what ftrace_event_caller (arch/x86_64/entry.S) reads of the clock */
_Static_assert(offsetof(struct trace_clock_state, c0) == EVT_CLK_C0 &&
	       offsetof(struct trace_clock_state, t0) == EVT_CLK_T0 &&
	       offsetof(struct trace_clock_state, mult) == EVT_CLK_MULT &&
	       offsetof(struct trace_clock_state, kind) == EVT_CLK_KIND &&
	       offsetof(struct trace_clock_state, pvti) == EVT_CLK_PVTI &&
	       offsetof(struct trace_clock_state, pv_off) == EVT_CLK_PVOFF &&
	       CLOCK_KIND_COUNTER == EVT_KIND_COUNTER && CLOCK_KIND_PVCLOCK == EVT_KIND_PVCLOCK,
	       "asm/event.h: struct trace_clock_state");
_Static_assert(offsetof(struct arch_pvclock, version) == EVT_PV_VERSION &&
	       offsetof(struct arch_pvclock, tsc_timestamp) == EVT_PV_TSC &&
	       offsetof(struct arch_pvclock, system_time) == EVT_PV_SYS &&
	       offsetof(struct arch_pvclock, tsc_to_system_mul) == EVT_PV_MUL &&
	       offsetof(struct arch_pvclock, tsc_shift) == EVT_PV_SHIFT &&
	       offsetof(struct arch_pvclock, flags) == EVT_PV_FLAGS &&
	       PVCLOCK_TSC_STABLE_BIT == EVT_PV_STABLE,
	       "asm/event.h: struct arch_pvclock");
#endif

struct trace_clock_state usft_tclock;
static pthread_once_t tclock_once = PTHREAD_ONCE_INIT;
static int tclock_ready;
static int tclock_want;		/* 0 auto, 1 mono, 2 counter, 3 pvclock */
static const char *const tclock_names[] = { "auto", "mono", "counter", "pvclock" };
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
 * No sysfs: @nosys (the CPUID check alone for the counter).
 */
static bool kernel_uses(const char *clocksource, bool nosys)
{
	char buf[32] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");

	if (!f)
		return nosys;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return !strcmp(buf, clocksource);
}

static bool tclock_calibrate_counter(void)
{
	unsigned long long c0, t0, c1, t1;

	if (!arch_trace_cycles_usable() || (tclock_want != 2 && !kernel_uses(ARCH_TRACE_CLOCKSOURCE, true)))
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

#if HAVE_ARCH_PVCLOCK
/*
 * Where the vDSO maps the pvclock page: the first page of [vvar_vclock]
 * (the kernel's vvar_vclock_mapping, 6.13 on), or the second of [vvar]
 * before (pvclock_page = vvar_start + PAGE_SIZE in vdso-layout.lds.S).
 * Either is only a candidate: tclock_calibrate_pvclock() checks it.
 */
static const void *pvclock_page(void)
{
	char line[512];
	unsigned long lo, hi, vclock = 0, vvar = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		char *name = strchr(line, '[');

		if (!name || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		if (!strcmp(name, "[vvar_vclock]\n"))
			vclock = lo;
		else if (!strcmp(name, "[vvar]\n") && hi - lo >= 2 * (unsigned long)getpagesize())
			vvar = lo + getpagesize();
	}
	fclose(f);
	return (const void *)(vclock ? vclock : vvar);
}

/*
 * The page can be read without a fault: a vvar page the kernel does not
 * fill raises SIGBUS on a load, but only EFAULT in write() from it.
 */
static bool readable(const void *p, size_t len)
{
	int fd[2];
	bool ok;

	if (pipe2(fd, O_CLOEXEC))
		return false;
	ok = write(fd[1], p, len) == (ssize_t)len;
	close(fd[0]);
	close(fd[1]);
	return ok;
}

/* CLOCK @id - pvclock, the tightest bracket of 8 tries; false: unstable */
static bool pvclock_offset(const void *pvti, clockid_t id, unsigned long long *off)
{
	unsigned long long best = ~0ULL;

	for (int i = 0; i < 8; i++) {
		struct timespec ta, tb;
		unsigned long long a, b, pv;

		clock_gettime(id, &ta);
		pv = arch_pvclock_read(pvti);
		clock_gettime(id, &tb);
		if (pv == ~0ULL)
			return false;
		a = (unsigned long long)ta.tv_sec * 1000000000ULL + ta.tv_nsec;
		b = (unsigned long long)tb.tv_sec * 1000000000ULL + tb.tv_nsec;
		if (b - a < best) {
			best = b - a;
			*off = a + (b - a) / 2 - pv;
		}
	}
	return true;
}

/*
 * Trust the page when the kernel's clocksource is kvm-clock (or the user
 * asked for it), the host says the TSC is stable, and its time runs with
 * CLOCK_MONOTONIC_RAW (which the kernel derives from it with a fixed
 * scale): the offset between the two moves by less than 1% of a 0.5 ms
 * wait (5 us; each offset is the best of several bracketed reads, good to
 * a fraction of a microsecond).  Anything else on the page (another
 * layout, another hypervisor) fails.  The wait is short because nothing
 * is fitted from it (the host's own scale is used) and every traced
 * process spends it at start-up.
 */
#define PVCLOCK_CHECK_NS	500000LL	/* signed: the drift is compared both ways */

static bool tclock_calibrate_pvclock(void)
{
	const struct arch_pvclock *p;
	unsigned long long r0, r1, m, t0;

	if (tclock_want != 3 && !kernel_uses(ARCH_PVCLOCK_CLOCKSOURCE, false))
		return false;
	p = pvclock_page();
	if (!p || !readable(p, sizeof(*p)) || !p->tsc_to_system_mul ||
	    p->tsc_shift < -31 || p->tsc_shift > 31 || !pvclock_offset(p, CLOCK_MONOTONIC_RAW, &r0))
		return false;
	t0 = mono_ns();
	while (mono_ns() - t0 < PVCLOCK_CHECK_NS)
		;
	if (!pvclock_offset(p, CLOCK_MONOTONIC_RAW, &r1) ||
	    (long long)(r1 - r0) > PVCLOCK_CHECK_NS / 100 ||
	    (long long)(r1 - r0) < -PVCLOCK_CHECK_NS / 100 ||
	    !pvclock_offset(p, CLOCK_MONOTONIC, &m))
		return false;
	usft_tclock.pvti = p;
	usft_tclock.pv_off = m;
	return true;
}
#else
static bool tclock_calibrate_pvclock(void)
{
	return false;
}
#endif

/* the clock @want asks for (0 auto: the first that calibrates) */
static int tclock_pick(int want)
{
	if ((want == 0 || want == 2) && tclock_calibrate_counter())
		return CLOCK_KIND_COUNTER;
	if ((want == 0 || want == 3) && tclock_calibrate_pvclock())
		return CLOCK_KIND_PVCLOCK;
	return CLOCK_KIND_MONO;
}

static void tclock_init(void)
{
	smp_store_release(&usft_tclock.kind, tclock_pick(tclock_want));
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

static int tclock_lookup(const char *name)
{
	for (int i = 0; name && i < (int)ARRAY_SIZE(tclock_names); i++)
		if (!strcmp(name, tclock_names[i]))
			return i;
	return -1;
}

USFT_API bool usft_trace_clock_known(const char *name)
{
	return tclock_lookup(name) >= 0;
}

/* the kind that @want would keep as it is */
static bool tclock_keeps(int want, int kind)
{
	switch (want) {
	case 0:
		return kind != CLOCK_KIND_MONO;	/* auto found the best already */
	case 2:
		return kind == CLOCK_KIND_COUNTER;
	case 3:
		return kind == CLOCK_KIND_PVCLOCK;
	}
	return false;
}

/*
 * A clock that is already in use is not calibrated again: readers that are
 * running keep a single time line.  A kind that does not calibrate leaves
 * the clock as it was and says -EOPNOTSUPP; "auto" then falls to mono.
 */
USFT_API int usft_set_trace_clock(const char *name)
{
	int want = tclock_lookup(name), kind, ret = 0;

	if (want < 0)
		return usft_err(-EINVAL);
	pthread_mutex_lock(&tclock_lock);
	trace_clock_setup();
	tclock_want = want;
	kind = READ_ONCE(usft_tclock.kind);
	if (want == 1) {
		WRITE_ONCE(usft_tclock.kind, CLOCK_KIND_MONO);
	} else if (!tclock_keeps(want, kind)) {
		/* the new calibration's fields are stored before its kind */
		kind = tclock_pick(want);
		if (kind != CLOCK_KIND_MONO)
			smp_store_release(&usft_tclock.kind, kind);
		else if (want != 0)
			ret = -EOPNOTSUPP;	/* auto here was mono already, and stays */
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
	switch (READ_ONCE(usft_tclock.kind)) {
	case CLOCK_KIND_COUNTER:
		return "counter";
	case CLOCK_KIND_PVCLOCK:
		return "pvclock";
	}
	return "mono";
}
