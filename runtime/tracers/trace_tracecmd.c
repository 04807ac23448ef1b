// SPDX-License-Identifier: MIT
#include <errno.h>
#include "trace_views.h"

int usft_write_tracecmd(FILE *out, struct usft_trace *t, const char **why)
{
	(void)out;
	(void)t;
	*why = "trace-cmd output is not built in";
	return -ENOSYS;
}
