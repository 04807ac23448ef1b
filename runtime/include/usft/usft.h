/* SPDX-License-Identifier: MIT */
/*
 * usft/usft.h - library extras that have no kernel counterpart: explicit
 * initialisation, runtime options, counters, version and logging.
 */
#ifndef USFT_USFT_H
#define USFT_USFT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <usft/common.h>

USFT_BEGIN_DECLS

/**
 * usft_init() - initialise the runtime now (it also initialises itself on
 * first use).  Thread-safe and idempotent.
 * Return: 0 or a negative errno (-ENODEV when the runtime is dead).
 */
USFT_API int usft_init(void);

/**
 * usft_set_option() - set one runtime option by name ("ops_trampolines",
 * "sync", ...).  The same names are accepted in USFT_OPTIONS="a=1,b=2".
 * Return: 0; -ENOENT unknown option; -EINVAL bad value; -EBUSY the option
 * cannot change while ops are registered.
 */
USFT_API int usft_set_option(const char *name, const char *value);

/** usft_get_option() - current value as a string into @buf. */
USFT_API int usft_get_option(const char *name, char *buf, size_t len);

/** usft_option_name() - name of option @i (0-based), NULL past the last. */
USFT_API const char *usft_option_name(unsigned int i);

/* Counters reported by usft_stat() and `usft stat`. */
struct usft_stats {
	size_t sz;			/* set by the caller: sizeof(struct usft_stats) */
	unsigned long nr_sites;		/* records in all loaded objects */
	unsigned long nr_objects;	/* objects with a site table */
	unsigned long nr_enabled;	/* sites currently patched */
	unsigned long nr_ops;		/* registered ops */
	unsigned long nr_updates;	/* code-update passes run */
	unsigned long nr_sites_written;	/* site rewrites performed */
	unsigned long nr_syncs;		/* cross-thread synchronisations */
	unsigned long nr_grace_periods;	/* tasks grace periods waited for */
	unsigned long nr_trampolines;	/* per-ops trampolines alive */
	unsigned long nr_int3_hits;	/* threads that hit a patch-in-progress INT3 */
	unsigned long nr_direct_in_range;	/* direct sites patched straight */
	unsigned long nr_direct_out_of_range;	/* direct sites via the caller */
	int disabled;			/* ftrace_bug() fired */
	unsigned long nr_callsites;	/* per_callsite_ops: sites with an ops array */
	unsigned long callsite_bytes;	/* memory those arrays take */
	unsigned long nr_stop_machine;	/* text changes made with the other threads stopped */
	unsigned long nr_reclaim_scans;	/* scans proving freed trampoline memory unused */
	unsigned long nr_rv_sleepers;	/* threads asleep in the kernel a rendezvous left alone */
	unsigned long nr_notrap_batches;	/* batches written without INT3 (a thread blocked SIGTRAP) */
	unsigned long nr_wx_refused;	/* calls refused with EPERM: a W^X policy forbids writable text */
	unsigned long nr_procmem_writes;	/* text writes made through /proc/self/mem (W^X) */
	unsigned long nr_early_nops;	/* x86-64: gcc NOP runs converted at start-up (one thread) */
	unsigned long nr_event_trampolines;	/* x86-64: per-ops trampolines writing their ops' events */
	unsigned long nr_nop_conversions_refused;	/* NOP conversions refused: a thread could not be moved (x86-64) or stopped (arm64) */
};

/**
 * usft_stat() - snapshot of the counters.  A caller built against a newer
 * usft may pass a larger struct: the counters this library knows are filled
 * in, provided every byte past them is zero.
 * Return: 0 or -EINVAL (sz smaller than sz itself, or a non-zero byte past
 * the struct this library knows).
 */
USFT_API int usft_stat(struct usft_stats *st);

/** usft_print_stat() - options and counters in `usft stat` format. */
USFT_API void usft_print_stat(FILE *out);

/**
 * usft_print_enabled_functions() - the sites that call out now, one a line,
 * in the format of the kernel's tracefs enabled_functions:
 * "name (refs) R I D O M" (the flag letters: FTRACE_FL_REGS, IPMODIFY,
 * DIRECT, CALL_OPS, MODIFIED), "\ttramp: 0x..." when the site calls an ops
 * trampoline.  Return: the number of lines.
 */
USFT_API unsigned long usft_print_enabled_functions(FILE *out);

/** usft_print_touched_functions() - the same for every site ever changed (tracefs touched_functions). */
USFT_API unsigned long usft_print_touched_functions(FILE *out);

/**
 * usft_print_available_functions() - every site, one a line, as the
 * kernel's available_filter_functions: "name", or "name [module]" for a
 * shared object ("libfoo" for libfoo.so.1); with @addrs the site address
 * first, in hex (available_filter_functions_addrs).  Line N is the function
 * a filter write of the number N selects.  Return: the number of lines.
 */
