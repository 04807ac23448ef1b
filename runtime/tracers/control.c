// SPDX-License-Identifier: MIT
/*
 * tracers/control.c - the control channel of a traced process (wire format
 * in control.h, protocol and safety in docs/attach.md): a Unix socket
 * served by one runtime thread, "usft-control", that sets the tracer and
 * filters, starts and stops recording, reports the counters and the
 * enabled functions, and detaches.
 *
 * The thread blocks every signal (it never takes the program's signals or
 * the runtime's rendezvous) and runs only this library's code, which is not
 * built with the patch flags: nothing it does is traced.  It serves up to
 * CTL_MAX_CLIENTS connections at once, one request at a time, so every
 * request runs in order with the others.  A PIPE_WAIT that finds its
 * trace_pipe empty is parked (one per connection) and looked at again
 * between requests, every 1 ms at first and less often while it stays
 * empty (up to 16 ms): the callbacks that fill the ring make no system
 * call, so nothing can wake this thread when an entry lands.  A peer that is not the process's
 * own uid or root is refused; a packet that does not parse closes its
 * connection; a reply that cannot be sent within two seconds drops the
 * client.  Nothing a client sends reaches the program.
 *
 * Started by usft_control_start(): from `usft attach` after it loaded this
 * library into the process, or by the preload shim when `usft record` runs
 * the program.  Gone after a DETACH (or at exit): socket removed, thread
 * exited.  In a forked child the inherited listening socket is closed (the
 * path is the parent's); the child serves nothing until attached.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <usft/fgraph.h>
#include <usft/usft.h>
#include <usft/version.h>
#include "control.h"
#include "ring_buffer.h"
#include "trace_array.h"
#include "trace_triggers.h"
#include "tracer.h"

#define EXPORT __attribute__((visibility("default")))
#define CTL_MAX_CLIENTS 64	/* a mount and each of its trace_pipe readers is one */
#define CTL_WAIT_MAX_MS 16	/* the longest a parked PIPE_WAIT goes unlooked at */

/* what the next START uses (written by clients, read by READ) */
struct ctl_conf {
	char tracer[32];
	char *filter, *notrace_list, *graph;
	int max_depth;
	char clock[16];
	unsigned long buffer_kb;
	char *output;
	/* usft's own (docs/attach.md): what `usft record -P` carries for -N, -A, -R, -T, --signal */
	char *graph_notrace, *args, *retval, *triggers, *signals;
	bool funcgraph_retval;
};

static struct {
	pthread_mutex_t lock;		/* start/stop/fork against each other */
	bool running;			/* the thread exists */
	int lfd;			/* listening socket */
	int wake[2];			/* usft_control_stop() -> thread */
	int pid;			/* whose socket */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct ctl_conf conf;
	int owner;			/* client that started with detach_on_close, -1 */
	bool detach;			/* leave after this request */
	bool atfork_done;
	unsigned long nr_requests, nr_refused;
	char *waiting[CTL_MAX_CLIENTS];	/* per client: its parked PIPE_WAIT's text */
	/* the clients' connections (-1: none); a forked child closes its copies */
	int cl[CTL_MAX_CLIENTS];
	/* a descriptor the request being handled carried (SCM_RIGHTS), -1 */
	int req_fd;
} C = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.lfd = -1,
	.wake = { -1, -1 },
	.owner = -1,
	.req_fd = -1,
	.conf = { .tracer = "function" },
};

void (*usft_control_detach_hook)(void);

/* ---- the socket's place ---------------------------------------------- */

/* a directory of ours, 0700: made if missing; Return: 0 or -errno */
static int own_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return -EPERM;	/* someone else's, or open to others: not ours to use */
	return 0;
}

static int pick_dir(char *out, size_t len)
{
	const char *x = getenv("XDG_RUNTIME_DIR");

	if (x && x[0] == '/' && snprintf(out, len, "%s/usft", x) < (int)len && !own_dir(out))
		return 0;
	if (snprintf(out, len, "/run/usft") < (int)len && !own_dir(out))
		return 0;
	if (snprintf(out, len, "/tmp/usft-%u", (unsigned int)geteuid()) < (int)len && !own_dir(out))
		return 0;
	return -EACCES;
}

/* 1: someone listens at @sa; 0: nobody (no file, or a stale one); -errno: cannot tell */
static int socket_live(const struct sockaddr_un *sa)
{
	int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), r;

	if (probe < 0)
		return -errno;
	r = !connect(probe, (const struct sockaddr *)sa, sizeof(*sa)) ? 1 :
	    errno == ECONNREFUSED || errno == ENOENT ? 0 : -errno;
	close(probe);
	return r;
}

/*
 * The socket appears at its path only once it listens: it is bound to a
 * name of its own (PID.sock.new), made 0600 and listening, and only then
 * renamed over PID.sock (replacing a stale one: of a process of this pid
 * that is gone, or of this process's image before an exec).  So a client
 * that finds PID.sock refusing connections (ECONNREFUSED) knows it is
 * stale, never a server between its bind() and its listen(), and may
 * remove it (inject/cli/attach.c).  A PID.sock that answers is someone
 * else's: -EADDRINUSE.
 */
