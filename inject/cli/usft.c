// SPDX-License-Identifier: MIT
/*
 * inject/cli/usft.c - the `usft` command (see docs/usft.1):
 *
 *   usft record [-p TRACER] [-l GLOB]... [-n GLOB]... [-g FUNC]... [-o FILE]
 *               [-b KB] [-C CLOCK] [-O NAME=VALUE]... [--max-graph-depth N]
 *               [-A FUNC@ARGS]... [-R FUNC@retval]... [--funcgraph-retval]
 *               [-q] [--] PROG [ARGS]
 *   usft report [-i FILE] [--format text|json|folded|trace-cmd] [--summary]
 *               [-s KEYS] [-g FUNC] [--tid T] [--pid P] [-t TIME] [-D N] [-o OUT]
 *   usft info [-i FILE]
 *   usft record -P PID [options]      (attach.c: a running process)
 *   usft attach PID, usft detach PID, usft stat -P PID
 *   usft list -f PROG [GLOB]
 *   usft stat
 *
 * main() dispatches to the commands; report, info and stat are here, record in
 * record.c, list in list.c, attach/detach/-P in attach.c, and what they
 * share (usage texts, option values, PATH and shim look-ups) in cli.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <usft/usft.h>
#include "cli.h"
#include "trace_read.h"
#include "trace_views.h"

/* ---- report, stat --------------------------------------------------------------- */

/*
 * the trace file @input, read (@stream: its events left in the file for an
 * iterator); Return: 0, or USFT_EXIT_FAIL after a message
 */
static int read_trace(const char *input, struct usft_trace *t, bool stream)
{
	const char *load = getenv("USFT_REPORT_LOAD");	/* the loading reader, for comparison */
	int r;

	if (load && !strcmp(load, "1"))
		stream = false;
	r = stream ? usft_trace_open(input, t) : usft_trace_read(input, t, true);
	if (r == -ENOSPC || r == -EDQUOT) {
		fprintf(stderr, "usft: %s is not a regular file: it is copied into TMPDIR (%s) to be "
			"read as it streams, and there is no room there; set TMPDIR to a directory "
			"with room for the trace, or give the file itself with -i FILE\n", input,
			getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		return USFT_EXIT_FAIL;
	}

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
	return 0;
}

static char *demangle_simple(const char *name)
{
	return usft_demangle(name, false);
}

static char *demangle_full(const char *name)
{
	return usft_demangle(name, true);
}

/* "10us", "1.5ms", "200ns", "2s"; a bare number is microseconds (tracing_thresh) */
static int parse_time(const char *s, uint64_t *ns)
{
	static const struct { const char *unit; double mul; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "", 1e3 },
	};
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v >= 0))
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit)) {
			v *= units[i].mul;
			if (v >= 1.8e19)
				return -1;
			*ns = (uint64_t)v;
			return 0;
		}
	return -1;
}

