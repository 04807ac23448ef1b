// SPDX-License-Identifier: MIT
/*
 * Traced functions built with -fcf-protection=full (see CMakeLists.txt):
 * each starts with ENDBR64 and its site follows it (function + 4).
 */
#if defined(__clang__)
#define TRACEE_CET __attribute__((noinline, used))
#else
#define TRACEE_CET __attribute__((noinline, noipa, used))
#endif

long tr_cet_add(long a, long b);
double tr_cet_fp(double x, long n);

TRACEE_CET long tr_cet_add(long a, long b)
{
	__asm__ volatile("" ::: "memory");
	return a + b;
}

TRACEE_CET double tr_cet_fp(double x, long n)
{
	__asm__ volatile("" ::: "memory");
	return x * (double)n;
}
