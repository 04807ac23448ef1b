// SPDX-License-Identifier: MIT
/*
 * inject/cli/attach.c - the commands that reach a running process:
 *
 *   usft attach PID          load the runtime (inject.c) or join the one it
 *                            has; its control socket serves from then on
 *   usft detach PID          recording stopped, every site back to its NOP,
 *                            the runtime's threads gone, text as before
 *   usft stat -P PID         the process's own options and counters
 *   usft record -P PID ...   attach, record until --duration, ^C or its
 *                            exit, detach
 *
 * Everything after the load goes through the control socket
 * (runtime/tracers/control.h), never through ptrace.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "control.h"
#include "inject.h"

static long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static int parse_pid(const char *cmd, const char *s, pid_t *pid)
{
	char *end;
	long v;

	errno = 0;
	v = s ? strtol(s, &end, 10) : 0;
	if (!s || !*s || *end || errno || v <= 0 || v > 0x3fffffff)
		return usft_usage_error(cmd, "'%s' is not a process id", s ? s : "");
	*pid = (pid_t)v;
	return 0;
}

/* ---- the control client ------------------------------------------------ */

/* XDG_RUNTIME_DIR of the process itself (its environment at start) */
static void target_xdg(pid_t pid, char *out, size_t len)
{
	char path[64], buf[65536];
	ssize_t n;
	int fd;

	out[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	for (char *p = buf; p < buf + n; p += strlen(p) + 1)
		if (!strncmp(p, "XDG_RUNTIME_DIR=", 16) && p[16] == '/')
			snprintf(out, len, "%s", p + 16);
}

/*
 * @path refused a connection: nobody listens there any more (its process
 * exited or called exec; a server's socket appears at its path only once
 * it listens, runtime/tracers/control.c).  It is removed, and only that
 * file: renamed aside first, unlinked if it is still the socket that
 * refused (@seen), else put back (a new process of this pid put its own
 * there meanwhile).
 */
static void remove_stale(const char *path, const struct stat *seen)
{
	char aside[PATH_MAX];
	struct stat st;

	if (snprintf(aside, sizeof(aside), "%s.stale-%d", path, (int)getpid()) >= (int)sizeof(aside) ||
	    rename(path, aside))
		return;
	if (!lstat(aside, &st) && S_ISSOCK(st.st_mode) && st.st_dev == seen->st_dev &&
	    st.st_ino == seen->st_ino)
		unlink(aside);
	else
		renameat2(AT_FDCWD, aside, AT_FDCWD, path, RENAME_NOREPLACE);
}

/* the server at @fd is @t's process itself: its pid (SO_PEERCRED), and the
 * process of that pid is the one probed (same start time) */
static bool peer_is(int fd, const struct usft_target *t)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) || cr.pid != t->pid)
		return false;
	return !t->start_time || usft_proc_start_time(t->pid) == t->start_time;
}

/*
 * Return: a socket connected to @t's own server, or -errno (-ENOENT:
 * nobody serves; -ESRCH: what answers at its path is another process).
 * A stale socket met on the way is removed.
 */
static int ctl_connect(const struct usft_target *t)
{
	char dirs[4][PATH_MAX], xdg[PATH_MAX];
	const char *own = getenv("XDG_RUNTIME_DIR");
	pid_t pid = t->pid;
	int nd = 0, err = -ENOENT;

	target_xdg(pid, xdg, sizeof(xdg));
	if (xdg[0])
		snprintf(dirs[nd++], PATH_MAX, "%.4000s/usft", xdg);
	if (own && own[0] == '/')
		snprintf(dirs[nd++], PATH_MAX, "%s/usft", own);
	snprintf(dirs[nd++], PATH_MAX, "/run/usft");
	snprintf(dirs[nd++], PATH_MAX, "/tmp/usft-%u", (unsigned int)t->uid);
	for (int i = 0; i < nd; i++) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		struct timeval tv = { 5, 0 };
		struct stat st;
		int fd;

		if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%d.sock", dirs[i], (int)pid) >=
		    (int)sizeof(sa.sun_path) || lstat(sa.sun_path, &st))
			continue;
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			if (peer_is(fd, t))
				return fd;
			err = -ESRCH;	/* not its server: left alone */
		} else if (errno == ECONNREFUSED) {
			remove_stale(sa.sun_path, &st);
		} else if (errno == EACCES || errno == EPERM) {
			err = -errno;
		}
		close(fd);
	}
	return err;
}

/*
 * One request, its whole reply into *@out (NUL-terminated, malloc'd).
 * Return: the reply's status (0 or -errno), or -EPIPE/-EPROTO for the
 * connection itself.
 */