static int open_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX }, tmp = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)];
	bool bound = false;
	int fd, ret;
	mode_t old;

	ret = pick_dir(dir, sizeof(dir) - 32);
	if (ret)
		return ret;
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%.*s/%d.sock", (int)sizeof(dir) - 32, dir,
		     (int)getpid()) >= (int)sizeof(sa.sun_path) ||
	    snprintf(tmp.sun_path, sizeof(tmp.sun_path), "%s.new", sa.sun_path) >=
	    (int)sizeof(tmp.sun_path))
		return -ENAMETOOLONG;
	ret = socket_live(&sa);
	if (ret)
		return ret > 0 ? -EADDRINUSE : ret;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	old = umask(077);
	unlink(tmp.sun_path);	/* left by an earlier process of this pid */
	ret = bind(fd, (struct sockaddr *)&tmp, sizeof(tmp)) ? -errno : 0;
	umask(old);
	bound = !ret;
	if (!ret && (chmod(tmp.sun_path, 0600) || listen(fd, 8) ||
		     rename(tmp.sun_path, sa.sun_path)))
		ret = -errno;
	if (ret) {
		if (bound)
			unlink(tmp.sun_path);
		close(fd);
		return ret;
	}
	/* out of the way of the program's low descriptor numbers */
	{
		int hi = fcntl(fd, F_DUPFD_CLOEXEC, 600);

		if (hi >= 0) {
			close(fd);
			fd = hi;
		}
	}
	C.lfd = fd;
	snprintf(C.path, sizeof(C.path), "%s", sa.sun_path);
	return 0;
}

/* ---- replies ----------------------------------------------------------- */

static int send_packet(int fd, int op, int status, unsigned int flags, const char *text,
		       size_t len)
{
	struct usft_ctl_hdr h = {
		.magic = USFT_CTL_MAGIC, .version = USFT_CTL_VERSION, .op = (uint16_t)op,
		.flags = flags, .status = status, .len = (uint32_t)len,
	};
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)text, len } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	ssize_t r;

	do {
		r = sendmsg(fd, &m, MSG_NOSIGNAL);
	} while (r < 0 && errno == EINTR);
	return r == (ssize_t)(sizeof(h) + len) ? 0 : -1;
}

/* the whole text in packets of USFT_CTL_MAX_TEXT; Return: 0 or -1 (drop) */
static int reply(int fd, int op, int status, const char *text, size_t len)
{
	do {
		size_t n = len > USFT_CTL_MAX_TEXT ? USFT_CTL_MAX_TEXT : len;

		if (send_packet(fd, op, status, n < len ? USFT_CTL_MORE : 0, text, n))
			return -1;
		text += n;
		len -= n;
	} while (len);
	return 0;
}

/*
 * START's reply to `usft record -P` (detach_on_close): an empty success
 * that carries the shared rings' descriptor (SCM_RIGHTS), so the recorder
 * can salvage them if the process dies (docs/attach.md, "Crash-safe").
 */
static int reply_ring_fd(int fd, int op)
{
	struct usft_ctl_hdr h = { .magic = USFT_CTL_MAGIC, .version = USFT_CTL_VERSION,
				  .op = (uint16_t)op };
	union usft_ctl_cmsg u;
	struct iovec iov = { &h, sizeof(h) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	int rfd = usft_tbuf_ring_fd();
	ssize_t r;

	if (rfd < 0)
		return reply(fd, op, 0, NULL, 0);
	usft_ctl_put_fds(&m, &u, &rfd, 1);
	do {
		r = sendmsg(fd, &m, MSG_NOSIGNAL);
	} while (r < 0 && errno == EINTR);
	return r == (ssize_t)sizeof(h) ? 0 : -1;
}

static int reply_str(int fd, int op, int status, const char *s)
{
	return reply(fd, op, status, s, s ? strlen(s) : 0);
}

/* ---- files ------------------------------------------------------------- */

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = v && *v ? strdup(v) : NULL;
}

static bool known_tracer(const char *t)
{
	return !strcmp(t, "function") || !strcmp(t, "function_graph") ||
	       !strcmp(t, "profile") || !strcmp(t, "nop");
}

/* -A/-R over the wire: "FUNC@VAL[,VAL]...;..." (the values are checked at START) */
static bool spec_list_ok(const char *v)
{
	const char *p = v;

	while (*p) {
		size_t n = strcspn(p, ";");
		const char *at = memchr(p, '@', n);

		if (!at || at == p || at + 1 == p + n)
			return false;
		for (size_t i = 0; i < n; i++)
			if (p[i] == ' ' || p[i] == '\t' || (unsigned char)p[i] < 0x20)
				return false;
		p += n;
		if (*p == ';' && !*++p)
			return false;
	}
	return true;
}

/* the files of usft's own (-N, -A, -R, -T, --signal); Return: 1 not one of them, 0, -errno */
static int write_usft_file(const char *name, const char *v, char *why, size_t wlen)
{
	struct ctl_conf *c = &C.conf;
	int r;

	if (!strcmp(name, "set_graph_notrace")) {
		set_str(&c->graph_notrace, v);
	} else if (!strcmp(name, "argument") || !strcmp(name, "retval")) {
		if (*v && !spec_list_ok(v)) {
			snprintf(why, wlen, "%s takes FUNC@VAL[,VAL]... with ';' between specs "
				 "(e.g. 'main@arg1,arg2'), not '%s'", name, v);
			return -EINVAL;
		}
		set_str(!strcmp(name, "argument") ? &c->args : &c->retval, v);
	} else if (!strcmp(name, "options/funcgraph-retval")) {
		if (strcmp(v, "0") && strcmp(v, "1")) {
			snprintf(why, wlen, "options/funcgraph-retval takes 0 or 1");
			return -EINVAL;
		}
		c->funcgraph_retval = *v == '1';
	} else if (!strcmp(name, "triggers") || !strcmp(name, "signal_triggers")) {
		bool sig = name[0] == 's';

		char msg[400];

		r = usft_trigger_list_check(v, sig, true, msg, sizeof(msg));
		if (r) {
			snprintf(why, wlen, "%s: %s", name, msg);
			return r;
		}
		set_str(sig ? &c->signals : &c->triggers, v);
	} else {
		return 1;
	}
	return 0;
}

