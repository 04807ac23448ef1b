// SPDX-License-Identifier: MIT
/*
 * inject/cli/cli.c - what the `usft` subcommands share (cli.h): the usage
 * texts and usage errors, option values, finding a program on PATH and
 * the preload shim.  Every command file (record.c, list.c, attach.c, ...)
 * uses these; usft.c only dispatches to the commands.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <usft/usft.h>
#include "cli.h"

static const struct {
	const char *cmd;
	const char *text;
} usage_text[] = {
	{ "record",
	  "usage: usft record [OPTIONS] [--] PROG [ARGS...]\n"
	  "       usft record -P PID [OPTIONS]\n"
	  "Run PROG (built with the patch flags) under the usft preload shim and record a trace,\n"
	  "or attach to the running process PID, record, and detach (docs/attach.md).\n"
	  "  -P, --pid PID            record the running process PID (no PROG)\n"
	  "      --duration SECONDS   -P: stop after SECONDS (default: ^C or PID's exit)\n"
	  "      --mount DIR          also mount the process's tracefs on DIR (as usft mount)\n"
	  "                           once its runtime answers, unmounted when the recording ends\n"
	  "  -p, --plugin TRACER      function (default), function_graph, profile or nop\n"
	  "      --tracer TRACER      the same as --plugin\n"
	  "  -l, --filter GLOB        trace only matching functions (repeatable)\n"
	  "  -n, --notrace GLOB       do not trace matching functions (repeatable)\n"
	  "  -g, --graph-function F   function_graph: only F and what it calls (repeatable)\n"
	  "  -N, --graph-notrace F    function_graph: not F nor what it calls, as the kernel's\n"
	  "                           set_graph_notrace (repeatable)\n"
	  "      --max-graph-depth N  function_graph: record N levels at most (0..1024)\n"
	  "  -A, --argument F@ARGS    function_graph: show F's arguments, ARGS: arg1,arg2/s,\n"
	  "                           fparg1, args (all; types from DWARF) (repeatable)\n"
	  "  -R, --retval F@retval    function_graph: show F's return value (repeatable)\n"
	  "      --funcgraph-retval   function_graph: every return value, as the kernel's option\n"
	  "  -T, --trigger TRG        F:traceoff[:N] / F:traceon[:N] / F:stacktrace[:N] (the\n"
	  "                           kernel's set_ftrace_filter commands) or F@ACTION[,ACTION] (uftrace's: trace_on,\n"
	  "                           trace_off, finish, depth=N) (repeatable)\n"
	  "      --signal SIG@ACTION  on signal SIG: trace_on, trace_off or finish (repeatable)\n"
	  "  -o, --output FILE        trace file (default usft.dat), replaced once PROG ran\n"
	  "  -b, --buffer-size KB     ring buffer per thread in KiB, 4..16777216 (default 1024)\n"
	  "  -C, --clock CLOCK        auto, mono (clock_gettime) or counter (cycle counter)\n"
	  "  -O, --option NAME=VALUE  runtime option (see `usft stat`), repeatable\n"
	  "      --prefault           fault in the first thread's ring before PROG runs\n"
	  "      --lossless           a full ring makes the thread wait for the writer (the\n"
	  "                           default: no event lost; the program slows down instead)\n"
	  "      --drop               a full ring drops the event and counts it (the kernel's\n"
	  "                           non-overwrite mode: the program keeps its pace)\n"
	  "      --rings shared|private  shared (default): rings in a file usft reads if PROG\n"
	  "                           dies (crash-safe); private: in PROG's memory only\n"
	  "      --follow-symlink     -o FILE may be a symbolic link: replace what it points to\n"
	  "  -q, --quiet              no summary line\n"
	  "Exit status: PROG's; 125 usft failed, 126 PROG not executable, 127 not found,\n"
	  "128+N PROG killed by signal N.\n" },
	{ "report",
	  "usage: usft report [-i FILE] [--format FORMAT] [VIEW] [OPTIONS] [-o OUT]\n"
	  "Print a trace file: the kernel's trace formats (text), Chrome trace-event JSON,\n"
	  "folded stacks, a trace-cmd file, or a summary or call graph (uftrace's views).\n"
	  "  -i, --input FILE         trace file (default usft.dat)\n"
	  "  -F, --format FORMAT      text (default), json, folded (flamegraph.pl, speedscope,\n"
	  "                           inferno: \"a;b;c self_ns\") or trace-cmd (a trace.dat: -o)\n"
	  "      --summary            per function: total, self, calls, avg/min/max\n"
	  "  -s, --sort KEYS          summary order: total (default), self, call, avg, min, max,\n"
	  "                           func, comma-separated (implies --summary)\n"
	  "  -g, --graph FUNC         the calls below FUNC (a glob), merged by call path\n"
	  "      --tid TIDS           only these threads (comma-separated)\n"
	  "      --pid PIDS           only these processes (comma-separated)\n"
	  "  -t, --time-filter TIME   summary/graph/folded: leave out calls shorter than TIME\n"
	  "                           (ns, us, ms, s; a bare number is us, as tracing_thresh)\n"
	  "  -D, --depth N            summary/graph/folded: leave out calls N deep or deeper\n"
	  "      --no-demangle        C++ names as written (default: demangled, no parameters)\n"
	  "      --demangle MODE      simple (default), full (with parameters) or no\n"
	  "  -o, --output OUT         write there instead of stdout (replaced once complete)\n"
	  "      --no-header          text: leave out the '#' header lines\n"
	  "      --follow-symlink     -o OUT may be a symbolic link: replace what it points to\n" },
	{ "info",
	  "usage: usft info [-i FILE]\n"
	  "Print what a trace file holds: per process the program, command line, usft version,\n"
	  "tracer, clock, options (buffer size, -l, -n, -g, depth), first and last event, threads,\n"
	  "events, lost events and how the process ended.\n"
	  "  -i, --input FILE         trace file (default usft.dat)\n" },
	{ "list",
	  "usage: usft list -f PROG [GLOB]\n"
	  "List the patchable functions of PROG and of the libraries it loads\n"
	  "(\"func\" for PROG's own, \"func [library]\" for the others).\n" },
	{ "stat",
	  "usage: usft stat [-P PID]\n"
	  "Print the runtime options (USFT_OPTIONS applied) and the counters of a fresh runtime\n"
	  "(zero: this command traces nothing). A program's own counters: run it with\n"
	  "USFT_OPTIONS=stat_at_exit=1, call usft_print_stat() in it, or use -P.\n"
	  "  -P, --pid PID            the options and live counters of process PID\n" },
	{ "attach",
	  "usage: usft attach PID [--mount DIR]\n"
	  "Load the usft runtime into the running process PID (or join the one it has) and\n"
	  "leave its control socket serving; nothing is traced until a recording starts.\n"
	  "      --mount DIR          then mount its tracefs on DIR (as usft mount PID DIR);\n"
	  "                           usft detach PID or its exit unmounts it\n"
	  "Exit status: 0; 3 no such process, 4 not permitted, 5 no patchable functions,\n"
	  "6 another architecture, 7 no dynamic loader, 8 traced by a debugger,\n"
	  "9 it exited or exec'd during the attach, 1 other failures.\n" },
	{ "detach",
	  "usage: usft detach PID\n"
	  "Stop recording in process PID, put every site back as it was, end usft's threads\n"
	  "there.  The runtime stays loaded; a later attach reuses it.\n"
	  "Exit status: 0; 10 PID has no usft control socket, or as for attach.\n" },
	{ "mount",
	  "usage: usft mount [-f] PID DIR\n"
	  "Mount the kernel's tracefs files for process PID on DIR (FUSE, fsname tracefs),\n"
	  "attaching first if it has no usft control socket: echo function > DIR/current_tracer,\n"
	  "cat DIR/trace_pipe, ...  Unmount with fusermount3 -u DIR; PID's exit unmounts it.\n"
	  "  -f, --foreground         stay in the foreground (default: return once mounted)\n"
	  "Exit status: 0; 1 the mount failed, or as for attach.\n" },
};

void usft_usage(FILE *out, const char *cmd)
{
	if (cmd) {
		for (size_t i = 0; i < sizeof(usage_text) / sizeof(usage_text[0]); i++)
			if (!strcmp(cmd, usage_text[i].cmd)) {
				fputs(usage_text[i].text, out);
				return;
			}
	}
	fprintf(out,
		"usage: usft <command> [options]\n"
		"usft %s - the Linux kernel's ftrace in userspace\n\n"
		"commands:\n"
		"  record   run a program, or attach to a running one, and record a trace\n"
		"  attach   load usft into a running process\n"
		"  detach   take usft out of a running process\n"
		"  mount    mount the tracefs of a running process\n"
		"  report   print a recorded trace (text, JSON, summary, call graph, folded, trace-cmd)\n"
		"  info     what a trace file holds (program, options, threads, events, exit)\n"
		"  list     list the patchable functions of a program\n"
		"  stat     print runtime options and counters\n"
		"  help     help on a command (usft help record)\n\n"
		"  -V, --version, -h, --help\n", usft_version());
}

int usft_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "usft %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'usft %s --help'.\n", cmd);
	return USFT_EXIT_USAGE;
}

int usft_find_program(const char *prog, char *out, size_t len)
{
	const char *path = getenv("PATH");
	int err = ENOENT;

	if (strchr(prog, '/')) {
		if (access(prog, F_OK))
			return -1;
		snprintf(out, len, "%s", prog);
		return 0;
	}
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		struct stat st;

		snprintf(out, len, "%.*s%s%s", (int)n, path, n ? "/" : "", prog);
		if (!stat(out, &st) && S_ISREG(st.st_mode)) {
			if (!access(out, X_OK))
				return 0;
			err = EACCES;
		}
		path = end ? end + 1 : "";
	}
	errno = err;
	return -1;
}

/*
 * A decimal number of @opt in [min, max]; Return: false after the usage
 * error that names the option, the value and the range (in *rc).
 */