static int ctl_request_fd(int fd, int op, const char *text, char **out, int *rfd,
			  bool (*stop)(void), int sfd);

static int ctl_request(int fd, int op, const char *text, char **out)
{
	return ctl_request_fd(fd, op, text, out, NULL, NULL, -1);
}

/* one packet; a descriptor it carries (SCM_RIGHTS) into *@rfd when asked */
static ssize_t recv_packet(int fd, char *pkt, size_t cap, int *rfd)
{
	union usft_ctl_cmsg u;
	struct iovec iov = { pkt, cap };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;
	int got;

	if (rfd)
		usft_ctl_fd_room(&m, &u);
	do {
		n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (rfd && n >= 0 && usft_ctl_take_fds(&m, &got, 1)) {
		if (*rfd >= 0)
			close(*rfd);
		*rfd = got;
	}
	return n;
}

/*
 * ctl_request(), and a descriptor the reply carries into *@rfd (-1: none).
 * @stop (NULL: none): while no reply has come, asked every 100 ms and at
 * each signal; true gives up the wait (-EINTR; the connection is then out
 * of step and to be closed).  @sfd (-1: none): a descriptor the request
 * carries (SCM_RIGHTS).
 */
static int ctl_request_fd(int fd, int op, const char *text, char **out, int *rfd,
			  bool (*stop)(void), int sfd)
{
	size_t tl = text ? strlen(text) : 0, len = 0;
	struct usft_ctl_hdr h = { .magic = USFT_CTL_MAGIC, .version = USFT_CTL_VERSION,
				  .op = (uint16_t)op, .len = (uint32_t)tl };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)text, tl } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = tl ? 2 : 1 };
	union usft_ctl_cmsg u;
	char *pkt = malloc(sizeof(h) + USFT_CTL_MAX_TEXT), *buf = NULL;
	size_t cap = 0;
	int status = 0;
	ssize_t sent;

	*out = NULL;
	if (rfd)
		*rfd = -1;
	if (!pkt)
		return -ENOMEM;
	if (sfd >= 0)
		usft_ctl_put_fds(&m, &u, &sfd, 1);
	/* a signal (the tracefs server's FUSE interrupt) must not cost the
	 * connection: a request or reply cut short would desynchronise it */
	do {
		sent = sendmsg(fd, &m, MSG_NOSIGNAL);
	} while (sent < 0 && errno == EINTR);
	if (sent != (ssize_t)(sizeof(h) + tl)) {
		free(pkt);
		return -EPIPE;
	}
	while (stop) {
		/* a reply that waits for data (PIPE_WAIT): no receive timeout */
		struct pollfd pf = { fd, POLLIN, 0 };

		if (poll(&pf, 1, 100) > 0)
			break;
		if (stop()) {
			free(pkt);
			return -EINTR;
		}
	}
	for (;;) {
		ssize_t n;
		char *p;

		n = recv_packet(fd, pkt, sizeof(h) + USFT_CTL_MAX_TEXT, rfd);

		if (n < (ssize_t)sizeof(h)) {
			status = n < 0 && errno == EAGAIN ? -ETIMEDOUT : -EPIPE;
			break;
		}
		memcpy(&h, pkt, sizeof(h));
		if (h.magic != USFT_CTL_MAGIC || h.len != (size_t)n - sizeof(h)) {
			status = -EPROTO;
			break;
		}
		if (h.op == USFT_CTL_ENDED)
			continue;	/* unasked (a finish ended the recording): not the reply */
		if (len + h.len + 1 > cap) {
			/* doubling: a 1 MiB trace_pipe reply is 16 packets */
			size_t want = cap * 2 > len + h.len + 1 ? cap * 2 : len + h.len + 1;

			p = realloc(buf, want);
			if (!p) {
				status = -ENOMEM;
				break;
			}
			buf = p;
			cap = want;
		}
		memcpy(buf + len, pkt + sizeof(h), h.len);
		len += h.len;
		buf[len] = 0;
		status = h.status;
		if (!(h.flags & USFT_CTL_MORE))
			break;
	}
	free(pkt);
	*out = buf;
	return status;
}

static int ctl_write(int fd, const char *name, const char *value, char **why)
{
	char *text = malloc(strlen(name) + (value ? strlen(value) : 0) + 2);
	int r;

	if (!text)
		return -ENOMEM;
	sprintf(text, "%s\n%s", name, value ? value : "");
	r = ctl_request(fd, USFT_CTL_WRITE, text, why);
	free(text);
	return r;
}

/* ---- attach ----------------------------------------------------------------- */

static void report(const char *cmd, const struct inject_result *r)
{
	fprintf(stderr, "usft %s: %s\n", cmd, r->msg);
}

