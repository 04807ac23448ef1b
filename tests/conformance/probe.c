// SPDX-License-Identifier: MIT
/*
 * Function probes and set_ftrace_filter commands (kernel/trace/ftrace.c
 * register_ftrace_function_probe() & co, kernel/trace/trace_functions.c
 * traceon/traceoff/stacktrace; the behaviour ftracetest's
 * func_traceonoff_triggers.tc and func-filter-stacktrace.tc check): the
 * errno of each bad line, the read-back format, counts that decrement only
 * on a state change, trace arrays kept apart, sites back to NOPs after the
 * last probe goes.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <usft/ftrace_probe.h>
#include "test_common.h"

TRACEE long cf_pr_on(long x)
{
	TRACEE_BODY();
	return x + 1;
}

TRACEE long cf_pr_off(long x)
{
	TRACEE_BODY();
	return x + 2;
}

TRACEE long cf_pr_stack(long x)
{
	TRACEE_BODY();
	return x + 3;
}

static char show_buf[4096];

static const char *show(struct trace_array *tr)
{
	int n = usft_ftrace_probes_show(tr, show_buf, sizeof(show_buf));

	cr_assert_geq(n, 0, "usft_ftrace_probes_show: %d", n);
	cr_assert_lt((size_t)n, sizeof(show_buf));
	return show_buf;
}

static int cmd(struct trace_array *tr, const char *line)
{
	return usft_ftrace_regex_cmd(tr, line, 1);
}

Test(probe_cmds, traceoff_traceon_unlimited)
{
	cr_assert(tracer_tracing_is_on(NULL));
	cr_assert_eq(cmd(NULL, "cf_pr_off:traceoff"), 0);
	cr_assert_eq(cmd(NULL, "cf_pr_on:traceon"), 0);
	expect_call(cf_pr_off);
	expect_call(cf_pr_on);
	cr_assert_str_eq(show(NULL), "cf_pr_on:traceon:unlimited\ncf_pr_off:traceoff:unlimited\n");
	cf_pr_off(0);
	cr_assert_not(tracer_tracing_is_on(NULL));
	cf_pr_on(0);
	cr_assert(tracer_tracing_is_on(NULL));
	cf_pr_off(0);
	cf_pr_off(0);
	cr_assert_not(tracer_tracing_is_on(NULL));
	cr_assert_eq(cmd(NULL, "!cf_pr_off:traceoff"), 0);
	cr_assert_eq(cmd(NULL, "!cf_pr_on:traceon"), 0);
	cr_assert_str_eq(show(NULL), "");
	expect_nop5(cf_pr_off);
	expect_nop5(cf_pr_on);
	tracer_tracing_on(NULL);
	cf_pr_off(0);
	cr_assert(tracer_tracing_is_on(NULL));
}

Test(probe_cmds, counts_decrement_only_on_a_change)
{
	cr_assert_eq(cmd(NULL, "cf_pr_off:traceoff:2"), 0);
	cr_assert_eq(cmd(NULL, "cf_pr_on:traceon:1"), 0);
	cr_assert_str_eq(show(NULL), "cf_pr_on:traceon:count=1\ncf_pr_off:traceoff:count=2\n");
	cf_pr_on(0);		/* already on: the count stays */
	cr_assert_str_eq(show(NULL), "cf_pr_on:traceon:count=1\ncf_pr_off:traceoff:count=2\n");
	cf_pr_off(0);
	cf_pr_off(0);		/* already off */
	cr_assert_not(tracer_tracing_is_on(NULL));
	cf_pr_on(0);
	cr_assert(tracer_tracing_is_on(NULL));
	cf_pr_off(0);
	cr_assert_not(tracer_tracing_is_on(NULL));
	cr_assert_str_eq(show(NULL), "cf_pr_on:traceon:count=0\ncf_pr_off:traceoff:count=0\n");
	cf_pr_on(0);		/* used up */
	cr_assert_not(tracer_tracing_is_on(NULL));
	/* the counted probe is a different one from the plain probe */
	cr_assert_eq(cmd(NULL, "!cf_pr_off:traceoff"), -EINVAL);
	cr_assert_eq(cmd(NULL, "!cf_pr_off:traceoff:count=0"), 0);
	cr_assert_eq(cmd(NULL, "!cf_pr_on:traceon:0"), 0);
	cr_assert_str_eq(show(NULL), "");
	expect_nop5(cf_pr_off);
}

