// SPDX-License-Identifier: MIT
/*
 * core/options.c - runtime options (the kernel's Kconfig choices made
 * switchable at run time), USFT_OPTIONS parsing, counters and `usft stat`.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <usft/version.h>
#include "core/internal.h"

struct usft_options usft_opts = {
	.ops_trampolines = 1,
	.sync = USFT_SYNC_MEMBARRIER,
	.sync_signal = 0,	/* 0: SIGRTMIN + 7 chosen at init */
	.direct_calls = 1,
	.jmp = 1,
	.single_direct_ops = 1,
	.tramp_placement = USFT_TRAMP_NEAR,
	.per_callsite_ops = 0,
	.call_ops = 1,
	.graph_jmp = 1,
	.early_nops = 1,
	.event_tramp = 1,
	.novec_tramp = 1,
};
struct usft_stats usft_counters;

struct usft_option_desc {
	const char *name;
	int *val;
	const char *const *names;	/* symbolic values, or NULL for 0/1 */
	int max;
	bool live;			/* may change while ops are registered */
	const char *help;
	/* further checks of a parsed value: NULL, or why it is refused and the fix */
	const char *(*check)(int v, char *why, size_t len);
};

static const char *const sync_names[] = { "membarrier", "signal", NULL };
static const char *const placement_names[] = { "near", "far", NULL };
static const char *const text_write_names[] = { "auto", "mprotect", "procmem", NULL };
_Static_assert(ARRAY_SIZE(sync_names) == USFT_SYNC_SIGNAL + 2 &&
	       ARRAY_SIZE(placement_names) == USFT_TRAMP_FAR + 2 &&
	       ARRAY_SIZE(text_write_names) == USFT_TEXT_WRITE_PROCMEM + 2,
	       "option value names follow enum usft_sync / usft_tramp_placement");

/*
 * The rendezvous signal must reach a handler usft installs, and no other
 * part of usft or libc may need it: SIGTRAP carries usft's own patching
 * traps, the fault signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE) are
 * synchronous, SIGKILL/SIGSTOP cannot be caught, glibc keeps 32 and 33 for
 * itself, and job-control or terminal signals change what the program does
 * when they arrive.  What is left: SIGUSR1, SIGUSR2, SIGRTMIN..SIGRTMAX.
 */
static const char *check_sync_signal(int v, char *why, size_t len)
{
	const char *abbrev;

	if (v == 0 || v == SIGUSR1 || v == SIGUSR2 || (v >= SIGRTMIN && v <= SIGRTMAX))
		return NULL;
	abbrev = v < SIGRTMIN ? sigabbrev_np(v) : NULL;
	snprintf(why, len,
		 "signal %d (%s%s) cannot carry usft's thread rendezvous%s; use 0 (SIGRTMIN+7), "
		 "%d (SIGUSR1), %d (SIGUSR2) or a real-time signal %d..%d (SIGRTMIN..SIGRTMAX)",
		 v, abbrev ? "SIG" : "", abbrev ? abbrev : "kept by libc",
		 v == SIGTRAP ? ": usft patches with SIGTRAP" : "", SIGUSR1, SIGUSR2,
		 SIGRTMIN, SIGRTMAX);
	return why;
}

static const struct usft_option_desc usft_option_table[] = {
	{ "ops_trampolines", &usft_opts.ops_trampolines, NULL, 1, false,
	  "x86-64 per-ops trampolines for sites with one ops (0 forces the list path)" },
	{ "sync", &usft_opts.sync, sync_names, 1, true,
	  "how other threads are synchronised after a text write" },
	{ "sync_signal", &usft_opts.sync_signal, NULL, 64, false,
	  "signal number for thread rendezvous (0 = SIGRTMIN+7)", check_sync_signal },
	{ "direct_calls", &usft_opts.direct_calls, NULL, 1, false,
	  "sites call a lone direct trampoline (0: always through ftrace_regs_caller)" },
	{ "jmp", &usft_opts.jmp, NULL, 1, true,
	  "trampolines that call the original are attached in jmp mode (x86-64)" },
	{ "single_direct_ops", &usft_opts.single_direct_ops, NULL, 1, true,
	  "trampolines share one direct ops (batch API) instead of one ops each" },
	{ "tramp_placement", &usft_opts.tramp_placement, placement_names, 1, true,
	  "trampoline memory near the text (near) or anywhere (far)" },
	{ "per_callsite_ops", &usft_opts.per_callsite_ops, NULL, 1, false,
	  "per-site ops arrays instead of the global ops list walk" },
	{ "call_ops", &usft_opts.call_ops, NULL, 1, false, "arm64 CALL_OPS literals" },
	{ "graph_jmp", &usft_opts.graph_jmp, NULL, 1, false,
	  "x86-64: a site whose only ops is a graph ops jumps to a stub that calls the body" },
	{ "stat_at_exit", &usft_opts.stat_at_exit, NULL, 1, true,
	  "print these options and the counters on stderr when the process exits" },
	{ "text_write", &usft_opts.text_write, text_write_names, 2, true,
	  "how text is written: mprotect RWX, /proc/self/mem (procmem), or auto (procmem "
	  "once a W^X policy refuses mprotect)" },
	{ "early_nops", &usft_opts.early_nops, NULL, 1, false,
	  "x86-64: convert gcc's 1-byte NOPs at start-up while the process has one thread "
	  "(read from USFT_OPTIONS by libusft's constructor)" },
	{ "event_tramp", &usft_opts.event_tramp, NULL, 1, false,
	  "x86-64: the function tracer's per-ops trampoline writes its events itself "
	  "(0: it calls function_trace_call() for each)" },
	{ "novec_tramp", &usft_opts.novec_tramp, NULL, 1, false,
	  "x86-64: a site whose function takes no floating-point or vector argument (its "
	  "DWARF says so) calls a per-ops trampoline copy that leaves xmm0-7 alone" },
};

