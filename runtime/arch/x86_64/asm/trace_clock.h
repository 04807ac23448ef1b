/* SPDX-License-Identifier: MIT */
/*
 * arch/x86_64/asm/trace_clock.h - the cycle counter behind usft_trace_clock()
 * (the kernel's sched_clock()/trace_clock_local() on the TSC).
 *
 * Plain RDTSC, no fence: like trace_clock_local(), ordering against the
 * surrounding instructions does not matter for tracing, and the fenced
 * forms cost twice as much in a VM.
 */
#ifndef USFT_X86_64_ASM_TRACE_CLOCK_H
#define USFT_X86_64_ASM_TRACE_CLOCK_H

#include <cpuid.h>
#include <stdbool.h>

/* the kernel clocksource that is this counter (it is in use only when the
 * kernel found it synchronised across CPUs) */
#define ARCH_TRACE_CLOCKSOURCE	"tsc"

static inline __attribute__((always_inline)) unsigned long long arch_trace_cycles(void)
{
	unsigned int lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((unsigned long long)hi << 32) | lo;
}

/* invariant TSC: CPUID 0x80000007 EDX bit 8 (constant rate, runs in C-states) */
static inline bool arch_trace_cycles_usable(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(0x80000007, &a, &b, &c, &d))
		return false;
	return d & (1u << 8);
}

/*
 * The KVM guest's paravirtual clock (the kernel's pvclock_clocksource_read()
 * in arch/x86/kernel/pvclock.c, through its vDSO page as vread_pvclock() in
 * arch/x86/include/asm/vdso/gettimeofday.h reads it): the host publishes a
 * TSC origin, the system time at it and the TSC's scale; the time is the
 * scaled TSC delta added to that system time.  This is what the kernel's
 * own trace_clock_local() reads on a KVM guest (kvm_sched_clock_read()).
 *
 * The layout is the ABI between KVM and its guests (struct
 * pvclock_vcpu_time_info, arch/x86/include/asm/pvclock-abi.h).
 */
#define HAVE_ARCH_PVCLOCK	1
#define ARCH_PVCLOCK_CLOCKSOURCE	"kvm-clock"
#define PVCLOCK_TSC_STABLE_BIT	(1 << 0)

struct arch_pvclock {
	unsigned int version;		/* odd while the host writes */
	unsigned int pad0;
	unsigned long long tsc_timestamp;
	unsigned long long system_time;
	unsigned int tsc_to_system_mul;
	signed char tsc_shift;
	unsigned char flags;
	unsigned char pad[2];
} __attribute__((__packed__));

/*
 * ns of the host's system time, or ~0ULL when the host does not (or no
 * longer) say the TSC is stable across vCPUs, which the vDSO's read needs
 * too.  The sequence lock is the version; loads are not reordered with
 * loads on x86, so compiler barriers order them.  No fence before RDTSC
 * (as arch_trace_cycles()): a TSC read a little before the host's new
 * origin gives a negative delta, counted as zero, not as a wrapped one.
 */
static inline __attribute__((always_inline)) unsigned long long
arch_pvclock_read(const volatile struct arch_pvclock *p)
{
	unsigned long long origin, sys, tsc, d;
	unsigned int v, mul;
	signed char shift;
	unsigned char flags;

	do {
		v = p->version;
		__asm__ __volatile__("" ::: "memory");
		origin = p->tsc_timestamp;
		sys = p->system_time;
		mul = p->tsc_to_system_mul;
		shift = p->tsc_shift;
		flags = p->flags;
		tsc = arch_trace_cycles();
		__asm__ __volatile__("" ::: "memory");
	} while (__builtin_expect((v & 1) || v != p->version, 0));
	if (__builtin_expect(!(flags & PVCLOCK_TSC_STABLE_BIT), 0))
		return ~0ULL;
	d = (long long)(tsc - origin) < 0 ? 0 : tsc - origin;
	d = shift < 0 ? d >> -shift : d << shift;
	return sys + (unsigned long long)(((unsigned __int128)d * mul) >> 32);
}

#endif /* USFT_X86_64_ASM_TRACE_CLOCK_H */