Test(probe_cmds, empty_count_is_minus_one_and_never_fires)
{
	cr_assert_eq(cmd(NULL, "cf_pr_off:traceoff:"), 0);
	cr_assert_str_eq(show(NULL), "cf_pr_off:traceoff:count=-1\n");
	cf_pr_off(0);
	cr_assert(tracer_tracing_is_on(NULL));
	cr_assert_eq(cmd(NULL, "cf_pr_off:traceoff:0x10"), -EINVAL);	/* already probed */
}

Test(probe_cmds, bad_lines_and_their_errno)
{
	errno = 0;
	cr_assert_eq(cmd(NULL, "cf_pr_off:nosuchcmd"), -EINVAL);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cmd(NULL, "cf_pr_no_such_function_zz:traceon"), -EINVAL);
	cr_assert_eq(cmd(NULL, "cf_pr_off:traceoff:abc"), -EINVAL);
	cr_assert_eq(cmd(NULL, "cf_pr_off:traceoff:-1"), -EINVAL);
	cr_assert_eq(cmd(NULL, "cf_pr_off:traceoff:99999999999999999999999"), -ERANGE);
	cr_assert_eq(cmd(NULL, "!cf_pr_off:traceoff"), -EINVAL);		/* no such probe */
	cr_assert_eq(usft_ftrace_regex_cmd(NULL, "cf_pr_off:traceoff", 0), -EINVAL);	/* notrace */
	cr_assert_eq(cmd(NULL, ":traceoff"), -EINVAL);
	cr_assert_eq(cmd(NULL, "cf_pr_off:traceoff"), 0);
	cr_assert_eq(cmd(NULL, "cf_pr_off:traceoff"), -EINVAL);		/* nothing added */
	cr_assert_eq(cmd(NULL, "!cf_pr_on:traceoff"), -EINVAL);		/* not probed */
	/* lines that are no command: the caller's filter */
	cr_assert_eq(cmd(NULL, "cf_pr_*"), USFT_REGEX_GLOB);
	cr_assert_eq(cmd(NULL, "  !cf_pr_on \n"), USFT_REGEX_GLOB);
	cr_assert_eq(cmd(NULL, "*:mod:main"), USFT_REGEX_GLOB);
	cr_assert_eq(usft_ftrace_regex_cmd(NULL, NULL, 1), -EINVAL);
	/* nothing of the rejected lines is left */
	cr_assert_str_eq(show(NULL), "cf_pr_off:traceoff:unlimited\n");
	expect_nop5(cf_pr_on);
}

static atomic_int stack_dumps, instance_on = 1;
static struct trace_array *last_tr;

static notrace bool tr_is_on(struct trace_array *tr)
{
	return tr ? atomic_load(&instance_on) : true;
}

static notrace void tr_set_on(struct trace_array *tr, bool on)
{
	if (tr)
		atomic_store(&instance_on, on);
}

static notrace void tr_dump_stack(struct trace_array *tr, unsigned long ip, int skip)
{
	(void)skip;
	if (ip == tc_site(cf_pr_stack))
		atomic_fetch_add(&stack_dumps, 1);
	last_tr = tr;
}

static const struct usft_trace_array_ops test_tr_ops = {
	.sz = sizeof(test_tr_ops),
	.is_on = tr_is_on,
	.set_on = tr_set_on,
	.dump_stack = tr_dump_stack,
};

Test(probe_cmds, stacktrace_count_and_trace_arrays)
{
	struct trace_array *inst = (struct trace_array *)&instance_on;

	cr_assert_eq(usft_set_trace_array_ops(&test_tr_ops), 0);
	cr_assert_eq(cmd(NULL, "cf_pr_stack:stacktrace:2"), 0);
	cr_assert_eq(cmd(inst, "cf_pr_off:traceoff"), 0);
	cr_assert_str_eq(show(NULL), "cf_pr_stack:stacktrace:count=2\n");
	cr_assert_str_eq(show(inst), "cf_pr_off:traceoff:unlimited\n");
	for (int i = 0; i < 5; i++)
		cf_pr_stack(i);
	cr_assert_eq(atomic_load(&stack_dumps), 2);
	cr_assert_null(last_tr);
	cr_assert_str_eq(show(NULL), "cf_pr_stack:stacktrace:count=0\n");
	cf_pr_off(0);
	cr_assert_eq(atomic_load(&instance_on), 0);
	cr_assert(tracer_tracing_is_on(NULL));
	/* an instance going away takes its probes, and only its */
	clear_ftrace_function_probes(inst);
	cr_assert_str_eq(show(inst), "");
	expect_nop5(cf_pr_off);
	cr_assert_eq(cmd(NULL, "cf_pr_stack:stacktrace"), 0);
	cf_pr_stack(0);
	cr_assert_eq(atomic_load(&stack_dumps), 3);
	cr_assert_eq(usft_set_trace_array_ops(NULL), 0);
	cr_assert_eq(usft_set_trace_array_ops(&(struct usft_trace_array_ops){ .sz = 3 }), -EINVAL);
}

