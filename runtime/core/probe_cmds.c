// SPDX-License-Identifier: MIT
/*
 * core/probe_cmds.c - the set_ftrace_filter commands traceon, traceoff and
 * stacktrace (kernel/trace/trace_functions.c: ftrace_trace_onoff_callback(),
 * ftrace_stacktrace_callback(), ftrace_trace_probe_callback(), the
 * *_probe_ops, ftrace_count_init/free(), ftrace_probe_print()).
 *
 * "glob:traceon" and "glob:traceon:N" are two different probes (plain and
 * counted ops), as in the kernel; "!glob:traceon" removes the plain one and
 * "!glob:traceon:N" (any N) the counted one.  A counted probe keeps each
 * function's count in a ftrace_func_mapper: traceon/traceoff decrement it
 * only when they change the state; an empty count ("glob:traceon:") is -1
 * and never fires, as the kernel's.  The dump and cpudump commands (the
 * kernel's ftrace_dump() of the whole buffer to the console) are not
 * provided: -EINVAL as for any unknown command (docs/design.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <usft/ftrace_probe.h>
#include "core/internal.h"

int __register_ftrace_command(struct ftrace_func_command *cmd);
void ftrace_probe_dump_stack(struct trace_array *tr, unsigned long ip, int skip);
void ftrace_probe_cmds_init(void);

/* frames of the runtime between the traced function and dump_stack */
#define STACK_SKIP	3

static long *count_slot(void *data, unsigned long ip)
{
	return (long *)ftrace_func_mapper_find_ip(data, ip);
}

static void update_traceon_count(unsigned long ip, struct trace_array *tr, bool on, void *data)
{
	long *count = count_slot(data, ip);
	long old;

	if (!count)
		return;
	old = __atomic_load_n(count, __ATOMIC_ACQUIRE);
	if (old <= 0)
		return;
	if (on == tracer_tracing_is_on(tr))
		return;
	if (on)
		tracer_tracing_on(tr);
	else
		tracer_tracing_off(tr);
	/* the new state is visible before the count that says it happened */
	__atomic_store_n(count, old - 1, __ATOMIC_RELEASE);
}

static void ftrace_traceon_count(unsigned long ip, unsigned long parent_ip,
				 struct trace_array *tr, struct ftrace_probe_ops *ops, void *data)
{
	(void)parent_ip, (void)ops;
	update_traceon_count(ip, tr, true, data);
}

static void ftrace_traceoff_count(unsigned long ip, unsigned long parent_ip,
				  struct trace_array *tr, struct ftrace_probe_ops *ops, void *data)
{
	(void)parent_ip, (void)ops;
	update_traceon_count(ip, tr, false, data);
}

static void ftrace_traceon(unsigned long ip, unsigned long parent_ip,
			   struct trace_array *tr, struct ftrace_probe_ops *ops, void *data)
{
	(void)ip, (void)parent_ip, (void)ops, (void)data;
	if (!tracer_tracing_is_on(tr))
		tracer_tracing_on(tr);
}

static void ftrace_traceoff(unsigned long ip, unsigned long parent_ip,
			    struct trace_array *tr, struct ftrace_probe_ops *ops, void *data)
{
	(void)ip, (void)parent_ip, (void)ops, (void)data;
	if (tracer_tracing_is_on(tr))
		tracer_tracing_off(tr);
}

static void ftrace_stacktrace(unsigned long ip, unsigned long parent_ip,
			      struct trace_array *tr, struct ftrace_probe_ops *ops, void *data)
{
	(void)parent_ip, (void)ops, (void)data;
	ftrace_probe_dump_stack(tr, ip, STACK_SKIP);
}

static void ftrace_stacktrace_count(unsigned long ip, unsigned long parent_ip,
				    struct trace_array *tr, struct ftrace_probe_ops *ops, void *data)
{
	long *count, old;

