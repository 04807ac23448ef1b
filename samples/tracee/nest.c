// SPDX-License-Identifier: MIT
/* Nesting and recursion: a fixed call tree and a recursive function. */
#include <stdio.h>
#include "tracee.h"

TRACEE int leaf(int x)
{
	KEEP();
	return x + 1;
}

TRACEE int middle(int x)
{
	int r = leaf(x) + leaf(x + 1);

	KEEP();
	return r;
}

TRACEE int outer(int x)
{
	int r = middle(x) * 2;

	KEEP();
	return r;
}

TRACEE int fact(int n)
{
	int r = n <= 1 ? 1 : n * fact(n - 1);

	KEEP();
	return r;
}

TRACEE long tail_callee(long x)
{
	KEEP();
	return x * 3;
}

/* a sibling call: the callee returns straight to our caller */
TRACEE long tail_caller(long x)
{
	return tail_callee(x + 1);
}

int main(void)
{
	printf("outer(3) = %d\n", outer(3));
	printf("fact(5) = %d\n", fact(5));
	printf("tail_caller(4) = %ld\n", tail_caller(4));
	return 0;
}