bool usft_cli_number(const char *cmd, const char *opt, const char *arg, long long min,
		     long long max, const char *what, long long *out, int *rc)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		*rc = usft_usage_error(cmd, "%s %s: %s; use %lld..%lld (%s)", opt, arg,
				       errno == ERANGE || (end != arg && !*end) ? "out of range" :
				       "not a number", min, max, what);
		return false;
	}
	*out = v;
	return true;
}

/* getopt_long()'s '?' (unknown option) or ':' (its value missing), said once */
int usft_bad_option(const char *cmd, int c, char **argv)
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		return usft_usage_error(cmd, "option '%s' needs a value", arg);
	if (optopt && strncmp(arg, "--", 2))
		return usft_usage_error(cmd, "unknown option '-%c'", optopt);
	return usft_usage_error(cmd, "unknown option '%s'", arg);
}

bool usft_readable(const char *p)
{
	return !access(p, R_OK);
}

/* the shim next to us (build tree), under ../lib (install tree), or installed */
int usft_find_preload(char *out, size_t len)
{
	char self[PATH_MAX], *slash;
	const char *env = getenv("USFT_PRELOAD");
	ssize_t n;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return usft_readable(out) ? 0 : -1;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			if (snprintf(out, len, "%s/%s", self, USFT_PRELOAD_NAME) < (int)len &&
			    usft_readable(out))
				return 0;
			if (snprintf(out, len, "%s/%s/%s", self, USFT_BIN_TO_LIB,
				     USFT_PRELOAD_NAME) < (int)len && usft_readable(out))
				return 0;
		}
	}
	snprintf(out, len, "%s/%s", USFT_INSTALL_LIBDIR, USFT_PRELOAD_NAME);
	return usft_readable(out) ? 0 : -1;
}