static notrace bool tr_off_is_on(struct trace_array *tr)
{
	return tr ? atomic_load(&instance_on) : false;
}

static const struct usft_trace_array_ops off_top_ops = {
	.sz = sizeof(off_top_ops),
	.is_on = tr_off_is_on,
	.set_on = tr_set_on,
	.dump_stack = tr_dump_stack,
};

/* a counted stacktrace of an array fires while that array traces, whatever NULL's state */
Test(probe_cmds, stacktrace_count_follows_its_array)
{
	struct trace_array *inst = (struct trace_array *)&instance_on;

	atomic_store(&stack_dumps, 0);
	atomic_store(&instance_on, 1);
	cr_assert_eq(usft_set_trace_array_ops(&off_top_ops), 0);
	cr_assert_eq(cmd(inst, "cf_pr_stack:stacktrace:2"), 0);
	for (int i = 0; i < 4; i++)
		cf_pr_stack(i);
	cr_assert_eq(atomic_load(&stack_dumps), 2, "dumps %d", atomic_load(&stack_dumps));
	cr_assert_eq(last_tr, inst);
	cr_assert_str_eq(show(inst), "cf_pr_stack:stacktrace:count=0\n");
	/* its array off: the count is kept */
	cr_assert_eq(cmd(inst, "!cf_pr_stack:stacktrace:0"), 0);
	cr_assert_eq(cmd(inst, "cf_pr_stack:stacktrace:1"), 0);
	atomic_store(&instance_on, 0);
	cf_pr_stack(0);
	cr_assert_eq(atomic_load(&stack_dumps), 2);
	cr_assert_str_eq(show(inst), "cf_pr_stack:stacktrace:count=1\n");
	clear_ftrace_function_probes(inst);
	atomic_store(&instance_on, 1);
	cr_assert_eq(usft_set_trace_array_ops(NULL), 0);
}

/* a probe_ops of the program's own, through the kernel-shaped API */
static atomic_int inits, frees, frees_zero, hits;

static notrace void my_func(unsigned long ip, unsigned long pip, struct trace_array *tr,
			    struct ftrace_probe_ops *ops, void *data)
{
	(void)ip, (void)pip, (void)tr, (void)ops;
	if (data == (void *)0x5eed)
		atomic_fetch_add(&hits, 1);
}

static notrace int my_init(struct ftrace_probe_ops *ops, struct trace_array *tr,
			   unsigned long ip, void *init_data, void **data)
{
	(void)ops, (void)tr, (void)ip;
	*data = init_data;
	atomic_fetch_add(&inits, 1);
	return 0;
}

static notrace void my_free(struct ftrace_probe_ops *ops, struct trace_array *tr,
			    unsigned long ip, void *data)
{
	(void)ops, (void)tr, (void)data;
	atomic_fetch_add(ip ? &frees : &frees_zero, 1);
}

static struct ftrace_probe_ops my_probe_ops = {
	.func = my_func, .init = my_init, .free = my_free,
};