USFT_API unsigned long usft_print_available_functions(FILE *out, int addrs);

/**
 * usft_print_ops_hash() - the functions in @ops' filter hash (@which 0)
 * or notrace hash, one a line in address order (reading set_ftrace_filter /
 * set_ftrace_notrace).  Return: the number of lines.
 */
struct ftrace_ops;
USFT_API unsigned long usft_print_ops_hash(FILE *out, struct ftrace_ops *ops, int which);

/** usft_version() - "MAJOR.MINOR.PATCH" */
USFT_API const char *usft_version(void);

enum usft_log_level { USFT_LOG_ERR, USFT_LOG_WARN, USFT_LOG_INFO, USFT_LOG_DEBUG };
typedef void (*usft_print_fn_t)(enum usft_log_level level, const char *fmt,
				va_list ap);

/**
 * usft_set_print() - replace the log sink (default: stderr, level from
 * USFT_LOG=err|warn|info|debug, warn by default).  Return: the old one.
 */
USFT_API usft_print_fn_t usft_set_print(usft_print_fn_t fn);

/**
 * usft_set_notrace_hook() - have @hook called around the work libusft does
 * in a program's thread on its own account (the records of objects that
 * dlclose() unloads): @hook(1) before, @hook(0) after, so a tracer can keep
 * what that work calls (a program's own malloc(), say) out of its trace.
 * NULL removes it.  The preload shim's tracers use it.
 */
USFT_API void usft_set_notrace_hook(void (*hook)(int begin));

/**
 * usft_exec_begin() - the calling thread is about to call exec*(): until
 * the exec replaces the image, or usft_exec_end() after one that failed,
 * no thread rendezvous of the runtime (its sync_signal) runs, and none of
 * its signals is left pending for the caller, so none reaches the new
 * image (where it would terminate it).  Waits for a rendezvous that runs.
 * Neither the signal mask nor a disposition changes.  Does nothing in a
 * vfork() child.  The preload shim's exec wrappers call it; a program
 * linked with -lusft that execs while other threads run may too.
 * Return: the token for usft_exec_end().
 */
USFT_API int usft_exec_begin(void);
/** usft_exec_end() - the exec returned (failed): rendezvous may run again */
USFT_API void usft_exec_end(int token);

/**
 * usft_signal_hook() - have @fn(@sig) run, in the handler, each time the
 * process receives @sig, before the program's own disposition for it: the
 * program's handler then runs as without usft (its mask, SA_RESTART,
 * SA_ONSTACK, SA_NODEFER and SA_RESETHAND kept, also when the program
 * installs it later: sigaction() reports the program's), and SIG_IGN or
 * SIG_DFL leave the signal to @fn alone.  @fn runs in a signal handler:
 * async-signal-safe code only (errno is kept for it).  The signal
 * `usft record --signal` uses.
 * @why: if not NULL, set to the reason of a refusal
 * Return: 0; -EINVAL no such signal, SIGKILL/SIGSTOP, a fault signal
 * (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGSYS), SIGTRAP or usft's rendezvous
 * signal; -EBUSY hooked already.
 */
USFT_API int usft_signal_hook(int sig, void (*fn)(int sig), const char **why);

/**
 * usft_signal_unhook() - undo usft_signal_hook(): the program's disposition
 * goes back to the kernel.  Return: 0; -EINVAL @sig is not hooked.
 */
USFT_API int usft_signal_unhook(int sig);

/* usft_func_arg_types(): what a parameter or return value is, for display */
enum usft_arg_kind {
	USFT_ARG_NONE = 0,	/* void (a return value only) */
	USFT_ARG_SINT,		/* signed integer or enum of @size bytes */
	USFT_ARG_UINT,
	USFT_ARG_PTR,
	USFT_ARG_STR,		/* char * (signed, unsigned, cv-qualified) */
	USFT_ARG_FLOAT,
	USFT_ARG_DOUBLE,
	USFT_ARG_CHAR,
	USFT_ARG_BOOL,
	USFT_ARG_UNSUPP,	/* passed in memory: struct or union by value, long double */
};

struct usft_arg_type {
	unsigned char kind;	/* enum usft_arg_kind */
	unsigned char size;	/* bytes */
};

/**
 * usft_func_arg_types() - the parameter and return types of the function
 * at @func (its address or its site) from its object's DWARF (libdw).
 * @args: the first @max parameters' types; @ret: the return type (may be
 * NULL); @variadic: set when it takes "..." (may be NULL).
 * Return: the number of declared parameters (may exceed @max); -ENOENT no
 * DWARF for it (no -g, stripped, separate debug file); -ESTALE the
 * object's file is not the one loaded (replaced or rewritten since: its
 * DWARF describes other code); -EINVAL @func is in no loaded object.
 */
