// SPDX-License-Identifier: MIT
/*
 * inject/cli/usft.c - the `usft` command (see docs/usft.1):
 *
 *   usft record [-p TRACER] [-l GLOB]... [-n GLOB]... [-g FUNC]... [-o FILE]
 *               [-b KB] [-C CLOCK] [-O NAME=VALUE]... [--max-graph-depth N]
 *               [-q] [--] PROG [ARGS]
 *   usft report [-i FILE] [--format text|json] [-o OUT]
 *   usft record -P PID [options]      (attach.c: a running process)
 *   usft attach PID, usft detach PID, usft stat -P PID
 *   usft list -f PROG [GLOB]
 *   usft stat
 *
 * record runs PROG with LD_PRELOAD=libusft-preload.so and the choices in
 * USFT_* variables, waits for it, prints one summary line on stderr and
 * exits with PROG's status (125: usft failed, 126: PROG not executable,
 * 127: PROG not found, 128+N: PROG killed by signal N).  Flags follow
 * trace-cmd where it has one.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <usft/usft.h>
#include "cli.h"
#include "trace_read.h"

#ifndef USFT_PRELOAD_NAME
#define USFT_PRELOAD_NAME "libusft-preload.so"
#endif
#ifndef USFT_BIN_TO_LIB
#define USFT_BIN_TO_LIB "../lib"
#endif
#ifndef USFT_INSTALL_LIBDIR
#define USFT_INSTALL_LIBDIR "/usr/local/lib"
#endif

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
	  "  -p, --plugin TRACER      function (default), function_graph, profile or nop\n"
	  "      --tracer TRACER      the same as --plugin\n"
	  "  -l, --filter GLOB        trace only matching functions (repeatable)\n"
	  "  -n, --notrace GLOB       do not trace matching functions (repeatable)\n"
	  "  -g, --graph-function F   function_graph: only F and what it calls (repeatable)\n"
	  "      --max-graph-depth N  function_graph: record N levels at most (0..1024)\n"
	  "  -o, --output FILE        trace file (default usft.dat), replaced once PROG ran\n"
	  "  -b, --buffer-size KB     ring buffer per thread in KiB, 4..16777216 (default 65536)\n"
	  "  -C, --clock CLOCK        auto, mono (clock_gettime) or counter (cycle counter)\n"
	  "  -O, --option NAME=VALUE  runtime option (see `usft stat`), repeatable\n"
	  "      --prefault           fault in the first thread's ring before PROG runs\n"
	  "      --follow-symlink     -o FILE may be a symbolic link: replace what it points to\n"
	  "  -q, --quiet              no summary line\n"
	  "Exit status: PROG's; 125 usft failed, 126 PROG not executable, 127 not found,\n"
	  "128+N PROG killed by signal N.\n" },
	{ "report",
	  "usage: usft report [-i FILE] [--format text|json] [-o OUT]\n"
	  "Print a trace file: the kernel's trace formats (text) or Chrome trace-event JSON.\n"
	  "  -i, --input FILE         trace file (default usft.dat)\n"
	  "  -F, --format FORMAT      text (default) or json\n"
	  "  -o, --output OUT         write there instead of stdout (replaced once complete)\n"
	  "      --no-header          text: leave out the '#' header lines\n"
	  "      --follow-symlink     -o OUT may be a symbolic link: replace what it points to\n" },
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
	  "usage: usft attach PID\n"
	  "Load the usft runtime into the running process PID (or join the one it has) and\n"
	  "leave its control socket serving; nothing is traced until a recording starts.\n"
	  "Exit status: 0; 3 no such process, 4 not permitted, 5 no patchable functions,\n"
	  "6 another architecture, 7 no dynamic loader, 8 traced by a debugger,\n"
	  "9 it exited or exec'd during the attach, 1 other failures.\n" },
	{ "detach",
	  "usage: usft detach PID\n"
	  "Stop recording in process PID, put every site back as it was, end usft's threads\n"
	  "there.  The runtime stays loaded; a later attach reuses it.\n"
	  "Exit status: 0; 10 PID has no usft control socket, or as for attach.\n" },
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
		"  report   print a recorded trace (text or Chrome JSON)\n"
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

/* ---- record ---------------------------------------------------------------- */

