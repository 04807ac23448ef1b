// SPDX-License-Identifier: MIT
/*
 * Variadic and floating-point functions: their arguments (including %al,
 * the vector register count of a variadic call) and return values
 * (rax/rdx, xmm0/xmm1, x87 st0) must reach the caller unchanged.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include "tracee.h"

struct pair {
	double a, b;
};

struct wide {
	long a, b;
};

TRACEE long sum_ints(int n, ...)
{
	va_list ap;
	long s = 0;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, int);
	va_end(ap);
	return s;
}

TRACEE double sum_doubles(int n, ...)
{
	va_list ap;
	double s = 0;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, double);
	va_end(ap);
	return s;
}

TRACEE int format(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return r;
}

TRACEE double poly(double x, double a, double b, double c, double d, double e, double f,
		   double g, double h)
{
	KEEP();
	return ((((((a * x + b) * x + c) * x + d) * x + e) * x + f) * x + g) * x + h;
}

TRACEE float halve(float x)
{
	KEEP();
	return x / 2.0f;
}

TRACEE long double precise(long double x)
{
	KEEP();
	return x / 3.0L;
}

TRACEE struct pair two_doubles(double x)
{
	struct pair p = { sqrt(x), x * x };

	KEEP();
	return p;
}

TRACEE struct wide two_longs(long x)
{
	struct wide w = { x * 3, -x };

	KEEP();
	return w;
}

int main(void)
{
	char buf[128];
	struct pair p = two_doubles(2.0);
	struct wide w = two_longs(7);

	printf("sum_ints = %ld\n", sum_ints(5, 1, 2, 3, 4, 5));
	printf("sum_doubles = %.17g\n", sum_doubles(4, 0.1, 0.2, 0.3, 1e-17));
	format(buf, sizeof(buf), "%d %.3f %s %g", 42, 3.14159, "str", 2.5e10);
	printf("format = [%s]\n", buf);
	printf("poly = %.17g\n", poly(1.5, 1, -2, 3, -4, 5, -6, 7, -8));
	printf("halve = %.9g\n", (double)halve(3.0f));
	printf("precise = %.21Lg\n", precise(1.0L));
	printf("two_doubles = %.17g %.17g\n", p.a, p.b);
	printf("two_longs = %ld %ld\n", w.a, w.b);
	return 0;
}
