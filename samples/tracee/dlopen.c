// SPDX-License-Identifier: MIT
/*
 * dlopen() of a traced library by bare name (found through this program's
 * RUNPATH, $ORIGIN), calls into it, dlclose(), and again.
 */
#include <dlfcn.h>
#include <stdio.h>
#include "tracee.h"

TRACEE int call_plugin(int (*fn)(int), int x)
{
	int r = fn(x);

	KEEP();
	return r;
}

TRACEE int load_and_call(int x)
{
	void *h = dlopen("libtracee-plugin.so", RTLD_NOW);
	int (*fn)(int);
	int r;

	if (!h) {
		printf("dlopen failed: %s\n", dlerror());
		return -1;
	}
	fn = (int (*)(int))dlsym(h, "plugin_entry");
	r = fn ? call_plugin(fn, x) : -1;
	dlclose(h);
	KEEP();
	return r;
}

int main(void)
{
	printf("first: %d\n", load_and_call(4));
	printf("second: %d\n", load_and_call(5));
	return 0;
}