/*
 * A decimal number of @opt in [min, max]; Return: false after the usage
 * error that names the option, the value and the range (in *rc).
 */
static bool cli_number(const char *opt, const char *arg, long long min, long long max,
		       const char *what, long long *out, int *rc)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		*rc = usft_usage_error("record", "%s %s: %s; use %lld..%lld (%s)", opt, arg,
				       errno == ERANGE || (end != arg && !*end) ? "out of range" :
				       "not a number", min, max, what);
		return false;
	}
	*out = v;
	return true;
}

static bool file_exists(const char *p)
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
		return file_exists(out) ? 0 : -1;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			if (snprintf(out, len, "%s/%s", self, USFT_PRELOAD_NAME) < (int)len &&
			    file_exists(out))
				return 0;
			if (snprintf(out, len, "%s/%s/%s", self, USFT_BIN_TO_LIB,
				     USFT_PRELOAD_NAME) < (int)len && file_exists(out))
				return 0;
		}
	}
	snprintf(out, len, "%s/%s", USFT_INSTALL_LIBDIR, USFT_PRELOAD_NAME);
	return file_exists(out) ? 0 : -1;
}

/*
 * libusft itself goes into LD_PRELOAD right after the shim: loaded as the
 * shim's dependency it would come after libc in the global scope, where
 * its dlsym(RTLD_NEXT, "sigaction"/"dlclose") finds nothing.  (Before the
 * shim, RTLD_NEXT would find the shim's forwarders instead.)  Next to the
 * shim (install tree), or where this build made it.
 */
static int find_libusft(const char *preload, char *out, size_t len)
{
	const char *slash = strrchr(preload, '/');

	if (slash && snprintf(out, len, "%.*s/libusft.so.0", (int)(slash - preload), preload) < (int)len &&
	    file_exists(out))
		return 0;
#ifdef USFT_BUILD_LIBUSFT
	if (snprintf(out, len, "%s", USFT_BUILD_LIBUSFT) < (int)len && file_exists(out))
		return 0;
#endif
	return -1;
}

static void append(char **list, const char *item)
{
	size_t a = *list ? strlen(*list) : 0, b = strlen(item);
	char *p = realloc(*list, a + b + 2);

	if (!p)
		return;
	if (a)
		p[a++] = ' ';
	memcpy(p + a, item, b + 1);
	*list = p;
}

/* getopt_long()'s '?' (unknown option) or ':' (its value missing), said once */
static int bad_option(const char *cmd, int c, char **argv)
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		return usft_usage_error(cmd, "option '%s' needs a value", arg);
	if (optopt && strncmp(arg, "--", 2))
		return usft_usage_error(cmd, "unknown option '-%c'", optopt);
	return usft_usage_error(cmd, "unknown option '%s'", arg);
}

/* an ELF program without PT_INTERP, or the one a libtool wrapper runs */
static bool is_static(const char *path)
{
	char interp[PATH_MAX], real[PATH_MAX];
	int r = usft_prog_interp(path, interp, sizeof(interp));

	if (r < 0 && !usft_libtool_target(path, real, sizeof(real)))
		r = usft_prog_interp(real, interp, sizeof(interp));
	return r == 0;
}

/*
 * PROG has exited; the processes it started and left running (a daemon()
 * child, background children: reparented to us, the child subreaper) are
 * still writing to the trace.  Record until they exit too; ^C stops that.
 * SIGINT and SIGCHLD are taken with sigwaitinfo(), so no handler (and no
 * restarted waitpid()) is involved.
 */