/* Return: 0 or -errno with @why said */
static int write_file(const char *name, const char *v, char *why, size_t wlen)
{
	struct ctl_conf *c = &C.conf;
	char *end;
	int r;

	if (!strcmp(name, "tracing_on")) {
		if (!usft_tracer_active()) {
			snprintf(why, wlen, "not recording: start first");
			return -EINVAL;
		}
		if (strcmp(v, "0") && strcmp(v, "1")) {
			snprintf(why, wlen, "tracing_on takes 0 or 1");
			return -EINVAL;
		}
		__atomic_store_n(&usft_tracing_on, *v == '1', __ATOMIC_RELEASE);
		return 0;
	}
	if (usft_tracer_active()) {
		snprintf(why, wlen, "recording: stop first to change %s", name);
		return -EBUSY;
	}
	if (!strcmp(name, "current_tracer")) {
		if (!known_tracer(v)) {
			snprintf(why, wlen, "unknown tracer '%s' (function, function_graph, profile, nop)",
				 v);
			return -EINVAL;
		}
		snprintf(c->tracer, sizeof(c->tracer), "%s", v);
	} else if (!strcmp(name, "set_ftrace_filter")) {
		set_str(&c->filter, v);
	} else if (!strcmp(name, "set_ftrace_notrace")) {
		set_str(&c->notrace_list, v);
	} else if (!strcmp(name, "set_graph_function")) {
		set_str(&c->graph, v);
	} else if (!strcmp(name, "max_graph_depth")) {
		long d = strtol(v, &end, 10);

		if (!*v || *end || d < 0 || d > USFT_MAX_GRAPH_DEPTH) {
			snprintf(why, wlen, "max_graph_depth takes 0..%d, not '%s'", USFT_MAX_GRAPH_DEPTH, v);
			return -EINVAL;
		}
		c->max_depth = (int)d;
	} else if (!strcmp(name, "trace_clock")) {
		if (*v && !usft_trace_clock_known(v)) {
			snprintf(why, wlen, "unknown clock '%s' (auto, mono, counter, pvclock)", v);
			return -EINVAL;
		}
		snprintf(c->clock, sizeof(c->clock), "%s", v);
	} else if (!strcmp(name, "buffer_size_kb")) {
		unsigned long kb = strtoul(v, &end, 10);

		if (!*v || *end || !kb || kb > (1UL << 22)) {
			snprintf(why, wlen, "buffer_size_kb takes 1..4194304, not '%s'", v);
			return -EINVAL;
		}
		c->buffer_kb = kb;
	} else if (!strcmp(name, "output")) {
		if (*v && v[0] != '/') {
			snprintf(why, wlen, "output must be an absolute path");
			return -EINVAL;
		}
		set_str(&c->output, v);
	} else if ((r = write_usft_file(name, v, why, wlen)) <= 0) {
		return r;
	} else {
		snprintf(why, wlen, "no file '%s'", name);
		return -ENOENT;
	}
	return 0;
}

static void print_hello(FILE *f)
{
	struct usft_stats st = { .sz = sizeof(st) };

	usft_stat(&st);
	fprintf(f, "usft-control %d\npid=%d\nversion=%s\nrecording=%d\ntracer=%s\n"
		"sites=%lu\nenabled=%lu\nrequests=%lu\nrefused=%lu\n",
		USFT_CTL_VERSION, (int)getpid(), usft_version(), usft_tracer_active(),
		usft_tracer_name(), st.nr_sites, st.nr_enabled, C.nr_requests, C.nr_refused);
}

/* `usft stat -P`: the runtime's options and counters, then the recording's */
static void print_stat(FILE *f)
{
	usft_print_stat(f);
	fprintf(f, "recording:\n  %-22s %s\n  %-22s %s\n  %-22s %s\n", "tracer",
		usft_tracer_active() ? usft_tracer_name() : "none", "trace_clock",
		usft_trace_clock_name(), "children_socket",
		usft_tbuf_ring_drop_held() ? "held (record -P: forked children send their rings)"
					   : "none");
}