static const struct usft_option_desc *find_option(const char *name, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(usft_option_table); i++)
		if (strlen(usft_option_table[i].name) == len &&
		    !strncmp(usft_option_table[i].name, name, len))
			return &usft_option_table[i];
	return NULL;
}

/* the values @d accepts, for an error message */
static void allowed_values(const struct usft_option_desc *d, char *buf, size_t len)
{
	size_t n = 0;

	if (!d->names) {
		snprintf(buf, len, "a number 0..%d", d->max);
		return;
	}
	buf[0] = 0;
	for (int i = 0; d->names[i] && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s (%d)", i ? ", " : "", d->names[i], i);
}

static int parse_value(const struct usft_option_desc *d, const char *v, size_t len, int *out,
		       char *why, size_t wlen)
{
	char buf[32], allowed[96], *end;
	long n;

	if (!len || len >= sizeof(buf)) {
		allowed_values(d, allowed, sizeof(allowed));
		snprintf(why, wlen, "%s for %s; use %s", len ? "too long a value" : "an empty value",
			 d->name, allowed);
		return -EINVAL;
	}
	memcpy(buf, v, len);
	buf[len] = 0;
	if (d->names) {
		for (int i = 0; d->names[i]; i++)
			if (!strcmp(buf, d->names[i])) {
				*out = i;
				return 0;
			}
	}
	errno = 0;
	n = strtol(buf, &end, 0);
	if (errno || end == buf || *end || n < 0 || n > d->max) {
		allowed_values(d, allowed, sizeof(allowed));
		snprintf(why, wlen, "'%s' is not a value of %s; use %s", buf, d->name, allowed);
		return -EINVAL;
	}
	if (d->check && d->check((int)n, why, wlen))
		return -EINVAL;
	*out = (int)n;
	return 0;
}

static int set_option(const char *name, size_t nlen, const char *val, size_t vlen, bool startup,
		      char *why, size_t wlen)
{
	const struct usft_option_desc *d = find_option(name, nlen);
	int v, ret;

	if (!d) {
		snprintf(why, wlen, "no option named '%.*s' (usft stat lists them)", (int)nlen, name);
		return -ENOENT;
	}
	ret = parse_value(d, val, vlen, &v, why, wlen);
	if (ret)
		return ret;
	if (!startup && !d->live && READ_ONCE(ftrace_ops_list) != &ftrace_list_end &&
	    *d->val != v) {
		snprintf(why, wlen, "%s cannot change while ops are registered; set it before "
			 "the first registration or in USFT_OPTIONS", d->name);
		return -EBUSY;
	}
	WRITE_ONCE(*d->val, v);
	return 0;
}

/* "a=1,b=near" ; returns 0 or the first error (and logs it) */
int usft_options_parse(const char *s)
{
	int first = 0;

	while (s && *s) {
		const char *end = strchr(s, ',');
		const char *eq;
		size_t len = end ? (size_t)(end - s) : strlen(s);
		char why[256];
		int ret;

		eq = memchr(s, '=', len);
		if (len) {
			if (!eq)
				ret = set_option(s, len, "1", 1, true, why, sizeof(why));
			else
				ret = set_option(s, eq - s, eq + 1, len - (eq - s) - 1, true, why,
						 sizeof(why));
			if (ret) {
				pr_warn("usft: USFT_OPTIONS: bad option '%.*s' ignored: %s\n",
					(int)len, s, why);
				if (!first)
					first = ret;
			}
		}
		s = end ? end + 1 : NULL;
	}
	return first;
}

USFT_API int usft_set_option(const char *name, const char *value)
{
	USFT_API_ENTER(busy);
	char why[256];
	int ret;

	if (busy)
		return usft_err(busy);
	if (!name || !value)
		return usft_err(-EINVAL);
	ret = ftrace_lazy_init();
	if (ret)
		return usft_err(ret);
	pthread_mutex_lock(&ftrace_lock);
	ret = set_option(name, strlen(name), value, strlen(value), false, why, sizeof(why));
	pthread_mutex_unlock(&ftrace_lock);
	if (ret)
		pr_warn("usft: usft_set_option(\"%s\", \"%s\"): %s\n", name, value, why);
	return usft_err(ret);
}

USFT_API int usft_get_option(const char *name, char *buf, size_t len)
{
	const struct usft_option_desc *d;
	int v, n;

	if (!name || !buf)
		return usft_err(-EINVAL);
	d = find_option(name, strlen(name));
	if (!d)
		return usft_err(-ENOENT);
	v = READ_ONCE(*d->val);
	if (d->names)
		n = snprintf(buf, len, "%s", d->names[v]);
	else
		n = snprintf(buf, len, "%d", v);
	return n < 0 || (size_t)n >= len ? usft_err(-ENOSPC) : 0;
}

USFT_API const char *usft_option_name(unsigned int i)
{
	return i < ARRAY_SIZE(usft_option_table) ? usft_option_table[i].name : NULL;
}

USFT_API int usft_stat(struct usft_stats *st)
{
	USFT_API_ENTER(busy);
	size_t sz;

	if (busy)
		return usft_err(busy);
	/* as the kernel's bpf_check_uarg_tail_zero() for bpf_prog_info */
	if (!st || !usft_opts_valid(st, st->sz, sizeof(size_t), sizeof(*st)))
		return usft_err(-EINVAL);
	sz = st->sz < sizeof(*st) ? st->sz : sizeof(*st);
	ftrace_lazy_init();
	pthread_mutex_lock(&ftrace_lock);
	usft_counters.nr_sites = ftrace_nr_records();
	ftrace_direct_stats(&usft_counters.nr_direct_in_range,
			    &usft_counters.nr_direct_out_of_range);
	ftrace_callsite_stats(&usft_counters.nr_callsites, &usft_counters.callsite_bytes);
	usft_counters.disabled = ftrace_disabled;
	memcpy((char *)st + sizeof(size_t), (char *)&usft_counters + sizeof(size_t),
	       sz - sizeof(size_t));
	pthread_mutex_unlock(&ftrace_lock);
	return 0;
}

USFT_API void usft_print_stat(FILE *out)
{
	struct usft_stats st = { .sz = sizeof(st) };
	char buf[32];

	usft_stat(&st);
	fprintf(out, "usft %s\n", USFT_VERSION_STRING);
	fprintf(out, "options:\n");
	for (size_t i = 0; i < ARRAY_SIZE(usft_option_table); i++) {
		usft_get_option(usft_option_table[i].name, buf, sizeof(buf));
		fprintf(out, "  %-18s %-10s # %s\n", usft_option_table[i].name, buf,
			usft_option_table[i].help);
	}
	fprintf(out, "counters:\n");
#define P(f) fprintf(out, "  %-22s %lu\n", #f, st.f)
	P(nr_objects); P(nr_sites); P(nr_enabled); P(nr_ops); P(nr_updates);
	P(nr_sites_written); P(nr_syncs); P(nr_grace_periods); P(nr_trampolines);
	P(nr_int3_hits); P(nr_direct_in_range); P(nr_direct_out_of_range);
	P(nr_callsites); P(callsite_bytes); P(nr_stop_machine);
	P(nr_reclaim_scans); P(nr_rv_sleepers);
	P(nr_notrap_batches); P(nr_wx_refused); P(nr_procmem_writes); P(nr_early_nops);
	P(nr_event_trampolines); P(nr_nop_conversions_refused);
#undef P
	fprintf(out, "  %-22s %s\n", "state", st.disabled ? "dead (ftrace_bug)" : "ok");
}

/*
 * stat_at_exit=1: a program's own counters, which `usft stat` (a fresh
 * runtime in the usft process) cannot show.  The option is only ever set
 * by an initialised runtime.  Never wait at exit: when another thread holds
 * ftrace_lock the counters are skipped (this thread holding it itself, an
 * exit() from a callback, passes the recursive mutex and reads them
 * mid-update, which is harmless).
 */
__attribute__((destructor)) static void usft_stat_at_exit(void)
{
	if (!READ_ONCE(usft_opts.stat_at_exit))
		return;
	if (pthread_mutex_trylock(&ftrace_lock)) {
		fprintf(stderr, "usft: stat_at_exit (pid %d): another thread is inside usft at "
			"exit; counters not printed\n", (int)getpid());
		return;
	}
	pthread_mutex_unlock(&ftrace_lock);
	fprintf(stderr, "usft: stat_at_exit (pid %d):\n", (int)getpid());
	usft_print_stat(stderr);
}

USFT_API const char *usft_version(void)
{
	return USFT_VERSION_STRING;
}
