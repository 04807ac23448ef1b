/* SPDX-License-Identifier: MIT */
/*
 * usft/ftrace_probe.h - function probes and set_ftrace_filter commands
 * (kernel include/linux/ftrace.h and kernel/trace/trace.h: struct
 * ftrace_probe_ops, register_ftrace_function_probe(),
 * unregister_ftrace_function_probe_func(), struct ftrace_func_command,
 * register_ftrace_command(), the ftrace_func_mapper; the traceon, traceoff
 * and stacktrace commands of kernel/trace/trace_functions.c).
 *
 * A probe is a (trace array, probe_ops) pair with a set of functions: one
 * ftrace_ops per pair, whose filter is that set, calls probe_ops->func at
 * each of them.  A trace array is opaque here: NULL is the top level; a
 * program that has instances (the tracefs) passes its own pointers and says
 * what tracing on/off and a stack dump mean for them with
 * usft_set_trace_array_ops().  docs/design.md lists the differences from
 * the kernel.
 */
#ifndef USFT_FTRACE_PROBE_H
#define USFT_FTRACE_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <usft/common.h>
#include <usft/ftrace.h>

USFT_BEGIN_DECLS

struct trace_array;
struct seq_file;
struct ftrace_func_mapper;

/**
 * struct ftrace_probe_ops - what a function probe does (kernel shape).
 * @func: called at every probed function, in the traced thread, under the
 *	hot-path rules (no allocation, lock, syscall, errno change); @data is
 *	the probe's data (see @init)
 * @init: optional; called once per function added, before it is probed, with
 *	the @data given to register_ftrace_function_probe() as @init_data and
 *	@data pointing at the probe's data pointer (starts NULL; the commands
 *	keep a ftrace_func_mapper there).  A negative return fails the register.
 * @free: optional; called for each function removed (@ip), after no thread
 *	can still be in @func for it, and once more with @ip 0 when the probe
 *	goes away
 * @print: optional; one set_ftrace_filter line for @ip (with the newline);
 *	without it the line is "func:0xADDR" (kernel: "%ps:%ps")
 */
struct ftrace_probe_ops {
	void (*func)(unsigned long ip, unsigned long parent_ip, struct trace_array *tr,
		     struct ftrace_probe_ops *ops, void *data);
	int (*init)(struct ftrace_probe_ops *ops, struct trace_array *tr, unsigned long ip,
		    void *init_data, void **data);
	void (*free)(struct ftrace_probe_ops *ops, struct trace_array *tr, unsigned long ip,
		     void *data);
	int (*print)(struct seq_file *m, unsigned long ip, struct ftrace_probe_ops *ops,
		     void *data);
};

/**
 * register_ftrace_function_probe() - probe every function @glob selects.
 * @glob: one glob of set_ftrace_filter's syntax (no '!', no white space)
 * @tr: the trace array (NULL: top level)
 * @ops: what to call; one probe per (@tr, @ops), later calls add functions
 * @data: handed to @ops->init as init_data
 *
 * Functions already in the probe are skipped (no second @init).
 * Return: the number of functions added (> 0); -EINVAL @glob is NULL,
 * starts with '!', matches nothing, or matches only functions already
 * probed; -ENOMEM; an error of @ops->init (nothing added then); -ENODEV
 * runtime dead; -EDEADLK called from a callback.
 */
USFT_API int register_ftrace_function_probe(char *glob, struct trace_array *tr,
					    struct ftrace_probe_ops *ops, void *data);

/**
 * unregister_ftrace_function_probe_func() - stop probing the functions of
 * the (@tr, @ops) probe that @glob matches.
 * @glob: NULL, "" or "*": all of them
 *
 * On return no thread is in @ops->func for them; @ops->free has run for
 * each, and with ip 0 when the probe became empty.
 * Return: 0; -EINVAL no such probe, @glob starts with '!', or matches none
 * of its functions; -ENOMEM; -ENODEV; -EDEADLK.
 */
USFT_API int unregister_ftrace_function_probe_func(char *glob, struct trace_array *tr,
						   struct ftrace_probe_ops *ops);

/** clear_ftrace_function_probes() - remove every probe of @tr (an instance going away). */
USFT_API void clear_ftrace_function_probes(struct trace_array *tr);

/**
 * struct ftrace_func_command - a set_ftrace_filter command ("glob:NAME[:params]").
 * @name: the command word
 * @func: @func_ is the glob (with its '!' if any), @cmd the command word,
 *	@params what followed the second ':' (NULL when nothing did), @enable
 *	1 for set_ftrace_filter, 0 for set_ftrace_notrace.  @hash is the
 *	kernel's iterator hash; usft passes NULL (the probe commands do not
 *	touch the filter; ":mod:" is parsed by ftrace_set_filter() itself).
 *	Returns 0 or a negative errno.
 * @list: runtime-owned
 */
struct ftrace_func_command {
	void *list;
	char *name;
	int (*func)(struct trace_array *tr, struct ftrace_hash *hash, char *func_, char *cmd,
		    char *params, int enable);
};

/** register_ftrace_command() - Return: 0; -EBUSY a command of that name exists; -EINVAL. */
USFT_API int register_ftrace_command(struct ftrace_func_command *cmd);
/** unregister_ftrace_command() - Return: 0; -ENODEV not registered. */
USFT_API int unregister_ftrace_command(struct ftrace_func_command *cmd);

/* usft_ftrace_regex_cmd() result for a token that is a plain filter glob */
#define USFT_REGEX_GLOB	1