/* Return: 0 or -errno; the text in *@buf (malloc'd) */
static int read_file(const char *name, char **buf, size_t *len, char *why, size_t wlen)
{
	struct ctl_conf *c = &C.conf;
	FILE *f = open_memstream(buf, len);
	int ret = 0;

	if (!f)
		return -ENOMEM;
	if (!strncmp(name, "tracefs/", 8))
		ret = usft_tracefs_read(name + 8, f, why, wlen);
	else if (!strcmp(name, "current_tracer"))
		fprintf(f, "%s\n", usft_tracer_active() ? usft_tracer_name() : c->tracer);
	else if (!strcmp(name, "set_ftrace_filter"))
		fprintf(f, "%s\n", c->filter ? c->filter : "");
	else if (!strcmp(name, "set_ftrace_notrace"))
		fprintf(f, "%s\n", c->notrace_list ? c->notrace_list : "");
	else if (!strcmp(name, "set_graph_function"))
		fprintf(f, "%s\n", c->graph ? c->graph : "");
	else if (!strcmp(name, "max_graph_depth"))
		fprintf(f, "%d\n", c->max_depth);
	else if (!strcmp(name, "trace_clock"))
		fprintf(f, "%s\n", c->clock[0] ? c->clock : "auto");
	else if (!strcmp(name, "buffer_size_kb"))
		fprintf(f, "%lu\n", c->buffer_kb ? c->buffer_kb : 65536);
	else if (!strcmp(name, "output"))
		fprintf(f, "%s\n", c->output ? c->output : "");
	else if (!strcmp(name, "set_graph_notrace"))
		fprintf(f, "%s\n", c->graph_notrace ? c->graph_notrace : "");
	else if (!strcmp(name, "argument"))
		fprintf(f, "%s\n", c->args ? c->args : "");
	else if (!strcmp(name, "retval"))
		fprintf(f, "%s\n", c->retval ? c->retval : "");
	else if (!strcmp(name, "options/funcgraph-retval"))
		fprintf(f, "%d\n", c->funcgraph_retval);
	else if (!strcmp(name, "triggers"))
		fprintf(f, "%s\n", c->triggers ? c->triggers : "");
	else if (!strcmp(name, "signal_triggers"))
		fprintf(f, "%s\n", c->signals ? c->signals : "");
	else if (!strcmp(name, "tracing_on"))
		fprintf(f, "%d\n", usft_tracer_active() &&
			__atomic_load_n(&usft_tracing_on, __ATOMIC_RELAXED));
	else if (!strcmp(name, "enabled_functions"))
		usft_print_enabled_functions(f);
	else if (!strcmp(name, "stat"))
		print_stat(f);
	else if (!strcmp(name, "status"))
		print_hello(f);
	else
		ret = -ENOENT;
	if (fclose(f))
		ret = ret ? ret : -ENOMEM;
	return ret;
}

#define PIPE_MAX	(1UL << 20)	/* the most text one PIPE takes */
#define PIPE_SLACK	(256UL << 10)	/* room past it for the last entry's text */

/*
 * The text of PIPE replies, kept from one to the next (this thread's only):
 * a fresh buffer a request would be faulted in, cleared and grown by
 * copying each time, most of the cost of a 1 MiB reply.
 */
static char *pipe_buf;

/*
 * The next PIPE's text, made ahead once a reply was sent, while the reader
 * takes that one in: the ring's entries from the tail on, not consumed.
 * The next PIPE of the same file and size consumes them and gets it at
 * once, if the tail has not moved and no other request came (one that
 * changes anything: it is then made again).  So formatting overlaps the
 * reader's work instead of following it.
 */
static struct {
	char *buf;
	char path[128];
	size_t max, len;
	unsigned long start, end;
	bool valid, want;
} pre;

static void free_reply(char *buf)
{
	if (buf != pipe_buf && buf != pre.buf)
		free(buf);
}

/* the text of @path's trace_pipe from its tail into @dst, not consumed */
static int pipe_format(char *dst, const char *path, size_t max, size_t *len, unsigned long *start,
		       unsigned long *end, char *why, size_t wlen)
{
	FILE *f = fmemopen(dst, PIPE_MAX + PIPE_SLACK, "w");
	long n;
	int ret;

	if (!f)
		return -ENOMEM;
	setvbuf(f, NULL, _IONBF, 0);	/* straight into @dst */
	ret = usft_tracefs_pipe_peek(path, max, f, start, end, why, wlen);
	fflush(f);
	n = ftell(f);
	fclose(f);
	*len = n > 0 ? (size_t)n : 0;
	return ret;
}

/* after a PIPE reply that was full (the ring has more): the next one's text */
static void pipe_prefetch(void)
{
	char why[8];

	if (!pre.want)
		return;
	pre.want = false;
	pre.valid = !pipe_format(pre.buf, pre.path, pre.max, &pre.len, &pre.start, &pre.end, why,
				 sizeof(why)) && pre.len;
}

/* the tracefs requests other than READ and WRITE (control.h) */
static int tracefs_op(int op, char *text, char **buf, size_t *len, char *why, size_t wlen)
{
	char *nl, *end;
	unsigned long max, start, stop;
	int ret;

	if (op == USFT_CTL_MKDIR)
		return usft_tracefs_mkdir(text, why, wlen);
	if (op == USFT_CTL_RMDIR)
		return usft_tracefs_rmdir(text, why, wlen);
	if (strncmp(text, "tracefs/", 8)) {
		snprintf(why, wlen, "PIPE and TRUNC take tracefs/NAME");
		return -EINVAL;
	}
	if (op == USFT_CTL_TRUNC)
		return usft_tracefs_trunc(text + 8, why, wlen);
	nl = strchr(text, '\n');
	max = nl ? strtoul(nl + 1, &end, 10) : 0;
	if (!nl || *end || !max) {
		snprintf(why, wlen, "PIPE takes tracefs/NAME\\nMAX");
		return -EINVAL;
	}
	*nl = 0;
	text += 8;
	if (max > PIPE_MAX)
		max = PIPE_MAX;
	if ((!pipe_buf && !(pipe_buf = malloc(PIPE_MAX + PIPE_SLACK))) ||
	    (!pre.buf && !(pre.buf = malloc(PIPE_MAX + PIPE_SLACK))))
		return -ENOMEM;
	if (pre.valid && pre.max == max && !strcmp(pre.path, text) &&
	    usft_tracefs_pipe_take(text, pre.start, pre.end)) {
		char *t = pipe_buf;	/* made ahead, and nothing happened since */

		pipe_buf = pre.buf;
		pre.buf = t;
		*len = pre.len;
		ret = 0;
	} else {
		ret = pipe_format(pipe_buf, text, max, len, &start, &stop, why, wlen);
		if (!ret)
			usft_tracefs_pipe_take(text, start, stop);
	}
	pre.valid = false;
	*buf = pipe_buf;
	if (!ret && *len > max / 2 && strlen(text) < sizeof(pre.path)) {
		/* a busy ring: make the next reply while this one is read */
		snprintf(pre.path, sizeof(pre.path), "%s", text);
		pre.max = max;
		pre.want = true;
	}
	return ret;
}

