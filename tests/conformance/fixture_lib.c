// SPDX-License-Identifier: MIT
/*
 * fixture_lib.c - a dlopen()able object built with the patch flags for
 * dlopen.c: its functions are sites that appear and disappear with the
 * object (the kernel's module load/unload).
 */
#if defined(__clang__)
#define FIXTURE_FN __attribute__((noinline, used, visibility("default")))
#else
#if defined(__clang__)
#define FIXTURE_FN __attribute__((noinline, used, visibility("default")))
#else
#define FIXTURE_FN __attribute__((noinline, noipa, used, visibility("default")))
#endif
#endif

FIXTURE_FN long cf_dlfix_add(long a, long b)
{
	asm volatile("" ::: "memory");
	return a + b;
}

FIXTURE_FN long cf_dlfix_mul(long a, long b)
{
	asm volatile("" ::: "memory");
	return a * b;
}

/* Calls the other two, so a traced call chain crosses the object. */
FIXTURE_FN long cf_dlfix_combo(long x)
{
	asm volatile("" ::: "memory");
	return cf_dlfix_add(x, 1) + cf_dlfix_mul(x, 2);
}
