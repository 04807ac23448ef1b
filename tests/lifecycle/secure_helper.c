// SPDX-License-Identifier: MIT
/* Prints what the runtime made of its environment (tests/lifecycle/secure.c). */
#include <stdio.h>
#include <usft/usft.h>

__attribute__((noinline)) int sh_work(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

int main(void)
{
	char a[32] = "?", b[32] = "?";

	if (usft_init())
		return 2;
	usft_get_option("per_callsite_ops", a, sizeof(a));
	usft_get_option("ops_trampolines", b, sizeof(b));
	printf("per_callsite_ops=%s ops_trampolines=%s work=%d\n", a, b, sh_work(1));
	return 0;
}
