// SPDX-License-Identifier: MIT
/*
 * tracee-reload's two libraries, built from this file twice: with
 * RELOAD_B the functions are b_* (and the factor differs), else a_*.  Same
 * shape and size, so the loader maps the second where the first was.
 */
#include "tracee.h"

#ifdef RELOAD_B
#define NAME(n) b_##n
#define FACTOR 20
#else
#define NAME(n) a_##n
#define FACTOR 10
#endif

TRACEE int NAME(helper)(int x)
{
	KEEP();
	return x * FACTOR;
}

TRACEE int NAME(entry)(int x)
{
	int r = NAME(helper)(x) + 1;

	KEEP();
	return r;
}