	(void)parent_ip, (void)ops;
	/*
	 * kernel: tracing_is_on(), the global array's.  Here it is the probe's
	 * own array: a process mounted without a recording has no other top
	 * level (NULL is the recording's), and an instance follows its own
	 * tracing_on (docs/design.md)
	 */
	if (!tracer_tracing_is_on(tr))
		return;
	count = count_slot(data, ip);
	if (!count)
		return;
	/* exactly N dumps however many threads race for the last ones */
	old = __atomic_load_n(count, __ATOMIC_RELAXED);
	do {
		if (!old)
			return;
	} while (!__atomic_compare_exchange_n(count, &old, old - 1, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	ftrace_probe_dump_stack(tr, ip, STACK_SKIP);
}

/* kernel ftrace_probe_print(): "func:name:unlimited" or "func:name:count=N" */
static int ftrace_probe_print(const char *name, struct seq_file *m, unsigned long ip, void *data)
{
	const char *fn = usft_kallsyms_lookup(ip, NULL);
	long *count = data ? count_slot(data, ip) : NULL;

	if (fn)
		seq_printf(m, "%s:%s", fn, name);
	else
		seq_printf(m, "0x%lx:%s", ip, name);
	if (count)
		seq_printf(m, ":count=%ld\n", __atomic_load_n(count, __ATOMIC_RELAXED));
	else
		seq_puts(m, ":unlimited\n");
	return 0;
}

static int ftrace_traceon_print(struct seq_file *m, unsigned long ip,
				struct ftrace_probe_ops *ops, void *data)
{
	(void)ops;
	return ftrace_probe_print("traceon", m, ip, data);
}

static int ftrace_traceoff_print(struct seq_file *m, unsigned long ip,
				 struct ftrace_probe_ops *ops, void *data)
{
	(void)ops;
	return ftrace_probe_print("traceoff", m, ip, data);
}

static int ftrace_stacktrace_print(struct seq_file *m, unsigned long ip,
				   struct ftrace_probe_ops *ops, void *data)
{
	(void)ops;
	return ftrace_probe_print("stacktrace", m, ip, data);
}

/* kernel ftrace_count_init(): one mapper per probe, the count per function */
static int ftrace_count_init(struct ftrace_probe_ops *ops, struct trace_array *tr,
			     unsigned long ip, void *init_data, void **data)
{
	struct ftrace_func_mapper *mapper = *data;

	(void)ops, (void)tr;
	if (!mapper) {
		mapper = allocate_ftrace_func_mapper();
		if (!mapper)
			return -ENOMEM;
		*data = mapper;
	}
	return ftrace_func_mapper_add_ip(mapper, ip, init_data);
}

static void ftrace_count_free(struct ftrace_probe_ops *ops, struct trace_array *tr,
			      unsigned long ip, void *data)
{
	(void)ops, (void)tr;
	if (!ip)
		free_ftrace_func_mapper(data, NULL);
	else
		ftrace_func_mapper_remove_ip(data, ip);
}

static struct ftrace_probe_ops traceon_count_probe_ops = {
	.func = ftrace_traceon_count, .print = ftrace_traceon_print,
	.init = ftrace_count_init, .free = ftrace_count_free,
};
static struct ftrace_probe_ops traceoff_count_probe_ops = {
	.func = ftrace_traceoff_count, .print = ftrace_traceoff_print,
	.init = ftrace_count_init, .free = ftrace_count_free,
};
static struct ftrace_probe_ops stacktrace_count_probe_ops = {
	.func = ftrace_stacktrace_count, .print = ftrace_stacktrace_print,
	.init = ftrace_count_init, .free = ftrace_count_free,
};
static struct ftrace_probe_ops traceon_probe_ops = {
	.func = ftrace_traceon, .print = ftrace_traceon_print,
};
static struct ftrace_probe_ops traceoff_probe_ops = {
	.func = ftrace_traceoff, .print = ftrace_traceoff_print,
};
static struct ftrace_probe_ops stacktrace_probe_ops = {
	.func = ftrace_stacktrace, .print = ftrace_stacktrace_print,
};

/* kernel kstrtoul(s, 0, &v): the whole string (one trailing newline allowed) */
static int parse_count(const char *s, unsigned long *v)
{
	char *end;

	if (*s == '+')
		s++;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoul(s, &end, 0);
	if (errno == ERANGE)
		return -ERANGE;
	if (end == s || (*end && strcmp(end, "\n")))
		return -EINVAL;
	return 0;
}

/* kernel ftrace_trace_probe_callback() */
static int ftrace_trace_probe_callback(struct trace_array *tr, struct ftrace_probe_ops *ops,
				       char *glob, char *param, int enable)
{
	unsigned long count = (unsigned long)-1;
	char *number;
	int ret;

	/* the commands belong to set_ftrace_filter only */
	if (!enable)
		return -EINVAL;
	if (glob[0] == '!')
		return unregister_ftrace_function_probe_func(glob + 1, tr, ops);
	if (param) {
		number = strsep(&param, ":");
		if (*number) {
			int saved = errno;

			ret = parse_count(number, &count);
			errno = saved;
			if (ret)
				return ret;
		}
	}
	ret = register_ftrace_function_probe(glob, tr, ops, (void *)count);
	return ret < 0 ? ret : 0;
}

static int ftrace_trace_onoff_callback(struct trace_array *tr, struct ftrace_hash *hash,
				       char *glob, char *cmd, char *param, int enable)
{
	struct ftrace_probe_ops *ops;

	(void)hash;
	if (!strcmp(cmd, "traceon"))
		ops = param ? &traceon_count_probe_ops : &traceon_probe_ops;
	else
		ops = param ? &traceoff_count_probe_ops : &traceoff_probe_ops;
	return ftrace_trace_probe_callback(tr, ops, glob, param, enable);
}

static int ftrace_stacktrace_callback(struct trace_array *tr, struct ftrace_hash *hash,
				      char *glob, char *cmd, char *param, int enable)
{
	(void)hash, (void)cmd;
	return ftrace_trace_probe_callback(tr, param ? &stacktrace_count_probe_ops :
					   &stacktrace_probe_ops, glob, param, enable);
}

static struct ftrace_func_command ftrace_traceon_cmd = {
	.name = "traceon", .func = ftrace_trace_onoff_callback,
};
static struct ftrace_func_command ftrace_traceoff_cmd = {
	.name = "traceoff", .func = ftrace_trace_onoff_callback,
};
static struct ftrace_func_command ftrace_stacktrace_cmd = {
	.name = "stacktrace", .func = ftrace_stacktrace_callback,
};

/* kernel init_func_cmd_traceon(), run once before the first command */
void ftrace_probe_cmds_init(void)
{
	__register_ftrace_command(&ftrace_traceoff_cmd);
	__register_ftrace_command(&ftrace_traceon_cmd);
	__register_ftrace_command(&ftrace_stacktrace_cmd);
}
