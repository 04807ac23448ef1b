// SPDX-License-Identifier: MIT
/*
 * inject/cli/record.c - `usft record [OPTIONS] [--] PROG [ARGS]` (docs/usft.1):
 * runs PROG with LD_PRELOAD=libusft-preload.so and the choices in USFT_*
 * variables, waits for it (and what it leaves running), prints one summary
 * line on stderr and exits with PROG's status (125: usft failed, 126: PROG
 * not executable, 127: PROG not found, 128+N: PROG killed by signal N).
 * Flags follow trace-cmd where it has one.  `record -P PID` goes on in
 * attach.c (usft_record_pid()).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <usft/fgraph.h>
#include <usft/usft.h>
#include "cli.h"
#include "trace_format.h"
#include "trace_triggers.h"

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
	    usft_readable(out))
		return 0;
#ifdef USFT_BUILD_LIBUSFT
	if (snprintf(out, len, "%s", USFT_BUILD_LIBUSFT) < (int)len && usft_readable(out))
		return 0;
#endif
	return -1;
}

static void append_sep(char **list, const char *item, char sep)
{
	size_t a = *list ? strlen(*list) : 0, b = strlen(item);
	char *p = realloc(*list, a + b + 2);

	if (!p)
		return;
	if (a)
		p[a++] = sep;
	memcpy(p + a, item, b + 1);
	*list = p;
}

static void append(char **list, const char *item)
{
	append_sep(list, item, ' ');
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

/* whether -T or --signal has a finish action (FUNC@finish, SIG@finish) */
static bool wants_finish(const char *triggers, const char *signals)
{
	return (triggers && strstr(triggers, "@finish")) || (signals && strstr(signals, "@finish"));
}

/*
 * A finish trigger fired in one of the processes (a byte on @fin, the pipe
 * its runtime was handed in USFT_FINISH_FD: trace_triggers.c): the
 * recording is over once no process still records, i.e. no ring file in
 * @rings is live for a process that runs.  Return: true then.
 */
static bool finished(int fin, const char *rings)
{
	char buf[64];

	if (read(fin, buf, sizeof(buf)) <= 0)
		return false;
	return usft_rings_all_ended(rings);
}

/*
 * PROG runs: wait for its exit (*@status), or for the recording's finish
 * (then PROG goes on: uftrace's daemon case).  Return: 1 finished, 0
 * exited, -1 waitpid failed.
 */
