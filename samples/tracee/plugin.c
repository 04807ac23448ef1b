// SPDX-License-Identifier: MIT
/* The library tracee-dlopen loads at run time. */
#include "tracee.h"

TRACEE int plugin_helper(int x)
{
	KEEP();
	return x * 10;
}

TRACEE int plugin_entry(int x)
{
	int r = plugin_helper(x) + 1;

	KEEP();
	return r;
}
