// SPDX-License-Identifier: MIT
/*
 * inject/preload/shim.c - libusft-preload.so, the LD_PRELOAD shim `usft record`
 * runs programs under (any program built with the patch flags; no relink):
 * its start (the constructor: the USFT_* variables, the tracer) and stop.
 *
 * Constructor: read the USFT_* variables, start the tracer (tracers/).
 * Destructor (and _exit/_Exit): stop it and finish the trace file.  The
 * shim's destructor runs after the program's own (it was initialised
 * before them), so their calls are traced too.
 *
 *   USFT_TRACER       function | function_graph | profile | nop
 *   USFT_FILTER       globs to trace (-l), USFT_NOTRACE globs not to (-n)
 *   USFT_GRAPH_FUNCS  function_graph below these functions only (-g)
 *   USFT_GRAPH_NOTRACE function_graph: not these functions nor below them (-N)
 *   USFT_MAX_DEPTH    function_graph depth limit (--max-graph-depth), 0..1024
 *   USFT_ARGS         function_graph argument specs (-A), ';' between them;
 *                     USFT_RETVAL return-value specs (-R);
 *                     USFT_FUNCGRAPH_RETVAL=1 every return value
 *   USFT_TRIGGERS     -T/--trigger tokens, white space between them: the
 *                     kernel's "func:traceoff[:N]", "func:traceon[:N]" or
 *                     uftrace's "func@trace_on|trace_off|finish|depth=N"
 *   USFT_SIGNALS      --signal tokens: "SIG@trace_on|trace_off|finish"
 *   USFT_FINISH_FD    "N:DEV:INO", `usft record`'s pipe: a finish says so there
 *   USFT_OUTPUT       trace file (default usft.dat), USFT_APPEND=1 keeps it
 *   USFT_BUFFER_SIZE  ring bytes per thread (K/M/G suffixes), 4K..16G;
 *                     USFT_MAX_THREADS ring slots, 4..65536 (a number out of
 *                     range: a message, and nothing is traced)
 *   USFT_PREFAULT=1   fault in the first thread's whole ring at start
 *   USFT_RING_DIR     shared (crash-safe) rings: a file in this directory that
 *                     `usft record` reads after the process dies (unset: private)
 *   USFT_LOSSLESS=1   a full ring makes the thread wait for the writer
 *   USFT_RING_KEEP    rings larger than this (K/M/G; default 64M) give the
 *                     pages written out back to the system (0: every ring)
 *   USFT_CLOCK        auto | mono | counter
 *   USFT_OPTIONS      runtime options (read by libusft itself)
 *   USFT_CONTROL=0    no control socket (tracers/control.c); =1: served even
 *                     when nothing is recorded (-p nop --mount: a tracefs only)
 * In a secure-execution program (set-uid, set-gid, capabilities:
 * getauxval(AT_SECURE)) the shim does nothing at all.
 *
 * The interposed libc functions are in wrappers.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>
#include <usft/usft.h>
#include "preload.h"
#include "trace_triggers.h"
#include "tracer.h"

/* a secure-execution program: the shim did nothing, its destructor neither */
static int preload_secure;

/*
 * A USFT_* number (@s, the value of @name): decimal, in [min, max], with K/M/G (x1024) when
 * @suffixes.  Unset or empty: 0.  Return: false (and a message naming the
 * variable, the value and the range) when it is not such a number.
 */
static bool env_number(const char *name, const char *s, bool suffixes, unsigned long long min,
		       unsigned long long max, unsigned long long *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	*out = 0;
	if (!s || !*s)
		return true;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (suffixes && end != s && end[0] && !end[1]) {
		switch (*end) {
		case 'k': case 'K': shift = 10; end++; break;
		case 'm': case 'M': shift = 20; end++; break;
		case 'g': case 'G': shift = 30; end++; break;
		default: break;
		}
	}
	if (errno || end == s || *end || s[0] == '-' || (shift && v > (max >> shift)) ||
	    (v << shift) < min || (v << shift) > max) {
		if (suffixes)
			fprintf(stderr, "usft: %s=%s is not a size in %lluK..%lluG (bytes, or K, M, "
				"G: x1024): tracing is off (fix or unset it)\n", name, s, min >> 10,
				max >> 30);
		else
			fprintf(stderr, "usft: %s=%s is not a number in %llu..%llu: tracing is off "
				"(fix or unset it)\n", name, s, min, max);
		return false;
	}
	*out = v << shift;
	return true;
}

/*
 * -T/--trigger and --signal (trace_triggers.c): each one refused is said,
 * the others apply.
 */
static void start_triggers(void)
{
	char why[2048];

	usft_triggers_finish_fd(getenv("USFT_FINISH_FD"));
	if (usft_triggers_start(getenv("USFT_TRIGGERS"), getenv("USFT_SIGNALS"), why, sizeof(why)))
		fprintf(stderr, "usft: %s\n", why);
}