/* ---- start and stop ------------------------------------------------------ */

static int do_start(char *why, size_t wlen)
{
	struct ctl_conf *c = &C.conf;
	struct usft_trace_opts o = { 0 };
	struct usft_stats st = { .sz = sizeof(st) };
	int ret;

	if (usft_tracer_active()) {
		snprintf(why, wlen, "already recording (%s)", usft_tracer_name());
		return -EBUSY;
	}
	if (!c->output) {
		snprintf(why, wlen, "no output file: write 'output' first");
		return -EINVAL;
	}
	if (!strcmp(c->tracer, "nop")) {
		snprintf(why, wlen, "tracer nop records nothing");
		return -EINVAL;
	}
	o.tracer = c->tracer;
	o.filter = c->filter;
	o.notrace_list = c->notrace_list;
	o.graph_funcs = c->graph;
	o.graph_notrace = c->graph_notrace;
	o.args_spec = c->args;
	o.retval_spec = c->retval;
	o.funcgraph_retval = c->funcgraph_retval;
	o.triggers = c->triggers;
	o.max_depth = c->max_depth;
	o.clock = c->clock[0] ? c->clock : NULL;
	o.buffer_size = c->buffer_kb << 10;
	o.output = c->output;
	o.append = true;
	o.reusable = true;
	o.ring_anon = true;	/* crash-safe: the rings' memfd goes to `usft record -P` */
	if ((o.args_spec || o.retval_spec || o.funcgraph_retval) && strcmp(c->tracer, "function_graph")) {
		snprintf(why, wlen, "argument, retval and options/funcgraph-retval show values in the "
			 "call tree: the function_graph tracer only");
		return -EINVAL;
	}
	ret = usft_tracer_start(&o);
	if (ret) {
		snprintf(why, wlen, "%s tracer not started: %s%s", c->tracer, strerror(-ret),
			 o.args_spec || o.retval_spec ? " (a bad argument or retval spec: the "
			 "process's stderr names it)" : "");
		return ret;
	}
	if (!usft_tracer_active()) {
		usft_stat(&st);
		snprintf(why, wlen, st.nr_sites ? "tracer not started" :
			 "no patchable functions in this process (build it with the patch flags)");
		return -ENOENT;
	}
	/* the triggers on the recording: one refused, and nothing is recorded */
	ret = usft_triggers_start(c->triggers, c->signals, why, wlen);
	if (ret) {
		usft_triggers_stop();
		usft_tracer_end();
		return ret;
	}
	return 0;
}

static void do_stop(void)
{
	usft_triggers_stop();
	usft_tracer_end();
	usft_tbuf_ring_drop(-1);	/* children forked from now on do not record */
}

/* ---- requests -------------------------------------------------------------- */

/*
 * One request of client @fd; a PIPE_WAIT that finds nothing is parked:
 * *@wait gets its text and there is no reply yet (serve_waits()).
 * Return: false when the connection is to be closed.
 */
