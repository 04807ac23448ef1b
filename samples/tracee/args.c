// SPDX-License-Identifier: MIT
/*
 * samples/tracee/args.c - functions whose arguments and return values
 * `usft record -A/-R` shows (tests/e2e, case args): integers of each
 * size and sign, pointers, doubles and floats, strings (plain, escaped,
 * long, NULL, a pointer that cannot be read), chars, bools, void, and a
 * negative errno for --funcgraph-retval.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "tracee.h"

TRACEE int a_add(int a, int b)
{
	KEEP();
	return a + b;
}

TRACEE long a_neg(long x)
{
	KEEP();
	return -x;
}

TRACEE unsigned short a_wrap(unsigned short u, signed char c)
{
	KEEP();
	return (unsigned short)(u + c);
}

TRACEE double a_scale(double x, int n, float f)
{
	KEEP();
	return x * n + f;
}

TRACEE float a_half(float f)
{
	KEEP();
	return f / 2;
}

TRACEE size_t a_len(const char *s)
{
	size_t n = 0;

	KEEP();
	while (s && s[n])
		n++;
	return n;
}

/* reads *s only when asked: 0x10 is passed but never touched */
TRACEE int a_peek(const char *s, int deref)
{
	KEEP();
	return deref ? s[0] : 0;
}

TRACEE char a_up(char c)
{
	KEEP();
	return (char)(c >= 'a' && c <= 'z' ? c - 32 : c);
}

TRACEE bool a_even(unsigned x)
{
	KEEP();
	return !(x & 1);
}

TRACEE void *a_ptr(void *p)
{
	KEEP();
	return p;
}

TRACEE void a_nothing(int x)
{
	KEEP();
	(void)x;
}

TRACEE int a_fail(void)
{
	KEEP();
	return -22;
}

TRACEE int a_outer(int n)
{
	int r = a_add(n, 1) + (int)a_neg(-n);

	KEEP();
	return r;
}

int main(void)
{
	static const char longer[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+-*/";
	long sum = 0;

	sum += a_add(40, 2);
	sum += a_neg(7);
	sum += a_wrap(65535, -2);
	sum += (long)a_scale(1.5, 3, 0.25f);
	sum += (long)a_half(5.0f);
	sum += (long)a_len("abc");
	sum += (long)a_len("tab\there \"q\"\n");
	sum += (long)a_len(longer);
	sum += (long)a_len(NULL);
	sum += a_peek((const char *)0x10, 0);
	sum += a_up('q');
	sum += a_even(3);
	sum += a_ptr(NULL) == NULL;
	a_nothing(5);
	sum += a_fail();
	sum += a_outer(20);
	printf("sum %ld\n", sum);
	return 0;
}
