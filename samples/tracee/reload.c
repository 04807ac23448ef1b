// SPDX-License-Identifier: MIT
/*
 * A library loaded where an unloaded one was: dlopen(A), call, dlclose(A),
 * dlopen(B) (same size, so the loader maps it at A's address), call.  B's
 * functions must be named after B.  Prints whether B landed at A's address.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include "tracee.h"

TRACEE int call_lib(const char *lib, const char *entry, int x, void **base)
{
	void *h = dlopen(lib, RTLD_NOW);
	int (*fn)(int);
	Dl_info di;
	int r = -1;

	if (!h) {
		printf("dlopen %s failed: %s\n", lib, dlerror());
		return -1;
	}
	fn = (int (*)(int))dlsym(h, entry);
	if (fn) {
		r = fn(x);
		*base = dladdr((void *)fn, &di) ? di.dli_fbase : NULL;
	}
	dlclose(h);
	KEEP();
	return r;
}

int main(void)
{
	void *a = NULL, *b = NULL;
	int ra = call_lib("libtracee-reload-a.so", "a_entry", 1, &a);
	int rb = call_lib("libtracee-reload-b.so", "b_entry", 1, &b);

	printf("a: %d, b: %d, same address: %s\n", ra, rb, a && a == b ? "yes" : "no");
	return 0;
}