/*
 * A control connection to @pid: joined if it serves one, else the runtime
 * loaded first.  Return: the socket, or -(exit code) with the reason said.
 */
static int attach(const char *cmd, pid_t pid, struct usft_target *t, bool *loaded)
{
	struct inject_result res;
	char lib[PATH_MAX];
	int fd, code;
	long until;

	*loaded = false;
	usft_attach_step("start");
	code = usft_target_probe(pid, t, &res);
	usft_attach_step("probe");
	fd = code ? -ENOENT : ctl_connect(t);
	usft_attach_step("connect (before load)");
	if (fd >= 0)
		return fd;		/* it serves already (usft record, an attach before) */
	if (code) {
		report(cmd, &res);
		return -code;
	}
	if (usft_find_preload(lib, sizeof(lib))) {
		fprintf(stderr, "usft %s: cannot find %s (set USFT_PRELOAD)\n", cmd, USFT_PRELOAD_NAME);
		return -USFT_EXIT_FAIL;
	}
	if (lib[0] != '/') {
		char abs[PATH_MAX];

		if (!realpath(lib, abs)) {
			fprintf(stderr, "usft %s: %s: %s\n", cmd, lib, strerror(errno));
			return -USFT_EXIT_FAIL;
		}
		snprintf(lib, sizeof(lib), "%s", abs);
	}
	code = usft_inject(t, lib, &res);
	if (code) {
		report(cmd, &res);
		return -code;
	}
	*loaded = true;
	until = ms_now() + 3000;
	do {
		fd = ctl_connect(t);
		if (fd >= 0) {
			usft_attach_step("connect");
			return fd;
		}
		usleep(1000);
	} while (ms_now() < until);
	if (usft_proc_gone(pid)) {
		fprintf(stderr, "usft %s: process %d exited during the attach\n", cmd, (int)pid);
		return -USFT_EXIT_GONE;
	}
	if (usft_target_execd(t)) {
		/* its socket went with the image that served it */
		fprintf(stderr, "usft %s: process %d called exec during the attach: try again\n",
			cmd, (int)pid);
		return -USFT_EXIT_GONE;
	}
	fprintf(stderr, "usft %s: process %d loaded the runtime but its control socket does "
		"not answer: %s\n", cmd, (int)pid, strerror(-fd));
	return -USFT_EXIT_FAIL;
}

/* for `usft mount` (inject/tracefs): the process's control socket, attaching first if need be */
int usft_ctl_attach(const char *cmd, pid_t pid, bool *loaded)
{
	struct usft_target t;

	return attach(cmd, pid, &t, loaded);
}

int usft_ctl_request(int fd, int op, const char *text, char **out)
{
	return ctl_request(fd, op, text, out);
}

int usft_ctl_request_until(int fd, int op, const char *text, char **out, bool (*stop)(void))
{
	return ctl_request_fd(fd, op, text, out, NULL, stop, -1);
}

int usft_ctl_connect(pid_t pid)
{
	struct usft_target t = { .pid = pid };
	char path[32];
	struct stat st;

	/* the socket directory is named for the process's own uid (its /proc entry's owner) */
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st))
		return -errno;
	t.uid = st.st_uid;
	t.start_time = usft_proc_start_time(pid);
	return ctl_connect(&t);
}

int usft_parse_pid(const char *cmd, const char *s, pid_t *pid)
{
	return parse_pid(cmd, s, pid);
}

static int connect_only(const char *cmd, pid_t pid, struct usft_target *t)
{
	struct inject_result res;
	int code = usft_target_check(pid, t, &res), fd;

	if (code) {
		report(cmd, &res);
		return -code;
	}
	fd = ctl_connect(t);
	if (fd == -EACCES || fd == -EPERM) {
		fprintf(stderr, "usft %s: the control socket of process %d refuses you: run usft "
			"as its user or as root\n", cmd, (int)pid);
		return -USFT_EXIT_PERM;
	}
	if (fd < 0) {
		fprintf(stderr, "usft %s: process %d has no usft control socket: attach first "
			"(usft attach %d)\n", cmd, (int)pid, (int)pid);
		return -USFT_EXIT_NOCTL;
	}
	return fd;
}

/* the runtime's threads are gone once nothing in the process is named usft-* */
static bool runtime_threads_gone(pid_t pid)
{
	char path[96], comm[32];
	struct dirent *d;
	bool gone = true;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return true;
	while (gone && (d = readdir(dir))) {
		ssize_t n;
		int fd;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, atoi(d->d_name));
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (n > 0 && !strncmp(comm, "usft-", 5))
			gone = false;
	}
	closedir(dir);
	return gone;
}