Test(function_probe, register_counts_init_free_and_unregister)
{
	char glob[] = "cf_pr_*", one[] = "cf_pr_on", bang[] = "!cf_pr_on", none[] = "zz_none";

	cr_assert_eq(register_ftrace_function_probe(bang, NULL, &my_probe_ops, NULL), -EINVAL);
	cr_assert_eq(register_ftrace_function_probe(none, NULL, &my_probe_ops, NULL), -EINVAL);
	cr_assert_eq(register_ftrace_function_probe(one, NULL, &my_probe_ops, (void *)0x5eed), 1);
	cr_assert_eq(register_ftrace_function_probe(glob, NULL, &my_probe_ops, (void *)0x5eed), 2);
	cr_assert_eq(atomic_load(&inits), 3);
	cf_pr_on(0);
	cf_pr_off(0);
	cf_pr_stack(0);
	cr_assert_eq(atomic_load(&hits), 3);
	cr_assert_eq(unregister_ftrace_function_probe_func(one, NULL, &my_probe_ops), 0);
	cr_assert_eq(atomic_load(&frees), 1);
	cr_assert_eq(atomic_load(&frees_zero), 0);
	expect_nop5(cf_pr_on);
	expect_call(cf_pr_off);
	cr_assert_eq(unregister_ftrace_function_probe_func(one, NULL, &my_probe_ops), -EINVAL);
	/* without a print: "func:0xADDR" */
	cr_assert(strncmp(show(NULL), "cf_pr_off:0x", 12) == 0, "%s", show_buf);
	cr_assert_eq(unregister_ftrace_function_probe_func(NULL, NULL, &my_probe_ops), 0);
	cr_assert_eq(atomic_load(&frees), 3);
	cr_assert_eq(atomic_load(&frees_zero), 1);
	expect_nop5(cf_pr_off);
	expect_nop5(cf_pr_stack);
	cr_assert_eq(unregister_ftrace_function_probe_func(NULL, NULL, &my_probe_ops), -EINVAL);
}

static int seen_enable = -1;
static char seen[3][64];

static int my_cmd_func(struct trace_array *tr, struct ftrace_hash *hash, char *func, char *cmd,
		       char *params, int enable)
{
	(void)tr, (void)hash;
	snprintf(seen[0], sizeof(seen[0]), "%s", func);
	snprintf(seen[1], sizeof(seen[1]), "%s", cmd);
	snprintf(seen[2], sizeof(seen[2]), "%s", params ? params : "(null)");
	seen_enable = enable;
	return 0;
}

Test(ftrace_command, register_call_and_unregister)
{
	static struct ftrace_func_command mine = { .name = "mine", .func = my_cmd_func };
	static struct ftrace_func_command dup = { .name = "traceon", .func = my_cmd_func };

	cr_assert_eq(register_ftrace_command(&dup), -EBUSY);
	cr_assert_eq(register_ftrace_command(&mine), 0);
	cr_assert_eq(register_ftrace_command(&mine), -EBUSY);
	cr_assert_eq(usft_ftrace_regex_cmd(NULL, "!foo*:mine:a:b", 0), 0);
	cr_assert_str_eq(seen[0], "!foo*");
	cr_assert_str_eq(seen[1], "mine");
	cr_assert_str_eq(seen[2], "a:b");
	cr_assert_eq(seen_enable, 0);
	cr_assert_eq(usft_ftrace_regex_cmd(NULL, "bar:mine", 1), 0);
	cr_assert_str_eq(seen[2], "(null)");
	cr_assert_eq(unregister_ftrace_command(&mine), 0);
	cr_assert_eq(unregister_ftrace_command(&mine), -ENODEV);
	cr_assert_eq(usft_ftrace_regex_cmd(NULL, "bar:mine", 1), -EINVAL);
}

Test(ftrace_func_mapper, add_find_remove)
{
	struct ftrace_func_mapper *m = allocate_ftrace_func_mapper();
	void **slot;

	cr_assert_not_null(m);
	cr_assert_eq(ftrace_func_mapper_add_ip(m, 0x1000, (void *)1), 0);
	cr_assert_eq(ftrace_func_mapper_add_ip(m, 0x1000, (void *)2), -EBUSY);
	cr_assert_eq(ftrace_func_mapper_add_ip(m, 0x1000 + (1UL << 20), (void *)3), 0);
	slot = ftrace_func_mapper_find_ip(m, 0x1000);
	cr_assert(slot && *slot == (void *)1);
	cr_assert_null(ftrace_func_mapper_find_ip(m, 0x2000));
	cr_assert_eq(ftrace_func_mapper_remove_ip(m, 0x1000), (void *)1);
	cr_assert_null(ftrace_func_mapper_find_ip(m, 0x1000));
	cr_assert_null(ftrace_func_mapper_remove_ip(m, 0x1000));
	free_ftrace_func_mapper(m, NULL);
}
