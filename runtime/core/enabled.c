// SPDX-License-Identifier: MIT
/*
 * core/enabled.c - the list of sites that call out now, as the kernel's
 * tracefs enabled_functions shows it (kernel/trace/ftrace.c: t_show() with
 * FTRACE_ITER_ENABLED): what a client of the control channel
 * (tracers/control.c) reads from a running process.
 */
#include <stdio.h>
#include "core/internal.h"

USFT_API unsigned long usft_print_enabled_functions(FILE *out)
{
	struct ftrace_page *pg;
	struct dyn_ftrace *rec;
	unsigned long n = 0;

	pthread_mutex_lock(&ftrace_lock);
	do_for_each_ftrace_rec(pg, rec) {
		const char *name;

		if (!(rec->flags & FTRACE_FL_ENABLED))
			continue;
		name = pg->names[_____i];
		if (name && *name)
			fprintf(out, "%s", name);
		else
			fprintf(out, "%#lx", rec->ip);
		fprintf(out, " (%lu)%s%s%s%s%s", (unsigned long)ftrace_rec_count(rec),
			rec->flags & FTRACE_FL_REGS ? " R" : "  ",
			rec->flags & FTRACE_FL_IPMODIFY ? " I" : "  ",
			rec->flags & FTRACE_FL_DIRECT ? " D" : "  ",
			rec->flags & FTRACE_FL_CALL_OPS ? " O" : "  ",
			rec->flags & FTRACE_FL_MODIFIED ? " M " : "   ");
		if (rec->flags & FTRACE_FL_TRAMP_EN)
			fprintf(out, "\ttramp: %#lx", ftrace_get_addr_curr(rec));
		fputc('\n', out);
		n++;
	} while_for_each_ftrace_rec();
	pthread_mutex_unlock(&ftrace_lock);
	return n;
}
