// SPDX-License-Identifier: MIT
/*
 * A patch-flagged object whose __patchable_function_entries table carries,
 * besides its real sites, two corrupt entries: one pointing at data and
 * one pointing at a function that has no NOPs (hand-written assembly).
 */
#if defined(__clang__)
#define FIXTURE_FN __attribute__((noinline, used, visibility("default")))
#else
#define FIXTURE_FN __attribute__((noinline, noipa, used, visibility("default")))
#endif

__attribute__((visibility("default"))) long cf_bad_data[4] = { 1, 2, 3, 4 };

FIXTURE_FN long cf_bad_good1(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 100;
}

FIXTURE_FN long cf_bad_good2(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 200;
}

/* cf_bad_asm(x) = x + 1, with no patchable NOPs at its entry */
__asm__(".text\n"
	".globl cf_bad_asm\n"
	".type cf_bad_asm, @function\n"
	"cf_bad_asm:\n"
#if defined(__x86_64__)
	"	lea 1(%rdi), %rax\n"
	"	ret\n"
#elif defined(__aarch64__)
	"	add x0, x0, #1\n"
	"	ret\n"
#endif
	".size cf_bad_asm, . - cf_bad_asm\n"
	".section __patchable_function_entries, \"awo\", @progbits, cf_bad_asm\n"
	".balign 8\n"
	".quad cf_bad_data\n"
	".quad cf_bad_asm\n"
	".previous\n");
