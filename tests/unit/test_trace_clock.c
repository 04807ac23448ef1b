// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_trace_clock.c - the pvclock read of the trace clock
 * (arch/x86_64/asm/trace_clock.h: arch_pvclock_read(), core/trace_clock.h:
 * trace_clock_read()) on pages built by hand: the host's scale with either
 * sign of shift, a TSC origin ahead of the TSC read (the delta counts as
 * zero, never as a wrapped one), the stable bit taken away (the read falls
 * back to CLOCK_MONOTONIC), and the offset onto the CLOCK_MONOTONIC line.
 * No vDSO page is read here; e2e_fgraph_api reads the real one.
 */
#include <time.h>

#include <criterion/criterion.h>

#include "core/trace_clock.h"

struct trace_clock_state usft_tclock;	/* trace_clock.h refers to it */

static struct arch_pvclock page(unsigned long long origin, unsigned long long sys,
				unsigned int mul, signed char shift)
{
	struct arch_pvclock p = {
		.version = 2, .tsc_timestamp = origin, .system_time = sys,
		.tsc_to_system_mul = mul, .tsc_shift = shift, .flags = PVCLOCK_TSC_STABLE_BIT,
	};

	return p;
}

static unsigned long long mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* scaled = ((delta << shift) * mul) >> 32, the host's fixed point */
Test(trace_clock, pvclock_scales_the_delta)
{
	unsigned long long now = arch_trace_cycles();
	/* origin 2^20 counts back; mul 2^31 (x0.5), shift +1 (x2): 1 ns a count */
	struct arch_pvclock a = page(now - (1ULL << 20), 1000, 1U << 31, 1);
	/* shift -1 (/2), mul 2^31 (x0.5): a quarter ns a count */
	struct arch_pvclock b = page(now - (1ULL << 20), 5000, 1U << 31, -1);
	unsigned long long rb = arch_pvclock_read(&b), ra = arch_pvclock_read(&a);

	cr_assert_geq(ra, 1000 + (1ULL << 20));
	cr_assert_lt(ra, 1000 + (1ULL << 20) + (1ULL << 36), "%llu", ra);
	cr_assert_geq(rb, 5000 + (1ULL << 18));
	/* b runs at a quarter of a's rate from the same origin, read first */
	cr_assert_lt(rb - 5000, (ra - 1000) / 4 + 2, "%llu %llu", ra, rb);
}

/* a TSC read behind the host's new origin: the system time, not 2^64 - n */
Test(trace_clock, pvclock_origin_ahead_counts_zero)
{
	struct arch_pvclock p = page(arch_trace_cycles() + (1ULL << 40), 123456789, 1U << 31, 1);

	cr_assert_eq(arch_pvclock_read(&p), 123456789);
}

Test(trace_clock, pvclock_without_stable_bit_is_refused)
{
	struct arch_pvclock p = page(arch_trace_cycles(), 42, 1U << 31, 1);

	p.flags = 0;
	cr_assert_eq(arch_pvclock_read(&p), ~0ULL);
}

/* the state's offset moves the page's time onto CLOCK_MONOTONIC's line */
Test(trace_clock, pvclock_state_adds_the_offset)
{
	struct arch_pvclock p = page(arch_trace_cycles(), 0, 1U << 31, 1);
	struct trace_clock_state s = { .kind = CLOCK_KIND_PVCLOCK, .pvti = &p };
	unsigned long long before, t;

	s.pv_off = mono() - arch_pvclock_read(&p);
	before = mono();
	t = trace_clock_read(&s);
	/* one TSC count is a ns at most on any x86-64 this runs on */
	cr_assert_geq(t + 1000000, before, "%llu %llu", t, before);
	cr_assert_lt(t, mono() + 1000000000ULL, "%llu", t);
}

/* the stable bit gone: the read is CLOCK_MONOTONIC's own */
Test(trace_clock, pvclock_state_falls_back_to_mono)
{
	struct arch_pvclock p = page(arch_trace_cycles(), 0, 1U << 31, 1);
	struct trace_clock_state s = { .kind = CLOCK_KIND_PVCLOCK, .pvti = &p, .pv_off = 1ULL << 62 };
	unsigned long long a, t, b;

	p.flags = 0;
	a = mono();
	t = trace_clock_read(&s);
	b = mono();
	cr_assert(a <= t && t <= b, "%llu %llu %llu", a, t, b);
}