static bool handle(int fd, char *pkt, ssize_t n, size_t cap, char **wait)
{
	struct usft_ctl_hdr h;
	char why[512] = "", *text, *buf = NULL;
	size_t len = 0;
	int ret = 0;

	C.nr_requests++;
	if (n < (ssize_t)sizeof(h) || (size_t)n > cap) {
		C.nr_refused++;
		reply_str(fd, 0, -EPROTO, (size_t)n > cap ? "packet too long" : "packet too short");
		return false;
	}
	memcpy(&h, pkt, sizeof(h));
	if (h.magic != USFT_CTL_MAGIC || h.version != USFT_CTL_VERSION || h.flags ||
	    h.reserved || h.status || h.len != (size_t)n - sizeof(h) || !h.op ||
	    h.op >= USFT_CTL_NR_OPS) {
		C.nr_refused++;
		reply_str(fd, 0, -EPROTO, "not a usft-control request (see docs/attach.md)");
		return false;
	}
	text = pkt + sizeof(h);
	text[h.len] = 0;
	if (strlen(text) != h.len) {
		C.nr_refused++;
		reply_str(fd, h.op, -EPROTO, "NUL byte in the request text");
		return false;
	}
	if (h.op != USFT_CTL_HELLO && h.op != USFT_CTL_READ && h.op != USFT_CTL_PIPE &&
	    h.op != USFT_CTL_PIPE_WAIT)
		pre.valid = false;	/* it may change what the text would be */
	switch (h.op) {
	case USFT_CTL_HELLO:
		ret = read_file("status", &buf, &len, why, sizeof(why));
		break;
	case USFT_CTL_READ:
		ret = read_file(text, &buf, &len, why, sizeof(why));
		if (ret == -ENOENT && !why[0])
			snprintf(why, sizeof(why), "no file '%s'", text);
		break;
	case USFT_CTL_WRITE:
	case USFT_CTL_APPEND: {
		char *nl = strchr(text, '\n');

		if (!nl || (h.op == USFT_CTL_APPEND && strncmp(text, "tracefs/", 8))) {
			ret = -EINVAL;
			snprintf(why, sizeof(why), "WRITE takes NAME\\nVALUE, APPEND tracefs/NAME\\nVALUE");
			break;
		}
		*nl = 0;
		if (!strncmp(text, "tracefs/", 8)) {
			ret = usft_tracefs_write(text + 8, nl + 1, strlen(nl + 1),
						 h.op == USFT_CTL_APPEND, why, sizeof(why));
			break;
		}
		nl[1 + strcspn(nl + 1, "\n")] = 0;	/* `echo VALUE` style: one line */
		ret = write_file(text, nl + 1, why, sizeof(why));
		break;
	}
	case USFT_CTL_PIPE_WAIT:
		*wait = strdup(text);	/* PIPE's parsing cuts the text */
		if (!*wait) {
			ret = -ENOMEM;
			break;
		}
		ret = tracefs_op(USFT_CTL_PIPE, text, &buf, &len, why, sizeof(why));
		if (!ret && !len) {
			free_reply(buf);
			return true;	/* parked: the reply comes with the data */
		}
		free(*wait);
		*wait = NULL;
		break;
	case USFT_CTL_PIPE:
	case USFT_CTL_TRUNC:
	case USFT_CTL_MKDIR:
	case USFT_CTL_RMDIR:
		ret = tracefs_op(h.op, text, &buf, &len, why, sizeof(why));
		break;
	case USFT_CTL_START:
		if (*text && strcmp(text, "detach_on_close")) {
			ret = -EINVAL;
			snprintf(why, sizeof(why), "START takes \"\" or \"detach_on_close\"");
			break;
		}
		ret = do_start(why, sizeof(why));
		if (!ret && *text) {
			C.owner = fd;
			/* the recorder's socket for the rings of children forked now */
			usft_tbuf_ring_drop(C.req_fd);
			C.req_fd = -1;
			if (reply_ring_fd(fd, h.op))
				return false;
			return true;
		}
		break;
	case USFT_CTL_STOP:
		if (!usft_tracer_active()) {
			ret = -EINVAL;
			snprintf(why, sizeof(why), "not recording");
			break;
		}
		do_stop();
		C.owner = -1;
		break;
	case USFT_CTL_DETACH:
		do_stop();
		usft_tracefs_reset();
		if (usft_control_detach_hook)
			usft_control_detach_hook();
		C.owner = -1;
		C.detach = true;
		break;
	}
	if (ret)
		reply_str(fd, h.op, ret, why[0] ? why : strerror(-ret));
	else
		reply(fd, h.op, 0, buf, len);
	free_reply(buf);
	pipe_prefetch();
	return true;
}

static bool peer_ok(int fd)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l))
		return false;
	return cr.uid == 0 || cr.uid == geteuid();
}

static void drop_client(int *cl, int i)
{
	int fd = cl[i];

	free(C.waiting[i]);	/* a reader gone (or interrupted): its wait with it */
	C.waiting[i] = NULL;
	if (fd == C.owner) {
		/* the `usft record -P` that started this is gone (killed): detach */
		do_stop();
		if (usft_control_detach_hook)
			usft_control_detach_hook();
		C.owner = -1;
		C.detach = true;
	}
	/* the slot first: a fork now never finds a number closed (then reused) in it */
	__atomic_store_n(&cl[i], -1, __ATOMIC_RELEASE);
	close(fd);
}

/*
 * The parked PIPE_WAITs whose trace_pipe has something now (or that fail:
 * an instance removed) get their reply.  @scratch: room for a request text.
 * Return: whether one is still parked.
 */
static bool serve_waits(const int *cl, char *scratch, bool *served)
{
	bool left = false;

	for (int i = 0; i < CTL_MAX_CLIENTS; i++) {
		char why[512] = "", *buf = NULL;
		size_t len = 0;
		int ret;

		if (!C.waiting[i])
			continue;
		strcpy(scratch, C.waiting[i]);
		ret = tracefs_op(USFT_CTL_PIPE, scratch, &buf, &len, why, sizeof(why));
		if (ret || len) {
			if (ret)
				reply_str(cl[i], USFT_CTL_PIPE_WAIT, ret, why[0] ? why : strerror(-ret));
			else
				reply(cl[i], USFT_CTL_PIPE_WAIT, 0, buf, len);
			free(C.waiting[i]);
			C.waiting[i] = NULL;
			*served = true;
		} else {
			left = true;
		}
		free_reply(buf);
		pipe_prefetch();
	}
	return left;
}

/*
 * One request packet of @fd (recv(2)'s return, MSG_TRUNC: its whole
 * length).  A descriptor it carries goes to C.req_fd (START's: the
 * recorder's socket for children's rings); more than one, or one that is
 * not a SOCK_SEQPACKET socket, is closed at once.
 */
