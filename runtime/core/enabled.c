// SPDX-License-Identifier: MIT
/*
 * core/enabled.c - the function lists of the kernel's tracefs
 * (kernel/trace/ftrace.c: t_show() and its FTRACE_ITER_* modes):
 * available_filter_functions[_addrs], enabled_functions, touched_functions,
 * and the contents of an ops' filter or notrace hash (what reading
 * set_ftrace_filter / set_ftrace_notrace shows).  Read by a client of the
 * control channel (tracers/control.c, tracers/trace_array.c).
 */
#include <stdio.h>
#include <string.h>
#include "core/internal.h"

/* "name" for the executable, "name [module]" for a shared object (kernel %ps) */
static void print_rec_name(FILE *out, struct ftrace_page *pg, int i)
{
	const char *name = pg->names[i];
	char mod[256];

	if (name && *name)
		fputs(name, out);
	else
		fprintf(out, "%#lx", pg->records[i].ip);
	if (pg->obj && pg->obj->path && strcmp(pg->obj->path, "/proc/self/exe"))
		fprintf(out, " [%s]", ftrace_object_modname(pg->obj, mod, sizeof(mod)));
}

/* the records with any of @mask, with the flag columns (FTRACE_ITER_ENABLED / _TOUCHED) */
static unsigned long print_flagged(FILE *out, unsigned long mask)
{
	struct ftrace_page *pg;
	struct dyn_ftrace *rec;
	unsigned long n = 0;

	pthread_mutex_lock(&ftrace_lock);
	do_for_each_ftrace_rec(pg, rec) {
		if (!(rec->flags & mask))
			continue;
		print_rec_name(out, pg, _____i);
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

USFT_API unsigned long usft_print_enabled_functions(FILE *out)
{
	return print_flagged(out, FTRACE_FL_ENABLED);
}

USFT_API unsigned long usft_print_touched_functions(FILE *out)
{
	return print_flagged(out, FTRACE_FL_TOUCHED);
}

USFT_API unsigned long usft_print_available_functions(FILE *out, int addrs)
{
	struct ftrace_page *pg;
	struct dyn_ftrace *rec;
	unsigned long n = 0;

	usft_init();
	pthread_mutex_lock(&ftrace_lock);
	ftrace_records_sync();
	do_for_each_ftrace_rec(pg, rec) {
		if (addrs)
			fprintf(out, "%lx ", rec->ip);
		print_rec_name(out, pg, _____i);
		fputc('\n', out);
		n++;
	} while_for_each_ftrace_rec();
	pthread_mutex_unlock(&ftrace_lock);
	return n;
}

USFT_API unsigned long usft_print_ops_hash(FILE *out, struct ftrace_ops *ops, int which)
{
	struct ftrace_page *pg;
	struct dyn_ftrace *rec;
	struct ftrace_hash *hash;
	unsigned long n = 0;

	pthread_mutex_lock(&ftrace_lock);
	hash = ops->func_hash ? (which ? ops->func_hash->notrace_hash :
				 ops->func_hash->filter_hash) : NULL;
	if (!ftrace_hash_empty(hash)) {
		do_for_each_ftrace_rec(pg, rec) {
			if (!__ftrace_lookup_ip(hash, rec->ip))
				continue;
			print_rec_name(out, pg, _____i);
			fputc('\n', out);
			n++;
		} while_for_each_ftrace_rec();
	}
	pthread_mutex_unlock(&ftrace_lock);
	return n;
}