static void wait_leftovers(const char *prog, const char *output, bool quiet)
{
	sigset_t set, old;
	bool stopped = false;
	int st;
	pid_t p;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	while ((p = waitpid(-1, &st, WNOHANG)) > 0)
		;
	if (p == 0) {
		if (!quiet)
			fprintf(stderr, "usft: %s left processes running (a daemon, background "
				"children): recording until they exit (Ctrl-C stops waiting)\n", prog);
		for (;;) {
			int sig = sigwaitinfo(&set, NULL);

			if (sig == SIGINT) {
				stopped = true;
				break;
			}
			while ((p = waitpid(-1, &st, WNOHANG)) > 0)
				;
			if (p < 0 && errno != EINTR)
				break;		/* ECHILD: nothing left */
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (stopped && !quiet)
		fprintf(stderr, "usft: stopped waiting: the processes still running go on writing "
			"to %s; the summary counts what they wrote so far\n", output);
}

static int cmd_record(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "plugin", required_argument, NULL, 'p' },
		{ "tracer", required_argument, NULL, 'p' },
		{ "filter", required_argument, NULL, 'l' },
		{ "notrace", required_argument, NULL, 'n' },
		{ "graph-function", required_argument, NULL, 'g' },
		{ "max-graph-depth", required_argument, NULL, 'D' },
		{ "output", required_argument, NULL, 'o' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "clock", required_argument, NULL, 'C' },
		{ "option", required_argument, NULL, 'O' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "prefault", no_argument, NULL, 'F' },
		{ "follow-symlink", no_argument, NULL, 'S' },
		{ "pid", required_argument, NULL, 'P' },
		{ "duration", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *tracer = "function", *output = "usft.dat", *clk = NULL;
	char *filter = NULL, *notrace_list = NULL, *graph = NULL, *options = NULL;
	char preload[PATH_MAX], progpath[PATH_MAX], num[32];
	long long depth = 0, bufkb = 0;
	bool quiet = false, prefault = false, follow = false, empty;
	const char *pid_arg = NULL;
	double duration = 0;
	struct usft_out out;
	int c, status, rc, ep[2], exec_err = 0;
	ssize_t n;
	pid_t pid;

	optind = 1;
	opterr = 0;	/* bad_option() says it, with the fix */
	while ((c = getopt_long(argc, argv, "+:p:l:n:g:o:b:C:O:P:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			tracer = optarg;
			break;
		case 'l':
			append(&filter, optarg);
			break;
		case 'n':
			append(&notrace_list, optarg);
			break;
		case 'g':
			append(&graph, optarg);
			break;
		case 'D':
			if (!cli_number("--max-graph-depth", optarg, 0, USFT_MAX_GRAPH_DEPTH,
					"levels; 0: no limit", &depth, &rc))
				return rc;
			break;
		case 'o':
			output = optarg;
			break;
		case 'b':
			if (!cli_number("-b", optarg, USFT_RING_MIN_BYTES >> 10,
					USFT_RING_MAX_BYTES >> 10, "KiB of ring per thread",
					&bufkb, &rc))
				return rc;
			break;
		case 'C':
			clk = optarg;
			if (strcmp(clk, "auto") && strcmp(clk, "mono") && strcmp(clk, "counter"))
				return usft_usage_error("record", "unknown clock '%s'", clk);
			break;
		case 'O': {
			char *eq = strchr(optarg, '='), name[64], was[32];
			bool known;

			/* checked here (the program would only warn and go on) */
			snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - optarg) : (int)strlen(optarg),
				 optarg);
			known = !usft_get_option(name, was, sizeof(was));
			if (usft_set_option(name, eq ? eq + 1 : "1"))
				return usft_usage_error("record", "-O %s refused (the line above "
							"says why)", optarg);
			/* only checked: the option is the program's, not this process's
			 * (stat_at_exit=1 would print usft's own counters too) */
			if (known)
				usft_set_option(name, was);
			if (options) {
				char *p = realloc(options, strlen(options) + strlen(optarg) + 2);

				if (!p)
					return USFT_EXIT_RECORD_FAIL;
				options = strcat(strcat(p, ","), optarg);
			} else {
				options = strdup(optarg);
			}
			break;
		}
		case 'q':
			quiet = true;
			break;
		case 'F':
			prefault = true;
			break;
		case 'S':
			follow = true;
			break;
		case 'P':
			pid_arg = optarg;
			break;
		case 'T': {
			char *end;

			duration = strtod(optarg, &end);
			if (*end || !(duration > 0))
				return usft_usage_error("record", "bad duration '%s' (seconds > 0)",
							optarg);
			break;
		}
		case 'h':
			usft_usage(stdout, "record");
			return 0;
		default:
			return bad_option("record", c, argv);
		}
	}
	if (strcmp(tracer, "function") && strcmp(tracer, "function_graph") &&
	    strcmp(tracer, "profile") && strcmp(tracer, "nop"))
		return usft_usage_error("record", "unknown tracer '%s' (function, function_graph, "
					"profile, nop)", tracer);
	if (pid_arg && optind < argc)
		return usft_usage_error("record", "-P PID or a program to run, not both");
	if (!pid_arg && duration > 0)
		return usft_usage_error("record", "--duration goes with -P PID");
	if (pid_arg && (options || prefault))
		return usft_usage_error("record", "-O and --prefault apply to a program usft runs, "
					"not to -P");
	if (optind >= argc && !pid_arg)
		return usft_usage_error("record", "no program to run");
	if (usft_find_preload(preload, sizeof(preload))) {
		fprintf(stderr, "usft: cannot find %s (set USFT_PRELOAD)\n", USFT_PRELOAD_NAME);
		return USFT_EXIT_RECORD_FAIL;
	}
	if (pid_arg) {
		struct usft_record_args ra = {
			.tracer = tracer, .filter = filter, .notrace_list = notrace_list, .graph = graph,
			.clock = clk, .depth = depth, .bufkb = bufkb, .output = output,
			.follow_symlink = follow, .duration = duration, .quiet = quiet,
		};
		int r = usft_record_pid(pid_arg, &ra);

		free(filter);
		free(notrace_list);
		free(graph);
		return r;
	}
	/* the program first: a missing one must not cost an existing trace */
	if (usft_find_program(argv[optind], progpath, sizeof(progpath))) {
		int e = errno;

		fprintf(stderr, "usft: %s: %s\n", argv[optind], strerror(e));
		return e == ENOENT ? USFT_EXIT_NOTFOUND : USFT_EXIT_NOEXEC;
	}
	if (is_static(progpath)) {
		fprintf(stderr, "usft: %s is statically linked: LD_PRELOAD cannot load usft into it, "
			"so nothing can be recorded (`usft list -f %s` still lists its functions).\n"
			"usft: link it dynamically (without -static), or link libusft.a "
			"(usft::usft_static) into it and register an ftrace_ops in the program "
			"itself (docs/getting-started.md, \"Use the API in your own program\")\n",
			argv[optind], argv[optind]);
		return USFT_EXIT_RECORD_FAIL;
	}
	/* a private temporary file (traces hold sensitive data) that every
	 * process of the run appends to; FILE itself only once it ran */
	if (usft_out_prepare(output, follow, &out))
		return USFT_EXIT_RECORD_FAIL;
	/* tells the parent whether execv() failed (closed by a successful one) */
	if (pipe2(ep, O_CLOEXEC)) {
		fprintf(stderr, "usft: pipe: %s\n", strerror(errno));
		usft_out_abort(&out);
		return USFT_EXIT_RECORD_FAIL;
	}
	/* what PROG leaves running (daemon(), background children) comes back to us */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "usft: fork: %s\n", strerror(errno));
		usft_out_abort(&out);
		return USFT_EXIT_RECORD_FAIL;
	}
	if (pid == 0) {
		const char *old = getenv("LD_PRELOAD");
		char *lp = NULL, libusft[PATH_MAX];

		append(&lp, preload);
		if (!find_libusft(preload, libusft, sizeof(libusft)))
			append(&lp, libusft);
		if (old && *old)
			append(&lp, old);
		setenv("LD_PRELOAD", lp, 1);
		setenv("USFT_TRACER", tracer, 1);
		close(ep[0]);
		setenv("USFT_OUTPUT", usft_out_write_path(&out), 1);
		setenv("USFT_APPEND", "1", 1);
		if (filter)
			setenv("USFT_FILTER", filter, 1);
		if (notrace_list)
			setenv("USFT_NOTRACE", notrace_list, 1);
		if (graph)
			setenv("USFT_GRAPH_FUNCS", graph, 1);
		if (depth) {
			snprintf(num, sizeof(num), "%lld", depth);
			setenv("USFT_MAX_DEPTH", num, 1);
		}
		if (bufkb) {
			snprintf(num, sizeof(num), "%lldK", bufkb);
			setenv("USFT_BUFFER_SIZE", num, 1);
		}
		if (clk)
			setenv("USFT_CLOCK", clk, 1);
		if (prefault)
			setenv("USFT_PREFAULT", "1", 1);
		if (options) {
			const char *o = getenv("USFT_OPTIONS");
			char *all = NULL;

			if (o && *o) {
				all = malloc(strlen(o) + strlen(options) + 2);
				if (all)
					sprintf(all, "%s,%s", o, options);
			}
			setenv("USFT_OPTIONS", all ? all : options, 1);
		}
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		execv(progpath, argv + optind);
		exec_err = errno;
		if (write(ep[1], &exec_err, sizeof(exec_err)) < 0)
			fprintf(stderr, "usft: %s: %s\n", argv[optind], strerror(exec_err));
		_exit(exec_err == ENOENT ? USFT_EXIT_NOTFOUND : USFT_EXIT_NOEXEC);
	}
	/* the terminal's ^C reaches PROG; we stay to write the summary */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	close(ep[1]);
	do {
		n = read(ep[0], &exec_err, sizeof(exec_err));
	} while (n < 0 && errno == EINTR);
	close(ep[0]);
	if (n != sizeof(exec_err))
		exec_err = 0;	/* EOF: the program runs */
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "usft: waitpid: %s\n", strerror(errno));
			return USFT_EXIT_RECORD_FAIL;
		}
	}
	if (exec_err) {
		/* it never ran: nothing was written, FILE is as it was */
		fprintf(stderr, "usft: %s: %s\n", argv[optind], strerror(exec_err));
		usft_out_abort(&out);
		return exec_err == ENOENT ? USFT_EXIT_NOTFOUND : USFT_EXIT_NOEXEC;
	}
	wait_leftovers(argv[optind], output, quiet);
	if (usft_out_commit(&out, false, &empty))
		rc = USFT_EXIT_RECORD_FAIL;
	else
		rc = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	if (!quiet && rc != USFT_EXIT_RECORD_FAIL)
		usft_record_summary(&out, argv[optind], progpath, empty);
	free(filter);
	free(notrace_list);
	free(graph);
	free(options);
	return rc;
}

