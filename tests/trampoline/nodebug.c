// SPDX-License-Identifier: MIT
/*
 * A traced function in an object built without debug information (-g0,
 * see CMakeLists.txt): no DWARF model, so nr_args -1 gives ENOENT.
 */
#if defined(__clang__)
#define TRACEE_ND __attribute__((noinline, used))
#else
#define TRACEE_ND __attribute__((noinline, noipa, used))
#endif

long tr_nodbg_mul(long a, long b);

TRACEE_ND long tr_nodbg_mul(long a, long b)
{
	__asm__ volatile("" ::: "memory");
	return a * b + 1;
}