/**
 * usft_ftrace_regex_cmd() - one token written to set_ftrace_filter (@enable
 * 1) or set_ftrace_notrace (@enable 0) of @tr, as the kernel's
 * ftrace_process_regex(): "glob:cmd[:params]" runs the command's func,
 * "!glob:cmd[:...]" removes that command's probes from the functions glob
 * matches.  Leading and trailing white space is ignored; the caller splits
 * a write on white space (the kernel's trace_get_user()) and calls this
 * once per token.
 * Return: 0 done; USFT_REGEX_GLOB the token has no command (or is
 * "glob:mod:NAME"): the caller applies it to its filter hash with
 * ftrace_set_filter()/ftrace_set_notrace(); -EINVAL unknown command, bad
 * count, a command on set_ftrace_notrace, a glob matching nothing; -ENOMEM;
 * -ENODEV; -EDEADLK.  errno is set for negative results.
 */
USFT_API int usft_ftrace_regex_cmd(struct trace_array *tr, const char *token, int enable);

/**
 * usft_ftrace_probes_show() - the probe lines of @tr's set_ftrace_filter
 * (the kernel's t_probe_show()), newest probe first, each probe's functions
 * in address order: "schedule:traceoff:unlimited", "func:traceon:count=3",
 * "func:stacktrace:unlimited" ...  Nothing else: the caller prints the
 * filter's functions (or "#### all functions enabled ####") before them.
 * @buf: receives at most @size - 1 bytes and a NUL (may be NULL if @size is 0)
 * Return: the length of the whole text (snprintf's contract: larger than
 * @size - 1 means it was cut); -ENOMEM; -ENODEV.
 */
USFT_API int usft_ftrace_probes_show(struct trace_array *tr, char *buf, size_t size);

/* seq_file stand-in for ftrace_probe_ops::print */
USFT_API int seq_printf(struct seq_file *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
USFT_API int seq_puts(struct seq_file *m, const char *s);

/*
 * ftrace_func_mapper: ip -> one pointer of data (kernel ftrace.c).  add and
 * remove under the caller's serialisation (the probe's register and
 * unregister); find is lock-free and may run in a callback.
 */
USFT_API struct ftrace_func_mapper *allocate_ftrace_func_mapper(void);
/** ftrace_func_mapper_find_ip() - the data slot of @ip, or NULL. */
USFT_API void **ftrace_func_mapper_find_ip(struct ftrace_func_mapper *mapper, unsigned long ip);
/** ftrace_func_mapper_add_ip() - Return: 0; -EBUSY @ip is there; -ENOMEM. */
USFT_API int ftrace_func_mapper_add_ip(struct ftrace_func_mapper *mapper, unsigned long ip,
				       void *data);
/** ftrace_func_mapper_remove_ip() - the data @ip had (NULL if none); freed after a grace period. */
USFT_API void *ftrace_func_mapper_remove_ip(struct ftrace_func_mapper *mapper, unsigned long ip);
/** free_ftrace_func_mapper() - free it now (no reader left), @free_func on each data if given. */
USFT_API void free_ftrace_func_mapper(struct ftrace_func_mapper *mapper, void (*free_func)(void *));

/**
 * tracer_tracing_on() / tracer_tracing_off() / tracer_tracing_is_on() -
 * @tr's tracing_on (NULL: the top level).  Callable from a callback.
 * Without usft_set_trace_array_ops() they act on one flag of the library
 * (on at start); the preload shim makes the top level its recording's
 * tracing_on (the tracing_on file of the control channel).
 */
USFT_API void tracer_tracing_on(struct trace_array *tr);
USFT_API void tracer_tracing_off(struct trace_array *tr);
USFT_API bool tracer_tracing_is_on(struct trace_array *tr);

/**
 * struct usft_trace_array_ops - what tracing on/off and a stack dump mean
 * for the trace arrays of the program that owns them (all called in traced
 * threads, under the hot-path rules).
 * @sz: sizeof(struct usft_trace_array_ops)
 * @is_on, @set_on: @tr's tracing_on (NULL: top level); both or neither
 * @dump_stack: the stacktrace command: record the caller's stack at @ip in
 *	@tr's buffer (kernel __trace_stack()), leaving out @skip frames of
 *	the runtime's own; NULL: the stacktrace command records nothing
 *	(a counted one still uses up its count)
 * @puts: __trace_puts() (<usft/ftrace.h>): @len bytes of text (no NUL, no
 *	newline) into @tr (NULL: every top level the program keeps) as the
 *	kernel's print entry from @ip; any thread, any context.  Return:
 *	whether a buffer took it.  NULL (or an older @sz): no trace takes
 *	text, __trace_puts() returns 0.
 */
struct usft_trace_array_ops {
	size_t sz;
	bool (*is_on)(struct trace_array *tr);
	void (*set_on)(struct trace_array *tr, bool on);
	void (*dump_stack)(struct trace_array *tr, unsigned long ip, int skip);
	bool (*puts)(struct trace_array *tr, unsigned long ip, const char *str, size_t len);
};

/**
 * usft_set_trace_array_ops() - install @ops (static storage; NULL: back to
 * the library's flag).  Return: 0; -EINVAL bad @sz or only one of
 * is_on/set_on.
 */
USFT_API int usft_set_trace_array_ops(const struct usft_trace_array_ops *ops);

USFT_END_DECLS

#endif /* USFT_FTRACE_PROBE_H */