static int finish_detach(const char *cmd, int fd, pid_t pid, struct usft_target *t, bool quiet)
{
	struct inject_result res;
	char *out = NULL;
	long until;
	int r;

	r = ctl_request(fd, USFT_CTL_DETACH, NULL, &out);
	usft_attach_step("DETACH request");
	if (!r) {
		/* the server closes every connection after its reply, then
		 * removes the socket and ends: our end hangs up first */
		struct pollfd p = { fd, POLLIN, 0 };

		poll(&p, 1, 2000);
	}
	close(fd);
	if (r && usft_proc_gone(pid)) {
		free(out);
		return 0;	/* it exited: nothing left to detach from */
	}
	if (r == -EPIPE || r == -ECONNRESET) {
		/* the socket went with the image: the new one has no runtime */
		free(out);
		if (!quiet)
			fprintf(stderr, "usft: process %d called exec: nothing left to detach\n",
				(int)pid);
		return 0;
	}
	if (r) {
		fprintf(stderr, "usft %s: process %d refused the detach: %s\n", cmd, (int)pid,
			out && *out ? out : strerror(-r));
		free(out);
		return USFT_EXIT_FAIL;
	}
	free(out);
	usft_attach_step("connection closed");
	/* the server thread ends after removing the socket */
	until = ms_now() + 2000;
	while (ms_now() < until && !runtime_threads_gone(pid))
		usleep(200);
	usft_attach_step("runtime threads gone");
	if (!usft_proc_gone(pid) && usft_restore_sites(t, &res)) {
		report(cmd, &res);
		return res.code;
	}
	if (!quiet)
		fprintf(stderr, "usft: detached from process %d\n", (int)pid);
	return 0;
}

int usft_cmd_attach(int argc, char **argv)
{
	struct usft_target t;
	const char *pid_arg = NULL, *mount_dir = NULL;
	char *out = NULL;
	bool loaded;
	pid_t pid;
	int fd, r;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usft_usage(stdout, "attach");
		return 0;
	}
	/* PID and --mount DIR (or --mount=DIR), in either order */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mount") && i + 1 < argc)
			mount_dir = argv[++i];
		else if (!strncmp(argv[i], "--mount=", 8))
			mount_dir = argv[i] + 8;
		else if (argv[i][0] == '-' && argv[i][1])
			return usft_usage_error("attach", "unknown option '%s' (--mount DIR)", argv[i]);
		else if (pid_arg)
			return usft_usage_error("attach", "one process id expected");
		else
			pid_arg = argv[i];
	}
	if (!pid_arg)
		return usft_usage_error("attach", "one process id expected");
	r = parse_pid("attach", pid_arg, &pid);
	if (r)
		return r;
	if (mount_dir && (r = usft_tracefs_dir_ok("attach", mount_dir)))
		return r;
	fd = attach("attach", pid, &t, &loaded);
	if (fd < 0)
		return -fd;
	r = ctl_request(fd, USFT_CTL_HELLO, NULL, &out);
	if (r) {
		close(fd);
		fprintf(stderr, "usft attach: process %d: %s\n", (int)pid, out ? out : strerror(-r));
		free(out);
		return USFT_EXIT_FAIL;
	}
	printf("%s", out ? out : "");
	fprintf(stderr, "usft: %s process %d (%lu patchable sites); detach with: usft detach %d\n",
		loaded ? "attached to" : "joined the runtime of", (int)pid, t.nr_sites, (int)pid);
	free(out);
	if (!mount_dir) {
		close(fd);
		return 0;
	}
	/* the mount's server is a daemon: it stays until unmounted, the detach or PID's exit */
	if (fflush(stdout) || fflush(stderr))
		return USFT_EXIT_FAIL;
	r = usft_mount_tracefs(fd, pid, mount_dir, false, -1);
	if (r)
		fprintf(stderr, "usft attach: process %d stays attached without a tracefs (usft mount "
			"%d DIR to try again; usft detach %d)\n", (int)pid, (int)pid, (int)pid);
	return r;
}

int usft_cmd_detach(int argc, char **argv)
{
	struct usft_target t;
	pid_t pid;
	int fd, r;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usft_usage(stdout, "detach");
		return 0;
	}
	if (argc != 2)
		return usft_usage_error("detach", "one process id expected");
	r = parse_pid("detach", argv[1], &pid);
	if (r)
		return r;
	usft_attach_step("start");
	fd = connect_only("detach", pid, &t);
	if (fd < 0)
		return -fd;
	usft_attach_step("probe, connect");
	return finish_detach("detach", fd, pid, &t, false);
}