static int cmd_report(int argc, char **argv)
{
	enum { O_SUMMARY = 256, O_TID, O_PID, O_NO_DEMANGLE, O_DEMANGLE };
	static const struct option lo[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "format", required_argument, NULL, 'F' },
		{ "output", required_argument, NULL, 'o' },
		{ "no-header", no_argument, NULL, 'N' },
		{ "follow-symlink", no_argument, NULL, 'S' },
		{ "summary", no_argument, NULL, O_SUMMARY },
		{ "sort", required_argument, NULL, 's' },
		{ "graph", required_argument, NULL, 'g' },
		{ "tid", required_argument, NULL, O_TID },
		{ "pid", required_argument, NULL, O_PID },
		{ "time-filter", required_argument, NULL, 't' },
		{ "depth", required_argument, NULL, 'D' },
		{ "no-demangle", no_argument, NULL, O_NO_DEMANGLE },
		{ "demangle", required_argument, NULL, O_DEMANGLE },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *input = "usft.dat", *format = "text", *output = NULL, *why;
	struct usft_view_opts vo = { .kind = USFT_VIEW_SUMMARY };
	bool view = false, folded, tracecmd, follow = false, empty;
	bool trimmed = false;
	struct usft_trace t;
	struct usft_out o;
	struct stat in_st, out_st;
	FILE *out = stdout;
	char *end;
	int c, r;

	usft_trace_name_hook = demangle_simple;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:F:o:s:g:t:D:h", lo, NULL)) != -1) {
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
			vo.flags |= USFT_PRINT_NO_HEADER;
			break;
		case 'S':
			follow = true;
			break;
		case O_SUMMARY:
			view = true;
			break;
		case 's':
			view = true;
			vo.sort = optarg;
			break;
		case 'g':
			view = true;
			vo.kind = USFT_VIEW_GRAPH;
			vo.graph_func = optarg;
			break;
		case O_TID:
			vo.tids = optarg;
			break;
		case O_PID:
			vo.pids = optarg;
			break;
		case 't':
			if (parse_time(optarg, &vo.thresh_ns))
				return usft_usage_error("report", "-t %s: a time is a number and a "
							"unit (ns, us, ms, s), e.g. -t 10us", optarg);
			trimmed = true;
			break;
		case 'D':
			errno = 0;
			vo.max_depth = (unsigned int)strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || *optarg == '-' || !vo.max_depth ||
			    vo.max_depth > USFT_MAX_GRAPH_DEPTH)
				return usft_usage_error("report", "-D %s: a depth is 1..%d", optarg,
							USFT_MAX_GRAPH_DEPTH);
			trimmed = true;
			break;
		case O_NO_DEMANGLE:
			usft_trace_name_hook = NULL;
			break;
		case O_DEMANGLE:
			if (!strcmp(optarg, "simple"))
				usft_trace_name_hook = demangle_simple;
			else if (!strcmp(optarg, "full"))
				usft_trace_name_hook = demangle_full;
			else if (!strcmp(optarg, "no") || !strcmp(optarg, "none"))
				usft_trace_name_hook = NULL;
			else
				return usft_usage_error("report", "--demangle %s: simple, full or no",
							optarg);
			break;
		case 'h':
			usft_usage(stdout, "report");
			return 0;
		default:
			return usft_bad_option("report", c, argv);
		}
	}
	if (optind < argc)
		return usft_usage_error("report", "unexpected argument '%s'", argv[optind]);
	if (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "folded") &&
	    strcmp(format, "trace-cmd"))
		return usft_usage_error("report", "unknown format '%s' (text, json, folded, "
					"trace-cmd)", format);
	folded = !strcmp(format, "folded");
	tracecmd = !strcmp(format, "trace-cmd");
	if (view && strcmp(format, "text"))
		return usft_usage_error("report", "--summary, -s and --graph print text: "
					"leave out --format %s", format);
	if (folded) {
		view = true;
		vo.kind = USFT_VIEW_FOLDED;
	}
	if (trimmed && !view)
		return usft_usage_error("report", "-t and -D apply to --summary, -s, --graph and "
					"--format folded");
	if (tracecmd && !output)
		return usft_usage_error("report", "--format trace-cmd writes a file: add -o FILE.dat");
	if ((why = usft_view_check(&vo)))
		return usft_usage_error("report", "%s", why);
	/*
	 * Every format and view streams the events from the file: memory does
	 * not follow the trace's size (a pipe is copied into TMPDIR first).
	 */
	r = read_trace(input, &t, true);
	if (r)
		return r;
	usft_trace_select(&t, vo.pids, vo.tids);
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
	why = NULL;
	if (tracecmd)
		r = usft_write_tracecmd(out, &t, &why);
	else if (view)
		r = usft_print_view(out, &t, &vo, &why);
	else if (!strcmp(format, "json"))
		r = usft_print_json(out, &t, vo.flags);
	else
		r = usft_print_text(out, &t, vo.flags);
	if (t.truncated)
		fprintf(stderr, "usft: %s ends inside a chunk: a process was killed while writing "
			"it, or the disk filled up (ENOSPC); what came before is shown\n", input);
	usft_trace_free(&t);
	if (r && why) {
		fprintf(stderr, "usft: %s: %s\n", input, why);
		if (out != stdout)
			fclose(out);
		if (output)
			usft_out_abort(&o);
		return USFT_EXIT_FAIL;
	}
	if (r < -1)
		errno = -r;
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

static int cmd_info(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *input = "usft.dat";
	struct usft_trace t;
	int c, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:h", lo, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case 'h':
			usft_usage(stdout, "info");
			return 0;
		default:
			return usft_bad_option("info", c, argv);
		}
	}
	if (optind < argc)
		return usft_usage_error("info", "unexpected argument '%s'", argv[optind]);
	usft_trace_name_hook = demangle_simple;
	r = read_trace(input, &t, true);
	if (r)
		return r;
	r = usft_print_info(stdout, &t, input);
	usft_trace_free(&t);
	if (r || fflush(stdout)) {
		fprintf(stderr, "usft: writing the standard output: %s\n",
			strerror(r < -1 ? -r : errno ? errno : EIO));
		return USFT_EXIT_FAIL;
	}
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
		return usft_cmd_record(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "info"))
		return cmd_info(argc - 1, argv + 1);
	if (!strcmp(cmd, "list"))
		return usft_cmd_list(argc - 1, argv + 1);
	if (!strcmp(cmd, "stat"))
		return cmd_stat(argc - 1, argv + 1);
	if (!strcmp(cmd, "attach"))
		return usft_cmd_attach(argc - 1, argv + 1);
	if (!strcmp(cmd, "detach"))
		return usft_cmd_detach(argc - 1, argv + 1);
	if (!strcmp(cmd, "mount"))
		return usft_cmd_mount(argc - 1, argv + 1);
	fprintf(stderr, "usft: unknown command '%s'\n", cmd);
	usft_usage(stderr, NULL);
	return USFT_EXIT_USAGE;
}