static ssize_t recv_request(int fd, char *pkt, size_t cap)
{
	union usft_ctl_cmsg u;
	struct iovec iov = { pkt, cap };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[USFT_CTL_MAX_FDS], nfd;
	ssize_t n;

	usft_ctl_fd_room(&m, &u);
	n = recvmsg(fd, &m, MSG_TRUNC | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return n;
	nfd = usft_ctl_take_fds(&m, fds, USFT_CTL_MAX_FDS);
	for (int j = 0; j < nfd; j++) {
		int type = 0;
		socklen_t tl = sizeof(type);

		if (C.req_fd < 0 && !getsockopt(fds[j], SOL_SOCKET, SO_TYPE, &type, &tl) &&
		    type == SOCK_SEQPACKET) {
			C.req_fd = fds[j];
			continue;
		}
		close(fds[j]);
	}
	return n;
}

static void *ctl_main(void *arg)
{
	size_t cap = sizeof(struct usft_ctl_hdr) + USFT_CTL_MAX_TEXT + 1;
	int *cl = C.cl, wait_ms = -1;
	char *pkt;

	/* every call of this thread is usft's own: never recorded */
	usft_self_begin();
	pkt = malloc(cap + 1);
	prctl(PR_SET_NAME, "usft-control", 0, 0, 0);
	for (int i = 0; i < CTL_MAX_CLIENTS; i++) {
		cl[i] = -1;
		free(C.waiting[i]);	/* a forked child's copy of its parent's */
		C.waiting[i] = NULL;
	}
	while (pkt && !C.detach) {
		struct pollfd p[CTL_MAX_CLIENTS + 2];
		bool parked = false;
		int np = 0;

		p[np++] = (struct pollfd){ C.lfd, POLLIN, 0 };
		p[np++] = (struct pollfd){ C.wake[0], POLLIN, 0 };
		for (int i = 0; i < CTL_MAX_CLIENTS; i++)
			p[np++] = (struct pollfd){ cl[i], POLLIN, 0 };
		if (poll(p, np, wait_ms) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents) {
			char b = 0;

			if (read(C.wake[0], &b, 1) != 1 || (b != 'r' && b != 'e'))
				break;
			if (b == 'e') {
				/* a finish trigger ended the recording: its owner hears it now */
				pthread_mutex_lock(&C.lock);
				if (C.owner >= 0 && !usft_tracer_active())
					send_packet(C.owner, USFT_CTL_ENDED, 0, 0, "finish", 6);
				pthread_mutex_unlock(&C.lock);
				continue;
			}
			/* an exec that failed: the socket again (usft_control_exec()) */
			pthread_mutex_lock(&C.lock);
			{
				int old = C.lfd;

				if (!open_socket())
					close(old);
				else
					C.lfd = old;
			}
			pthread_mutex_unlock(&C.lock);
			continue;
		}
		for (int i = 0; i < CTL_MAX_CLIENTS && !C.detach; i++) {
			ssize_t n;

			if (cl[i] < 0 || !p[2 + i].revents)
				continue;
			n = recv_request(cl[i], pkt, cap);
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			pthread_mutex_lock(&C.lock);
			/* a request from a client with a parked wait takes its place */
			free(C.waiting[i]);
			C.waiting[i] = NULL;
			if (n <= 0 || !handle(cl[i], pkt, n, cap - 1, &C.waiting[i]))
				drop_client(cl, i);
			else if (C.waiting[i])
				parked = true;
			/* a descriptor no request took */
			if (C.req_fd >= 0)
				close(C.req_fd);
			C.req_fd = -1;
			pthread_mutex_unlock(&C.lock);
		}
		if (parked) {
			wait_ms = 1;	/* just found empty: look again in 1 ms */
		} else if (wait_ms >= 0 && !C.detach) {
			bool served = false, left;

			pthread_mutex_lock(&C.lock);
			left = serve_waits(cl, pkt, &served);
			pthread_mutex_unlock(&C.lock);
			/* 1 ms after data, then doubling while the pipes stay empty */
			wait_ms = !left ? -1 : served ? 1 :
				  wait_ms * 2 > CTL_WAIT_MAX_MS ? CTL_WAIT_MAX_MS : wait_ms * 2;
		}
		if (p[0].revents & POLLIN) {
			int fd = accept4(C.lfd, NULL, NULL, SOCK_CLOEXEC), slot = -1;
			int sndbuf = (int)(PIPE_MAX + PIPE_SLACK);
			struct timeval tv = { 2, 0 };

			if (fd < 0)
				continue;
			for (int i = 0; i < CTL_MAX_CLIENTS; i++)
				if (cl[i] < 0 && slot < 0)
					slot = i;
			if (!peer_ok(fd)) {
				C.nr_refused++;
				reply_str(fd, 0, -EACCES, "only the process's own uid or root may "
					  "control it");
				close(fd);
				continue;
			}
			if (slot < 0) {
				reply_str(fd, 0, -EBUSY, "too many clients");
				close(fd);
				continue;
			}
			/* a client that does not read its replies is dropped, not waited for */
			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
			/*
			 * A 1 MiB trace_pipe reply queued whole (up to the system's
			 * net.core.wmem_max): with the default ~200 KiB, this thread
			 * and the reader's take turns for each three packets, each
			 * turn a wake-up that waits for a CPU on a busy machine.
			 */
			setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
			cl[slot] = fd;
		}
	}
	free(pkt);
	pthread_mutex_lock(&C.lock);
	for (int i = 0; i < CTL_MAX_CLIENTS; i++) {
		int fd = cl[i];

		__atomic_store_n(&cl[i], -1, __ATOMIC_RELEASE);
		if (fd >= 0)
			close(fd);
		free(C.waiting[i]);
		C.waiting[i] = NULL;
	}
	free(pipe_buf);
	free(pre.buf);
	pipe_buf = pre.buf = NULL;
	pre.valid = pre.want = false;
	if (C.pid == getpid())
		unlink(C.path);
	close(C.lfd);
	close(C.wake[0]);
	close(C.wake[1]);
	C.lfd = C.wake[0] = C.wake[1] = -1;
	C.running = false;
	C.detach = false;
	pthread_mutex_unlock(&C.lock);
	usft_self_end();
	return arg;
}

/* ---- start, stop, fork ----------------------------------------------------- */

/*
 * The child has the descriptors, not the thread; the path is the parent's.
 * No prepare handler takes C.lock: a request holds it while it waits for
 * the runtime's ftrace_lock, which the runtime's own prepare handler holds
 * across a fork (ABBA).  So the child re-initialises the lock and only
 * closes what the parent had open.
 */
static void ctl_atfork_child(void)
{
	pthread_mutex_init(&C.lock, NULL);
	if (C.running) {
		/*
		 * The parent's clients too: a child that kept a `usft record -P`
		 * connection open would hide the parent's death from it (no
		 * hang-up) and take its STOP into a socket nobody reads.
		 */
		for (int i = 0; i < CTL_MAX_CLIENTS; i++) {
			if (C.cl[i] >= 0)
				close(C.cl[i]);
			C.cl[i] = -1;
		}
		close(C.lfd);
		close(C.wake[0]);
		close(C.wake[1]);
		C.lfd = C.wake[0] = C.wake[1] = -1;
		C.running = false;
	}
	C.owner = -1;
}

/*
 * usft_control_start() - serve this process's control socket (idempotent).
 * Return: 0 or -errno.
 */
EXPORT int usft_control_start(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int ret;

	usft_self_begin();
	pthread_mutex_lock(&C.lock);
	if (C.running) {
		pthread_mutex_unlock(&C.lock);
		usft_self_end();
		return 0;
	}
	if (!C.atfork_done && !pthread_atfork(NULL, NULL, ctl_atfork_child))
		C.atfork_done = true;
	ret = open_socket();
	if (!ret && pipe2(C.wake, O_CLOEXEC))
		ret = -errno;
	if (!ret) {
		C.pid = getpid();
		C.detach = false;
		sigfillset(&all);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 256 << 10);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		ret = -pthread_create(&t, &attr, ctl_main, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&attr);
		C.running = !ret;
	}
	if (ret && C.lfd >= 0) {
		unlink(C.path);
		close(C.lfd);
		C.lfd = -1;
		if (C.wake[0] >= 0) {
			close(C.wake[0]);
			close(C.wake[1]);
			C.wake[0] = C.wake[1] = -1;
		}
	}
	pthread_mutex_unlock(&C.lock);
	usft_self_end();
	return ret;
}