__attribute__((constructor)) static void usft_preload_init(void)
{
	struct usft_trace_opts o = { 0 };
	unsigned long long ring, depth, threads, keep;
	char abs_out[PATH_MAX];
	const char *v;
	int ret;

	if (getauxval(AT_SECURE)) {
		preload_secure = 1;
		return;
	}
	preload_resolve_hooks();
	o.tracer = getenv("USFT_TRACER");
	if (!o.tracer || !*o.tracer)
		return;
	o.filter = getenv("USFT_FILTER");
	o.notrace_list = getenv("USFT_NOTRACE");
	o.graph_funcs = getenv("USFT_GRAPH_FUNCS");
	o.graph_notrace = getenv("USFT_GRAPH_NOTRACE");
	o.args_spec = getenv("USFT_ARGS");
	o.retval_spec = getenv("USFT_RETVAL");
	o.funcgraph_retval = (v = getenv("USFT_FUNCGRAPH_RETVAL")) && !strcmp(v, "1");
	o.triggers = getenv("USFT_TRIGGERS");
	o.clock = getenv("USFT_CLOCK");
	o.output = getenv("USFT_OUTPUT");
	/* a number out of range is never clamped into one the user did not ask for */
	if (!env_number("USFT_MAX_DEPTH", getenv("USFT_MAX_DEPTH"), false, 0,
			USFT_MAX_GRAPH_DEPTH, &depth) ||
	    !env_number("USFT_BUFFER_SIZE", getenv("USFT_BUFFER_SIZE"), true, USFT_RING_MIN_BYTES,
			USFT_RING_MAX_BYTES, &ring) ||
	    !env_number("USFT_MAX_THREADS", getenv("USFT_MAX_THREADS"), false, USFT_MIN_THREADS,
			USFT_MAX_THREADS, &threads) ||
	    !env_number("USFT_RING_KEEP", getenv("USFT_RING_KEEP"), true, 0, USFT_RING_MAX_BYTES,
			&keep))
		return;
	/* set to 0: every ring gives its pages back (0 in the options: the default) */
	v = getenv("USFT_RING_KEEP");
	o.ring_keep = v && *v ? (keep ? (size_t)keep : 1) : 0;
	o.max_depth = (int)depth;
	o.buffer_size = (size_t)ring;
	o.max_threads = (unsigned int)threads;
	o.append = (v = getenv("USFT_APPEND")) && !strcmp(v, "1");
	o.prefault = (v = getenv("USFT_PREFAULT")) && !strcmp(v, "1");
	/* a full ring waits for the writer unless USFT_LOSSLESS=0 (drop and count) */
	o.lossless = !(v = getenv("USFT_LOSSLESS")) || strcmp(v, "0");
	o.ring_dir = getenv("USFT_RING_DIR");
	if (!o.output || !*o.output)
		o.output = USFT_TRACE_DEFAULT_FILE;
	/* exec'd images and chdir() must find the same file */
	if (o.output[0] != '/' && getcwd(abs_out, sizeof(abs_out)) &&
	    strlen(abs_out) + strlen(o.output) + 2 < sizeof(abs_out)) {
		strcat(abs_out, "/");
		strcat(abs_out, o.output);
		o.output = abs_out;
	}
	if (preload_libusft_misplaced)
		fprintf(stderr, "usft: libusft.so.0 loads after libc: put it in LD_PRELOAD right "
			"after libusft-preload.so (signal contexts and dlclose handling are off)\n");
	ret = usft_tracer_start(&o);
	if (ret < 0) {
		fprintf(stderr, "usft: %s tracer not started: %s\n", o.tracer, strerror(-ret));
		return;
	}
	if (usft_tracer_active())
		start_triggers();
	if (usft_tracer_active()) {
		/* the next image of this process (exec) appends */
		if (!o.append)
			setenv("USFT_APPEND", "1", 1);
		if (o.output == abs_out)
			setenv("USFT_OUTPUT", abs_out, 1);
		/* `usft stat -P`, `usft attach` reach this process (docs/attach.md) */
		v = getenv("USFT_CONTROL");
		if (!v || strcmp(v, "0")) {
			usft_control_set_conf(&o);
			usft_control_start();
		}
	} else if ((v = getenv("USFT_CONTROL")) && !strcmp(v, "1")) {
		usft_control_start();
	}
	usft_self_begin();
	preload_carry_env_init();
	usft_self_end();
}

static void preload_unbind_dl_hook(void)
{
	preload_unbind_dl();
}

/*
 * usft_attach_start() - what `usft attach` calls in a process it loaded this
 * shim into (inject/cli/inject.c): the program's dlopen() and dlclose()
 * calls are routed through the shim, so the runtime hears of every load and
 * unload as in a process it was preloaded into, then the control socket is
 * served.  The DETACH request routes them back (preload_unbind_dl()).  Return: 0 or -errno (usft_control_start()).
 */
__attribute__((visibility("default"))) int usft_attach_start(void)
{
	preload_bind_dl(false);
	/* the detach puts the entries back (before its reply) */
	usft_control_detach_hook = preload_unbind_dl_hook;
	return usft_control_start();
}

__attribute__((destructor)) static void usft_preload_fini(void)
{
	if (!preload_secure) {
		usft_tracer_stop();
		usft_control_exit();
	}
}