int usft_stat_pid(const char *arg)
{
	struct usft_target t;
	char *out = NULL;
	pid_t pid;
	int fd, r;

	r = parse_pid("stat", arg, &pid);
	if (r)
		return r;
	fd = connect_only("stat", pid, &t);
	if (fd < 0)
		return -fd;
	r = ctl_request(fd, USFT_CTL_READ, "stat", &out);
	close(fd);
	if (r) {
		fprintf(stderr, "usft stat: process %d: %s\n", (int)pid, out ? out : strerror(-r));
		free(out);
		return USFT_EXIT_FAIL;
	}
	fputs(out ? out : "", stdout);
	free(out);
	return fflush(stdout) ? USFT_EXIT_FAIL : 0;
}

/* ---- record -P ------------------------------------------------------------- */

static volatile sig_atomic_t record_stop;

static void on_signal(int sig)
{
	(void)sig;
	record_stop = 1;
}

/*
 * The children the process forks while recorded (docs/attach.md): each
 * sends its rings' memfd and a pidfd of itself on @sock, the socket START
 * carried (USFT_CTL_CHILD), so that one that dies loses nothing either.
 */
struct kid {
	pid_t pid;
	int pidfd, ring_fd;
	unsigned long long start;	/* /proc/PID/stat starttime, 0: unknown */
};

struct kids {
	int sock;			/* ours; -1: none */
	struct kid *v;
	size_t n, cap;
	unsigned long refused;		/* packets that did not parse, or no room */
};

#define KIDS_MAX	65536

static void kid_close(struct kid *k)
{
	if (k->pidfd >= 0)
		close(k->pidfd);
	if (k->ring_fd >= 0)
		close(k->ring_fd);
	k->pidfd = k->ring_fd = -1;
}

/* one packet of @k->sock; Return: false when none is there */
static bool kids_read_one(struct kids *k)
{
	struct usft_ctl_hdr h;
	char text[64], *end;
	union usft_ctl_cmsg u;
	struct iovec iov[2] = { { &h, sizeof(h) }, { text, sizeof(text) - 1 } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
	struct kid kid = { .pid = 0, .pidfd = -1, .ring_fd = -1 };
	int fds[2], nfd;
	ssize_t n;
	long pid;

	usft_ctl_fd_room(&m, &u);
	n = recvmsg(k->sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && errno == EINTR)
		return true;
	if (n <= 0)
		return false;
	/* the ring's memory file, then the child's pidfd; anything more closed */
	nfd = usft_ctl_take_fds(&m, fds, 2);
	text[n > (ssize_t)sizeof(h) ? (size_t)n - sizeof(h) : 0] = 0;
	kid.ring_fd = nfd > 0 ? fds[0] : -1;
	kid.pidfd = nfd > 1 ? fds[1] : -1;
	if (n < (ssize_t)sizeof(h) || h.magic != USFT_CTL_MAGIC || h.op != USFT_CTL_CHILD ||
	    h.len != (size_t)n - sizeof(h) || strncmp(text, "pid=", 4) ||
	    (pid = strtol(text + 4, &end, 10)) <= 0 || *end != '\n' || kid.ring_fd < 0 ||
	    (k->n == k->cap && k->cap >= KIDS_MAX)) {
		k->refused++;
		kid_close(&kid);
		return true;
	}
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 16;
		struct kid *v = realloc(k->v, cap * sizeof(*v));

		if (!v) {
			k->refused++;
			kid_close(&kid);
			return true;
		}
		k->v = v;
		k->cap = cap;
	}
	kid.pid = (pid_t)pid;
	/* its start time while it runs (the pidfd says whether it still does) */
	if (kid.pidfd >= 0) {
		struct pollfd p = { kid.pidfd, POLLIN, 0 };

		if (poll(&p, 1, 0) == 0)
			kid.start = usft_proc_start_time(kid.pid);
	}
	k->v[k->n++] = kid;
	return true;
}

static void kids_read(struct kids *k)
{
	while (k->sock >= 0 && kids_read_one(k))
		;
}

/*
 * @c is gone (every thread): its exit status noted and, if its rings say
 * it never finished its trace, what they still held appended, as for the
 * process itself (record_dead()); its descriptors closed.  The salvage
 * may run while other processes append: it never cuts the file.
 */
static void kid_gone(struct kid *c, const struct usft_out *out)
{
	int status;

	if (!out->direct) {
		if (usft_proc_exit_status(c->pid, c->pidfd, c->start, &status))
			usft_exit_note(c->pid, status);
		if (usft_rings_fd_live(c->ring_fd))
			usft_rings_salvage_fd(c->ring_fd, usft_out_write_path(out));
	}
	kid_close(c);
}