/* ---- report, stat --------------------------------------------------------------- */

static int cmd_report(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "format", required_argument, NULL, 'F' },
		{ "output", required_argument, NULL, 'o' },
		{ "no-header", no_argument, NULL, 'N' },
		{ "follow-symlink", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *input = "usft.dat", *format = "text", *output = NULL;
	unsigned int flags = 0;
	struct usft_trace t;
	struct usft_out o;
	struct stat in_st, out_st;
	FILE *out = stdout;
	bool follow = false, empty;
	int c, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:F:o:h", lo, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case 'F':
			format = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case 'N':
			flags |= USFT_PRINT_NO_HEADER;
			break;
		case 'S':
			follow = true;
			break;
		case 'h':
			usft_usage(stdout, "report");
			return 0;
		default:
			return bad_option("report", c, argv);
		}
	}
	if (optind < argc)
		return usft_usage_error("report", "unexpected argument '%s'", argv[optind]);
	if (strcmp(format, "text") && strcmp(format, "json"))
		return usft_usage_error("report", "unknown format '%s' (text, json)", format);
	r = usft_trace_read(input, &t, true);
	if (r == -ENODATA) {
		fprintf(stderr, "usft: %s is empty: nothing was recorded in it (a program without "
			"patchable functions, or a recording that failed: see what `usft record` "
			"printed)\n", input);
		return USFT_EXIT_FAIL;
	}
	if (r) {
		fprintf(stderr, "usft: %s: %s\n", input,
			r == -EINVAL ? "not a usft trace file (or a damaged one); usft record "
				       "-o FILE PROG writes one" :
			r == -ENOENT ? "No such file or directory (usft record writes usft.dat "
				       "in the current directory unless -o FILE says where)" :
			strerror(-r));
		return USFT_EXIT_FAIL;
	}
	/* OUT replaced only once complete, as record's FILE (output.c) */
	if (output) {
		if (usft_out_prepare(output, follow, &o)) {
			usft_trace_free(&t);
			return USFT_EXIT_FAIL;
		}
		if (!stat(input, &in_st) && !stat(o.path, &out_st) && in_st.st_dev == out_st.st_dev &&
		    in_st.st_ino == out_st.st_ino) {
			fprintf(stderr, "usft: -o %s is the trace being read; name another file\n",
				output);
			usft_out_abort(&o);
			usft_trace_free(&t);
			return USFT_EXIT_FAIL;
		}
		out = fopen(usft_out_write_path(&o), o.direct ? "w" : "we");
		if (!out) {
			fprintf(stderr, "usft: %s: %s\n", output, strerror(errno));
			usft_out_abort(&o);
			usft_trace_free(&t);
			return USFT_EXIT_FAIL;
		}
	}
	errno = 0;
	r = strcmp(format, "json") ? usft_print_text(out, &t, flags) : usft_print_json(out, &t, flags);
	if (t.truncated)
		fprintf(stderr, "usft: %s ends inside a chunk: a process was killed while writing "
			"it, or the disk filled up (ENOSPC); what came before is shown\n", input);
	usft_trace_free(&t);
	/* the first failed write left its errno (ENOSPC, EPIPE, ...) */
	r = fflush(out) || r;
	if (out != stdout)
		r = fclose(out) || r;
	if (r) {
		fprintf(stderr, "usft: writing %s: %s\n", output ? output : "the standard output",
			strerror(errno ? errno : EIO));
		if (output)
			usft_out_abort(&o);
		return USFT_EXIT_FAIL;
	}
	if (output && usft_out_commit(&o, true, &empty))
		return USFT_EXIT_FAIL;
	return USFT_EXIT_OK;
}