USFT_API int usft_func_arg_types(unsigned long func, struct usft_arg_type *args, int max,
				 struct usft_arg_type *ret, bool *variadic);

/**
 * usft_site_bytes() - copy the current bytes of the site at @ip (a site or a
 * function address) into @buf. Return: bytes copied or -EINVAL.
 */
USFT_API int usft_site_bytes(unsigned long ip, unsigned char *buf, size_t len);

/**
 * usft_kallsyms_lookup() - name of the function containing @addr.
 * Return: the name (valid until the object is unloaded) or NULL.
 */
USFT_API const char *usft_kallsyms_lookup(unsigned long addr, unsigned long *offset);

/** usft_lookup_name() - address of function @name (first match) or 0. */
USFT_API unsigned long usft_lookup_name(const char *name);

/**
 * usft_match_sites() - the sites selected by @buf, a filter string in the
 * syntax of ftrace_set_filter() (globs, '!', ':mod:', indexes; tokens
 * separated by white space; @len < 0: NUL-terminated), without an ops: the
 * kernel's set_graph_function matching.  The first @max sites go to @ips,
 * sorted ascending (@ips may be NULL when @max is 0: count only).
 * Return: the number of sites selected (may exceed @max); -EINVAL (a token
 * matching nothing), -ENOMEM, -ENODEV.
 */
USFT_API int usft_match_sites(const char *buf, int len, unsigned long *ips, size_t max);

/**
 * usft_ftrace_set_regex_mod() - ftrace_set_filter() (@enable 1) or
 * ftrace_set_notrace() (@enable 0) for an owner of cached ":mod:" filters
 * (the kernel's trace_array mod_trace list, ftrace_regex_release()): with
 * @cached set, @ops' new filter hash carries FTRACE_HASH_FL_MOD, so that
 * while it has no function it selects none (a filter waiting for its
 * object) instead of every function; @cached clear drops the flag.  Only
 * the filter hash has the flag (@cached is ignored with @enable 0).  A
 * NULL @buf changes only the flag (and, with @reset, empties the hash).
 * Return: as ftrace_set_filter().
 */
USFT_API int usft_ftrace_set_regex_mod(struct ftrace_ops *ops, unsigned char *buf, int len,
				       int reset, int enable, bool cached);

/**
 * usft_track_ops_hashes() - with @track set, every dlclose() clears the
 * functions of the object it unloads from @ops' filter and notrace hashes
 * also while @ops is not registered (the kernel's clear_mod_from_hashes()
 * walks every trace array's ops), so that an object loaded later at the
 * same address is not selected by entries naming the old one; the entries
 * stay, with address 0, as for a registered ops.  With @track clear, @ops
 * is forgotten: call it before @ops is freed.
 * Return: 0; -EINVAL NULL @ops; -ENOMEM.
 */
USFT_API int usft_track_ops_hashes(struct ftrace_ops *ops, bool track);

/**
 * usft_set_unload_hook() - have @hook(lo, hi) called when a dlclose()
 * unloads the object whose text is [lo, hi), after the hashes were cleared,
 * with ftrace_lock held and before any other object can be loaded there:
 * for the ips a user keeps outside ftrace hashes.  @hook must not call into
 * usft (the loaded objects' list is write-locked).  NULL: none.
 */
USFT_API void usft_set_unload_hook(void (*hook)(unsigned long lo, unsigned long hi));

/**
 * usft_module_exists() - is an object of "module" name @name (the name
 * available_filter_functions prints in brackets, "main" for the program)
 * loaded?  The kernel's module_exists(), which decides whether a ":mod:"
 * filter is cached for later.  false also when usft cannot look.
 */
USFT_API bool usft_module_exists(const char *name);

/**
 * usft_alloc_trampoline() - copy @len bytes of position-independent code
 * into executable trampoline memory and return its address.  Placement
 * follows the tramp_placement option: "near" puts it within branch range
 * of @near_ip (0: the main executable's text), falling back to anywhere
 * when no window in range has room; "far" puts it anywhere (the kernel's
 * EXECMEM_BPF on arm64).  The memory is never writable and executable.
 * Return: the code address, or NULL and errno (ENOMEM, EINVAL).
 */
USFT_API void *usft_alloc_trampoline(const void *code, size_t len, unsigned long near_ip);

/**
 * usft_free_trampoline() - give back what usft_alloc_trampoline() returned;
 * it is reused only after every thread has left it (tasks grace period).
 */
USFT_API void usft_free_trampoline(void *addr, size_t len);

USFT_END_DECLS

#endif /* USFT_USFT_H */