/*
 * The children gone by now, after a wait of up to @ms for them all, are
 * done with (kid_gone()) and leave the list; Return: how many still run.
 * While recording, this keeps the recorder's descriptors to what runs: a
 * program that forks thousands of children would run it out of them.
 */
static size_t kids_reap(struct kids *k, const struct usft_out *out, int ms)
{
	struct pollfd *pf;
	size_t j = 0;

	kids_read(k);
	if (!k->n)
		return 0;
	pf = calloc(k->n, sizeof(*pf));
	if (!pf)
		return k->n;
	for (size_t i = 0; i < k->n; i++)
		pf[i] = (struct pollfd){ k->v[i].pidfd, POLLIN, 0 };
	if (poll(pf, (nfds_t)k->n, 0) < (int)k->n && ms > 0)
		poll(pf, (nfds_t)k->n, ms);
	for (size_t i = 0; i < k->n; i++) {
		struct kid *c = &k->v[i];
		bool gone = c->pidfd >= 0 ? (pf[i].revents & POLLIN) : usft_proc_gone(c->pid);

		if (gone)
			kid_gone(c, out);
		else
			k->v[j++] = *c;
	}
	free(pf);
	k->n = j;
	return j;
}

/*
 * The recording is over: the children gone get kid_gone() (after one wait
 * of 100 ms for them all: a child that was dying as the recording ended);
 * those still running go on recording on their own (their sessions are
 * theirs) and are counted in the summary.
 */
static void kids_end(struct kids *k, const struct usft_out *out, bool quiet)
{
	size_t running = kids_reap(k, out, 100);

	for (size_t i = 0; i < k->n; i++)
		kid_close(&k->v[i]);
	if (running && !quiet)
		fprintf(stderr, "usft: %zu process%s forked while recorded still run%s, each "
			"recording on its own into the trace until it exits (not crash-safe from "
			"now on)\n", running, running == 1 ? "" : "es", running == 1 ? "s" : "");
	if (k->refused && !quiet)
		fprintf(stderr, "usft: warning: %lu packet%s on the children's socket did not "
			"parse or found no room: those children's last events are lost if they "
			"were killed\n", k->refused, k->refused == 1 ? "" : "s");
	free(k->v);
	k->v = NULL;
	k->n = k->cap = 0;
	if (k->sock >= 0)
		close(k->sock);
	k->sock = -1;
}

/*
 * The process is gone (killed, crashed, exited): what its rings still held
 * (the writer thread's last period, the kept-back function_graph entry) and
 * how it ended go into the trace (docs/attach.md, "Crash-safe recording").
 * The rings are the memfd the process sent at START (-1: none).
 */
static void record_dead(const struct usft_out *out, const struct usft_target *t, int pidfd,
			int ring_fd)
{
	int status;

	if (out->direct)
		return;
	/* first: it waits until no thread of it runs any more */
	if (usft_proc_exit_status(t->pid, pidfd, t->start_time, &status))
		usft_exit_note(t->pid, status);
	usft_rings_salvage_fd(ring_fd, usft_out_write_path(out));
}

/*
 * The control connection closed without a STOP: the process ended (every
 * thread gone: its pidfd polls readable) or called exec.  Its descriptors
 * close before it is a zombie, so this waits: up to 10 s while its rings
 * say it never finished its trace (it is dying: a core dump may take a
 * while), 1 s when it finished it (an exit, or an exec).
 */
static bool record_ended(pid_t pid, int pidfd, int ring_fd)
{
	int ms = usft_rings_fd_live(ring_fd) ? 10000 : 1000;
	struct pollfd p = { pidfd, POLLIN, 0 };

	if (pidfd >= 0)
		return poll(&p, 1, ms) > 0;
	for (int i = 0; i < ms / 5 && !usft_proc_gone(pid); i++)
		usleep(5000);
	return usft_proc_gone(pid);
}

/*
 * Something to read on the connection while recording, no hang-up: the
 * runtime's word that a finish trigger ended the recording (USFT_CTL_ENDED).
 * Return: 1 it is, 0 anything else (dropped), -1 the connection closed.
 */
static int ctl_ended(int fd)
{
	struct usft_ctl_hdr h;
	ssize_t n = recv(fd, &h, sizeof(h), MSG_DONTWAIT | MSG_TRUNC);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return -1;
	return n >= (ssize_t)sizeof(h) && h.magic == USFT_CTL_MAGIC && h.op == USFT_CTL_ENDED;
}

/*
 * The children's rings, every exit status noted, the file renamed into
 * place, the summary; Return: @rc or a failure
 */