static int cmd_stat(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usft_usage(stdout, "stat");
		return 0;
	}
	if (argc > 1 && (!strcmp(argv[1], "-P") || !strcmp(argv[1], "--pid"))) {
		if (argc != 3)
			return usft_usage_error("stat", "-P takes one process id");
		return usft_stat_pid(argv[2]);
	}
	if (argc > 1 && !strncmp(argv[1], "--pid=", 6) && argc == 2)
		return usft_stat_pid(argv[1] + 6);
	if (argc > 1)
		return usft_usage_error("stat", "unexpected argument '%s'", argv[1]);
	usft_print_stat(stdout);
	/* this process's runtime has traced nothing: say so, and where the
	 * counters of a real program are */
	printf("# These are the options and the counters of a fresh runtime, the one inside\n"
	       "# this usft command, which has traced nothing: its counters are zero. To see\n"
	       "# a program's own counters: usft stat -P PID while it runs (a process run by\n"
	       "# usft record or attached with usft attach), USFT_OPTIONS=stat_at_exit=1\n"
	       "# (printed on stderr when it exits; usft record -O stat_at_exit=1 does the\n"
	       "# same), or usft_print_stat() called in it.\n");
	return fflush(stdout) ? USFT_EXIT_FAIL : USFT_EXIT_OK;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd) {
		usft_usage(stderr, NULL);
		return USFT_EXIT_USAGE;
	}
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		usft_usage(stdout, NULL);
		return 0;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		printf("usft %s\n", usft_version());
		return 0;
	}
	if (!strcmp(cmd, "help")) {
		usft_usage(stdout, argc > 2 ? argv[2] : NULL);
		return 0;
	}
	if (!strcmp(cmd, "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "list"))
		return usft_cmd_list(argc - 1, argv + 1);
	if (!strcmp(cmd, "stat"))
		return cmd_stat(argc - 1, argv + 1);
	if (!strcmp(cmd, "attach"))
		return usft_cmd_attach(argc - 1, argv + 1);
	if (!strcmp(cmd, "detach"))
		return usft_cmd_detach(argc - 1, argv + 1);
	fprintf(stderr, "usft: unknown command '%s'\n", cmd);
	usft_usage(stderr, NULL);
	return USFT_EXIT_USAGE;
}