/*
 * usft_control_exit() - the process ends (exit, _exit, exec): remove the
 * socket so nothing connects to a process that is gone.  The thread itself
 * goes with the process.
 */
void usft_control_exit(void)
{
	if (C.running && C.pid == getpid() && C.path[0])
		unlink(C.path);
}

/*
 * usft_control_exec() - the process calls exec (@begin), or the exec
 * failed.  The socket goes first: the listening descriptor closes with the
 * image, and a socket left behind would make every client meet a stale
 * one.  After a failed exec the server thread opens it again.  No lock
 * (the caller holds the runtime's rendezvous lock, which a request may
 * wait for under C.lock); nothing in a vfork() child (the parent's).
 */
void usft_control_exec(bool begin)
{
	char b = 'r';

	if (!__atomic_load_n(&C.running, __ATOMIC_ACQUIRE) || C.pid != getpid() || !C.path[0])
		return;
	if (begin)
		unlink(C.path);
	else if (write(C.wake[1], &b, 1) != 1)
		return;		/* unreachable until attached again, as after an exec */
}

/*
 * usft_control_session_ended() - a finish trigger's thread ended the
 * recording: the server thread tells the client that started it (no lock
 * here: a request may hold C.lock while it waits for the session).
 */
void usft_control_session_ended(void)
{
	char b = 'e';

	if (!__atomic_load_n(&C.running, __ATOMIC_ACQUIRE) || C.pid != getpid() ||
	    write(C.wake[1], &b, 1) != 1)
		return;
}

/* the preload shim, under `usft record`: remember its choices for READ */
void usft_control_set_conf(const struct usft_trace_opts *o)
{
	usft_self_begin();
	pthread_mutex_lock(&C.lock);
	if (o->tracer)
		snprintf(C.conf.tracer, sizeof(C.conf.tracer), "%s", o->tracer);
	set_str(&C.conf.filter, o->filter);
	set_str(&C.conf.notrace_list, o->notrace_list);
	set_str(&C.conf.graph, o->graph_funcs);
	set_str(&C.conf.graph_notrace, o->graph_notrace);
	set_str(&C.conf.args, o->args_spec);
	set_str(&C.conf.retval, o->retval_spec);
	set_str(&C.conf.triggers, o->triggers);
	C.conf.funcgraph_retval = o->funcgraph_retval;
	C.conf.max_depth = o->max_depth;
	set_str(&C.conf.output, o->output);
	pthread_mutex_unlock(&C.lock);
	usft_self_end();
}