static int finish_record(struct usft_out *out, const struct usft_target *t, bool quiet, int rc,
			 struct kids *kids)
{
	bool empty;

	kids_end(kids, out, quiet);
	if (!out->direct)
		usft_exits_write(usft_out_write_path(out));

	if (usft_out_commit(out, false, &empty))
		return USFT_EXIT_RECORD_FAIL;
	if (!quiet)
		usft_record_summary(out, t->exe, t->exe, empty, false);
	return rc;
}

/*
 * -N, -A, -R, --funcgraph-retval, -T and --signal: one WRITE each, empty
 * when not given (the runtime keeps what an earlier session wrote); the
 * runtime checks the syntax (docs/attach.md).  A runtime that predates
 * them answers "no file": fine for an empty one.  Return: 0 or -errno, *@why.
 */
static int write_extras(int fd, const struct usft_record_args *a, char **why)
{
	const struct {
		const char *name, *value;
	} w[] = {
		{ "set_graph_notrace", a->graph_notrace },
		{ "argument", a->args },
		{ "retval", a->retval },
		{ "options/funcgraph-retval", a->funcgraph_retval ? "1" : "0" },
		{ "triggers", a->triggers },
		{ "signal_triggers", a->signals },
	};
	int r = 0;

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]) && !r; i++) {
		bool given = w[i].value && *w[i].value && strcmp(w[i].value, "0");

		free(*why);
		*why = NULL;
		r = ctl_write(fd, w[i].name, w[i].value ? w[i].value : "", why);
		if (r == -ENOENT && !given)
			r = 0;
	}
	return r;
}

