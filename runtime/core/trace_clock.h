/* SPDX-License-Identifier: MIT */
/*
 * core/trace_clock.h - the trace clock's hot path (the kernel's
 * trace_clock_local() in kernel/trace/trace_clock.c), inline for the
 * function graph hook (fgraph.c) and usft_trace_clock() (trace_clock.c).
 *
 * Nanoseconds on the CLOCK_MONOTONIC time line: the arch's cycle counter
 * (asm/trace_clock.h: arch_trace_cycles()) scaled by a calibration, a KVM
 * guest's pvclock page (arch_pvclock_read()) moved by an offset, or
 * clock_gettime() itself where neither can be trusted.  No lock, no
 * allocation, no errno change.
 */
#ifndef USFT_CORE_TRACE_CLOCK_H
#define USFT_CORE_TRACE_CLOCK_H

#include <time.h>
#include "compat/compiler.h"

#if __has_include("asm/trace_clock.h")
#include "asm/trace_clock.h"
#define HAVE_ARCH_TRACE_CYCLES 1
#else
#define HAVE_ARCH_TRACE_CYCLES 0
#endif

enum trace_clock_kind { CLOCK_KIND_MONO, CLOCK_KIND_COUNTER, CLOCK_KIND_PVCLOCK };

#ifndef HAVE_ARCH_PVCLOCK
#define HAVE_ARCH_PVCLOCK 0
#endif

/* the calibration (trace_clock.c); @kind changes only under its lock */
struct trace_clock_state {
	unsigned long long c0;		/* counter at the calibration point */
	unsigned long long t0;		/* CLOCK_MONOTONIC ns at the same point */
	unsigned long long mult;	/* ns per count << 32 */
	int kind;			/* enum trace_clock_kind */
	const void *pvti;		/* pvclock: the vDSO's page (trace_clock.c) */
	unsigned long long pv_off;	/* CLOCK_MONOTONIC - pvclock, ns mod 2^64 */
};
extern struct trace_clock_state usft_tclock __hidden;	/* direct, not through the GOT */
/*
 * usft_tclock for the preload shim (exported, libusft.map USFT_PRIVATE):
 * its function tracer reads the clock inline through this pointer instead
 * of calling usft_trace_clock() through the PLT.  A function, not the
 * object itself: a program's reference to exported data would get a copy
 * relocation that the library, reading usft_tclock directly, never sees.
 */
const struct trace_clock_state *usft_trace_clock_state(void);

/* calibrate once (before the first trace_clock_local() that matters) */
void trace_clock_setup(void);

static inline unsigned long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * The read on calibration @s.  Before the calibration @s->kind is
 * CLOCK_KIND_MONO (zero), so a read that comes first is still right.
 */
static __always_inline unsigned long long trace_clock_read(const struct trace_clock_state *s)
{
#if HAVE_ARCH_TRACE_CYCLES
	if (likely(s->kind == CLOCK_KIND_COUNTER)) {
		unsigned long long d = arch_trace_cycles() - s->c0;

		return s->t0 + (unsigned long long)(((unsigned __int128)d * s->mult) >> 32);
	}
#endif
#if HAVE_ARCH_PVCLOCK
	if (likely(s->kind == CLOCK_KIND_PVCLOCK)) {
		unsigned long long ns = arch_pvclock_read(s->pvti);

		/* the host took the stable bit away: the vDSO's own clock */
		if (likely(ns != ~0ULL))
			return ns + s->pv_off;
	}
#endif
	return mono_ns();
}

static __always_inline unsigned long long trace_clock_local(void)
{
	return trace_clock_read(&usft_tclock);
}

#endif