static int wait_prog(pid_t pid, int fin, const char *rings, int *status)
{
	int pidfd = fin >= 0 ? usft_pidfd_open(pid) : -1;

	while (pidfd >= 0) {
		struct pollfd p[2] = { { pidfd, POLLIN, 0 }, { fin, POLLIN, 0 } };

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if ((p[1].revents & POLLIN) && finished(fin, rings)) {
			close(pidfd);
			return 1;
		}
		if (p[1].revents & POLLHUP)
			fin = -1;	/* no process holds it any more */
		if (p[0].revents)
			break;
	}
	if (pidfd >= 0)
		close(pidfd);
	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "usft: waitpid: %s\n", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/*
 * PROG has exited; the processes it started and left running (a daemon()
 * child, background children: reparented to us, the child subreaper) are
 * still writing to the trace.  Record until they exit too, or until the
 * recording finishes (@fin: a finish trigger); ^C stops that.  SIGINT and
 * SIGCHLD are read from a signalfd, so no handler (and no restarted
 * waitpid()) is involved.  Return: whether it finished (they run on).
 */
static bool wait_leftovers(const char *prog, const char *output, bool quiet, int fin,
			   const char *rings)
{
	sigset_t set, old;
	bool stopped = false, done = false;
	int st, sfd;
	pid_t p;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	while ((p = waitpid(-1, &st, WNOHANG)) > 0)
		usft_exit_note(p, st);
	if (p == 0 && sfd >= 0) {
		if (!quiet)
			fprintf(stderr, "usft: %s left processes running (a daemon, background "
				"children): recording until they exit (Ctrl-C stops waiting)\n", prog);
		for (;;) {
			struct pollfd pf[2] = { { sfd, POLLIN, 0 }, { fin, POLLIN, 0 } };
			struct signalfd_siginfo si;

			if (poll(pf, 2, -1) < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			if ((pf[1].revents & POLLIN) && finished(fin, rings)) {
				done = true;
				break;
			}
			if (pf[1].revents & POLLHUP)
				fin = -1;
			if (!(pf[0].revents & POLLIN))
				continue;
			if (read(sfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo == SIGINT) {
				stopped = true;
				break;
			}
			while ((p = waitpid(-1, &st, WNOHANG)) > 0)
				usft_exit_note(p, st);
			if (p < 0 && errno != EINTR)
				break;		/* ECHILD: nothing left */
		}
	}
	if (sfd >= 0)
		close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (stopped && !quiet)
		fprintf(stderr, "usft: stopped waiting: the processes still running go on writing "
			"to %s; the summary counts what they wrote so far\n", output);
	return done;
}

int usft_cmd_record(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "plugin", required_argument, NULL, 'p' },
		{ "tracer", required_argument, NULL, 'p' },
		{ "filter", required_argument, NULL, 'l' },
		{ "notrace", required_argument, NULL, 'n' },
		{ "graph-function", required_argument, NULL, 'g' },
		{ "graph-notrace", required_argument, NULL, 'N' },
		{ "max-graph-depth", required_argument, NULL, 'D' },
		{ "output", required_argument, NULL, 'o' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "clock", required_argument, NULL, 'C' },
		{ "option", required_argument, NULL, 'O' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "prefault", no_argument, NULL, 'F' },
		{ "lossless", no_argument, NULL, 'L' },
		{ "drop", no_argument, NULL, 'X' },	/* long only */
		{ "rings", required_argument, NULL, 'W' },	/* long only: -R is --retval */
		{ "follow-symlink", no_argument, NULL, 'S' },
		{ "pid", required_argument, NULL, 'P' },
		{ "duration", required_argument, NULL, 'd' },
		{ "argument", required_argument, NULL, 'A' },
		{ "retval", required_argument, NULL, 'R' },
		{ "funcgraph-retval", no_argument, NULL, 'V' },
		{ "trigger", required_argument, NULL, 'T' },
		{ "signal", required_argument, NULL, 'Y' },
		{ "mount", required_argument, NULL, 'M' },	/* long only: -M is not trace-cmd's */
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *tracer = "function", *output = "usft.dat", *clk = NULL;
	char *filter = NULL, *notrace_list = NULL, *graph = NULL, *options = NULL, *graph_nt = NULL;
	char *args_spec = NULL, *retval_spec = NULL, *triggers = NULL, *signals = NULL;
	char why[512];
	bool all_retval = false;
	char preload[PATH_MAX], progpath[PATH_MAX], num[32];
	long long depth = 0, bufkb = 0;
	bool quiet = false, prefault = false, follow = false, empty, lossless = false, drop = false;
	bool shared_rings = true;
	char rings[PATH_MAX] = "";
	const char *pid_arg = NULL, *mount_dir = NULL;
	pid_t mnt = -1;
	double duration = 0;
	struct usft_out out;
	int c, status = 0, rc, ep[2], exec_err = 0, fin[2] = { -1, -1 }, w;
	ssize_t n;
	pid_t pid;

	optind = 1;
	opterr = 0;	/* bad_option() says it, with the fix */
	while ((c = getopt_long(argc, argv, "+:p:l:n:g:N:o:b:C:O:P:A:R:T:qh", lo, NULL)) != -1) {
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
		case 'N':
			append(&graph_nt, optarg);
			break;
		case 'D':
			if (!usft_cli_number("record", "--max-graph-depth", optarg, 0, USFT_MAX_GRAPH_DEPTH,
					"levels; 0: no limit", &depth, &rc))
				return rc;
			break;
		case 'o':
			output = optarg;
			break;
		case 'b':
			if (!usft_cli_number("record", "-b", optarg, USFT_RING_MIN_BYTES >> 10,
					USFT_RING_MAX_BYTES >> 10, "KiB of ring per thread",
					&bufkb, &rc))
				return rc;
			break;
		case 'C':
			clk = optarg;
			if (!usft_trace_clock_known(clk))
				return usft_usage_error("record", "unknown clock '%s'", clk);
			/* the tracee runs on this machine: a clock it cannot read, said now */
			if (usft_set_trace_clock(clk) == -EOPNOTSUPP)
				return usft_usage_error("record", "clock '%s' cannot be read on this "
							"machine (docs/tracers.md, \"The clock\")", clk);
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
		case 'A':
		case 'R':
			/* uftrace's FUNC@VAL[,VAL]: checked against the functions in PROG */
			if (!strchr(optarg, '@') || strchr(optarg, ';'))
				return usft_usage_error("record", "%s '%s': want FUNC@VAL[,VAL]... "
							"(e.g. 'main@arg1,arg2', 'main@retval')",
							c == 'A' ? "-A" : "-R", optarg);
			append_sep(c == 'A' ? &args_spec : &retval_spec, optarg, ';');
			break;
		case 'V':
			all_retval = true;
			break;
		case 'T':
		case 'Y':
			/* the syntax here, the functions (and a kernel command's name) in PROG */
			if (usft_trigger_list_check(optarg, c == 'Y', true, why, sizeof(why)))
				return usft_usage_error("record", "%s%s", c == 'Y' ? "--signal " : "-T ",
							why);
			append(c == 'Y' ? &signals : &triggers, optarg);
			break;
		case 'q':
			quiet = true;
			break;
		case 'F':
			prefault = true;
			break;
		case 'L':
			lossless = true;
			break;
		case 'X':
			drop = true;
			break;
		case 'W':
			if (strcmp(optarg, "shared") && strcmp(optarg, "private"))
				return usft_usage_error("record", "--rings %s: shared or private", optarg);
			shared_rings = !strcmp(optarg, "shared");
			break;
		case 'S':
			follow = true;
			break;
		case 'P':
			pid_arg = optarg;
			break;
		case 'M':
			mount_dir = optarg;
			break;
		case 'd': {
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
			return usft_bad_option("record", c, argv);
		}
	}
	if (strcmp(tracer, "function") && strcmp(tracer, "function_graph") &&
	    strcmp(tracer, "profile") && strcmp(tracer, "nop"))
		return usft_usage_error("record", "unknown tracer '%s' (function, function_graph, "
					"profile, nop)", tracer);
	if ((args_spec || retval_spec || all_retval) && strcmp(tracer, "function_graph"))
		return usft_usage_error("record", "-A, -R and --funcgraph-retval show values in the "
					"call tree: add -p function_graph");
	if (triggers && strcmp(tracer, "function_graph") &&
	    usft_trigger_list_check(triggers, false, false, why, sizeof(why)))
		return usft_usage_error("record", "-T %s", why);
	if (pid_arg && optind < argc)
		return usft_usage_error("record", "-P PID or a program to run, not both");
	if (!pid_arg && duration > 0)
		return usft_usage_error("record", "--duration goes with -P PID");
	if (lossless && drop)
		return usft_usage_error("record", "--lossless or --drop, not both");
	if (pid_arg && (options || prefault || lossless || drop || !shared_rings))
		return usft_usage_error("record", "-O, --prefault, --lossless, --drop and --rings "
					"apply to a program usft runs, not to -P");
	if (optind >= argc && !pid_arg)
		return usft_usage_error("record", "no program to run");
	if (mount_dir && (rc = usft_tracefs_dir_ok("record", mount_dir)))
		return rc;
	if (usft_find_preload(preload, sizeof(preload))) {
		fprintf(stderr, "usft: cannot find %s (set USFT_PRELOAD)\n", USFT_PRELOAD_NAME);
		return USFT_EXIT_RECORD_FAIL;
	}
	if (pid_arg) {
		struct usft_record_args ra = {
			.tracer = tracer, .filter = filter, .notrace_list = notrace_list, .graph = graph,
			.clock = clk, .depth = depth, .bufkb = bufkb, .output = output,
			.follow_symlink = follow, .duration = duration, .quiet = quiet,
			.mount = mount_dir,
			.graph_notrace = graph_nt, .args = args_spec, .retval = retval_spec,
			.triggers = triggers, .signals = signals, .funcgraph_retval = all_retval,
		};
		int r = usft_record_pid(pid_arg, &ra);

		free(filter);
		free(notrace_list);
		free(graph);
		free(graph_nt);
		free(args_spec);
		free(retval_spec);
		free(triggers);
		free(signals);
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
	/* crash-safe recording: the rings in files there (salvage.c) */
	if (shared_rings && usft_rings_dir_make(rings, sizeof(rings)))
		fprintf(stderr, "usft: warning: no directory for shared ring buffers (%s): "
			"recording with private ones, lost if %s is killed\n", strerror(errno),
			argv[optind]);
	/* FUNC@finish: the recording may end while PROG runs on (told here) */
	if (wants_finish(triggers, signals) && pipe2(fin, O_CLOEXEC))
		fin[0] = fin[1] = -1;
	/* what PROG leaves running (daemon(), background children) comes back to us */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "usft: fork: %s\n", strerror(errno));
		usft_rings_salvage(rings, NULL);
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
		if (graph_nt)
			setenv("USFT_GRAPH_NOTRACE", graph_nt, 1);
		if (args_spec)
			setenv("USFT_ARGS", args_spec, 1);
		if (retval_spec)
			setenv("USFT_RETVAL", retval_spec, 1);
		if (all_retval)
			setenv("USFT_FUNCGRAPH_RETVAL", "1", 1);
		if (triggers)
			setenv("USFT_TRIGGERS", triggers, 1);
		if (signals)
			setenv("USFT_SIGNALS", signals, 1);
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
		/* a full ring waits for the writer unless --drop */
		setenv("USFT_LOSSLESS", drop ? "0" : "1", 1);
		if (rings[0])
			setenv("USFT_RING_DIR", rings, 1);
		if (fin[1] >= 0) {
			struct stat st;
			char spec[80];

			/* the write end goes through the exec (the runtime moves it away) */
			if (!fstat(fin[1], &st) && !fcntl(fin[1], F_SETFD, 0)) {
				snprintf(spec, sizeof(spec), "%d:%llu:%llu", fin[1],
					 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
				setenv("USFT_FINISH_FD", spec, 1);
			}
		}
		if (mount_dir)
			setenv("USFT_CONTROL", "1", 1);	/* the tracefs's channel, even for -p nop */
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
	if (fin[1] >= 0)
		close(fin[1]);
	do {
		n = read(ep[0], &exec_err, sizeof(exec_err));
	} while (n < 0 && errno == EINTR);
	close(ep[0]);
	if (n != sizeof(exec_err))
		exec_err = 0;	/* EOF: the program runs */
	if (mount_dir && !exec_err)
		mnt = usft_tracefs_automount("record", pid, mount_dir, 10000, quiet);
	w = wait_prog(pid, exec_err ? -1 : fin[0], rings, &status);
	if (w < 0) {
		usft_tracefs_autounmount(mnt);
		return USFT_EXIT_RECORD_FAIL;
	}
	usft_tracefs_autounmount(mnt);	/* before the wait for leftovers: not one of them */
	if (exec_err) {
		/* it never ran: nothing was written, FILE is as it was */
		fprintf(stderr, "usft: %s: %s\n", argv[optind], strerror(exec_err));
		usft_rings_salvage(rings, NULL);
		usft_out_abort(&out);
		return exec_err == ENOENT ? USFT_EXIT_NOTFOUND : USFT_EXIT_NOEXEC;
	}
	if (!w) {
		usft_exit_note(pid, status);
		w = wait_leftovers(argv[optind], output, quiet, fin[0], rings);
	}
	if (fin[0] >= 0)
		close(fin[0]);
	/* the processes that died before finishing the trace: their rings */
	usft_rings_salvage(rings, out.direct ? NULL : usft_out_write_path(&out));
	if (!out.direct)
		usft_exits_write(usft_out_write_path(&out));
	if (usft_out_commit(&out, false, &empty))
		rc = USFT_EXIT_RECORD_FAIL;
	else if (w)
		rc = 0;		/* finished: PROG (or what it left) runs on */
	else
		rc = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	if (!quiet && rc != USFT_EXIT_RECORD_FAIL)
		usft_record_summary(&out, argv[optind], progpath, empty, !drop);
	if (!quiet && w)
		fprintf(stderr, "usft: the recording finished (a finish trigger); %s goes on "
			"running%s, not waited for\n", argv[optind],
			w && kill(pid, 0) ? " in the processes it left" : "");
	free(filter);
	free(notrace_list);
	free(graph);
	free(args_spec);
	free(retval_spec);
	free(triggers);
	free(signals);
	free(options);
	return rc;
}