/* two descriptors per child forked while recorded (kids_read()): the hard limit */
static void more_descriptors(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int usft_record_pid(const char *arg, const struct usft_record_args *a)
{
	struct usft_target t;
	struct sigaction sa = { .sa_handler = on_signal };
	char num[32], *why = NULL;
	const char *step = NULL;
	struct usft_out out;
	bool loaded;
	long end_ms;
	pid_t pid, mnt = -1;
	int fd, r = 0, pidfd, ring_fd = -1;
	struct kids kids = { .sock = -1 };
	int kids_poll;

	r = parse_pid("record", arg, &pid);
	if (r)
		return r;
	more_descriptors();
	fd = attach("record", pid, &t, &loaded);
	if (fd < 0)
		return -fd;
	/* how it ends, if it dies while recorded (procexit.c) */
	pidfd = usft_pidfd_open(pid);
	/* a private temporary file the process appends to; FILE only once
	 * something was recorded */
	if (usft_out_prepare(a->output, a->follow_symlink, &out)) {
		r = USFT_EXIT_RECORD_FAIL;
		goto out_detach;
	}
	usft_attach_step("output prepared");
	if (!out.direct && geteuid() == 0 && t.uid != 0 &&
	    chown(usft_out_write_path(&out), t.uid, (gid_t)-1)) {
		fprintf(stderr, "usft record: %s: %s\n", usft_out_write_path(&out), strerror(errno));
		usft_out_abort(&out);
		r = USFT_EXIT_RECORD_FAIL;
		goto out_detach;
	}
	snprintf(num, sizeof(num), "%lld", a->depth);
	if ((r = ctl_write(fd, "current_tracer", a->tracer, &why)) ||
	    (free(why), r = ctl_write(fd, "set_ftrace_filter", a->filter, &why)) ||
	    (free(why), r = ctl_write(fd, "set_ftrace_notrace", a->notrace_list, &why)) ||
	    (free(why), r = ctl_write(fd, "set_graph_function", a->graph, &why)) ||
	    (free(why), r = ctl_write(fd, "max_graph_depth", num, &why)) ||
	    (free(why), r = ctl_write(fd, "trace_clock", a->clock ? a->clock : "", &why)) ||
	    (free(why), r = ctl_write(fd, "output", usft_out_write_path(&out), &why))) {
		step = "configure";
	} else if (a->bufkb) {
		snprintf(num, sizeof(num), "%lld", a->bufkb);
		free(why);
		r = ctl_write(fd, "buffer_size_kb", num, &why);
		if (r)
			step = "configure";
	}
	if (!step && (r = write_extras(fd, a, &why)))
		step = "configure";
	usft_attach_step("configured (WRITEs)");
	if (!step) {
		free(why);
		int sv[2] = { -1, -1 };

		/*
		 * The reply carries the rings' memfd: crash-safe (control.c).
		 * The request carries a socket for the rings of the children it
		 * forks (kids_read()); a runtime that predates it drops it.
		 */
		if (!socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
			kids.sock = sv[0];
		r = ctl_request_fd(fd, USFT_CTL_START, "detach_on_close", &why, &ring_fd, NULL,
				   sv[1]);
		if (sv[1] >= 0)
			close(sv[1]);
		usft_attach_step("START request");
		if (r)
			step = "start";
	}
	if (step && (r == -EPIPE || r == -ECONNRESET)) {
		/* the socket went with the image: it exec'd or exited */
		fprintf(stderr, "usft record: process %d %s during the attach: nothing was recorded; "
			"try again\n", (int)pid, usft_proc_gone(pid) ? "exited" : "called exec");
		free(why);
		usft_out_abort(&out);
		close(fd);
		if (pidfd >= 0)
			close(pidfd);
		return USFT_EXIT_GONE;
	}
	if (step) {
		fprintf(stderr, "usft record: process %d: %s\n", (int)pid,
			why && *why ? why : strerror(-r));
		free(why);
		r = r == -ENOENT ? USFT_EXIT_NOSITES : r == -EBUSY ? USFT_EXIT_FAIL
									: USFT_EXIT_RECORD_FAIL;
		usft_out_abort(&out);
		goto out_detach;
	}
	free(why);
	if (!a->quiet)
		fprintf(stderr, "usft: recording process %d (%s)%s; ^C to stop\n", (int)pid, a->tracer,
			loaded ? "" : ", joined its runtime");
	if (ring_fd < 0 && !a->quiet)
		fprintf(stderr, "usft: warning: process %d keeps its ring buffers private (its "
			"runtime predates crash-safe attach, or its rings were made by a `usft record "
			"--rings private`): what it wrote last is lost if it is killed\n", (int)pid);
	if (a->mount)
		mnt = usft_tracefs_automount("record", pid, a->mount, 3000, a->quiet);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	end_ms = a->duration > 0 ? ms_now() + (long)(a->duration * 1000) : 0;
	kids_poll = kids.sock;
	while (!record_stop && (!end_ms || ms_now() < end_ms)) {
		struct pollfd p = { fd, POLLIN, 0 }, pk[2] = { { fd, POLLIN, 0 },
							      { kids_poll, POLLIN, 0 } };

		if (poll(pk, 2, 50) > 0 && pk[1].revents) {
			kids_read(&kids);
			/* no sender left (a runtime that dropped it): nothing more comes */
			if (pk[1].revents & (POLLHUP | POLLERR))
				kids_poll = -1;
		}
		if (kids.n)
			kids_reap(&kids, &out, 0);
		p.revents = pk[0].revents;
		if (p.revents && !(p.revents & (POLLHUP | POLLERR)) && (p.revents & POLLIN)) {
			int e = ctl_ended(fd);

			if (e > 0)
				break;	/* a finish: STOP answers "not recording", then detach */
			if (!e)
				continue;
		}
		if (p.revents & (POLLHUP | POLLERR | POLLIN)) {
			/* the process is gone (its exit finished the file), or it
			 * called exec: the new image is not traced */
			close(fd);
			usft_tracefs_autounmount(mnt);
			if (record_ended(pid, pidfd, ring_fd))
				record_dead(&out, &t, pidfd, ring_fd);
			else if (!a->quiet)
				fprintf(stderr, "usft: process %d called exec: the recording ended with "
					"its old image (attach again to trace the new one)\n", (int)pid);
			r = finish_record(&out, &t, a->quiet, 0, &kids);
			goto out_close;
		}
	}
	usft_attach_step("recording (--duration)");
	usft_tracefs_autounmount(mnt);
	r = ctl_request(fd, USFT_CTL_STOP, NULL, &why);
	usft_attach_step("STOP request");
	if (r == -EINVAL && !a->quiet)
		fprintf(stderr, "usft: process %d: the recording had ended there (a finish trigger)\n",
			(int)pid);
	else if (r && r != -EPIPE)
		fprintf(stderr, "usft record: process %d: stop: %s\n", (int)pid,
			why && *why ? why : strerror(-r));
	free(why);
	r = finish_detach("record", fd, pid, &t, a->quiet);
	if (usft_proc_gone(pid) && record_ended(pid, pidfd, ring_fd))
		record_dead(&out, &t, pidfd, ring_fd);	/* it died during the stop */
	r = finish_record(&out, &t, a->quiet, r, &kids);
	usft_attach_step("file committed");
	goto out_close;
out_detach:
	finish_detach("record", fd, pid, &t, true);
out_close:
	free(kids.v);
	if (kids.sock >= 0)
		close(kids.sock);
	if (ring_fd >= 0)
		close(ring_fd);
	if (pidfd >= 0)
		close(pidfd);
	return r;
}
