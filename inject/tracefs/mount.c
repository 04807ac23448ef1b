// SPDX-License-Identifier: MIT
/*
 * inject/tracefs/mount.c - `usft mount PID DIR`: the kernel's tracefs for
 * one traced process, a FUSE filesystem (libfuse3) in front of the
 * process's control channel (runtime/tracers/control.h; the files are
 * runtime/tracers/trace_array.c's).  docs/tracefs.md describes every file.
 *
 * This server keeps no tracing state: each open/read/write/release becomes
 * a control request, so two shells writing filters are two streams of
 * requests the process's control thread runs one at a time, each write one
 * transaction there.  What is kept per open file is the kernel's per-open
 * state: the text read so far (a seq_file), whether the next write replaces
 * (O_TRUNC) or adds, and the unfinished last word of a list write (the
 * kernel's trace_parser), sent with the next write or at close.
 *
 * Mounted with fsname "tracefs" (ftracetest looks for that word in
 * /proc/mounts) and auto_unmount: when this server dies, even by SIGKILL,
 * fusermount3 unmounts.  When the process exits (pidfd), every file answers
 * ENODEV and the filesystem is unmounted.
 */
#define FUSE_USE_VERSION 35
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "control.h"

/* ---- the files ------------------------------------------------------------ */

enum {
	F_TOP = 1,	/* only in the top level */
	F_LIST = 2,	/* a word list: the last word of a write may continue in the next */
	F_PIPE = 4,	/* trace_pipe: consuming, blocking, pollable */
	F_TRUNC = 8,	/* O_TRUNC clears it at open (trace, snapshot) */
};

struct tfile {
	const char *name;
	mode_t mode;
	unsigned int flags;
};

/* the kernel's modes (TRACE_MODE_READ 0444, TRACE_MODE_WRITE 0640) */
static const struct tfile files[] = {
	{ "README", 0444, F_TOP },
	{ "available_tracers", 0444, 0 },
	{ "current_tracer", 0644, 0 },
	{ "tracing_on", 0644, 0 },
	{ "trace", 0644, F_TRUNC },
	{ "trace_pipe", 0440, F_PIPE },
	{ "trace_marker", 0220, 0 },
	{ "trace_options", 0644, 0 },
	{ "trace_clock", 0644, 0 },
	{ "tracing_cpumask", 0644, 0 },
	{ "buffer_size_kb", 0644, 0 },
	{ "buffer_total_size_kb", 0444, 0 },
	{ "available_filter_functions", 0444, F_TOP },
	{ "available_filter_functions_addrs", 0444, F_TOP },
	{ "enabled_functions", 0444, F_TOP },
	{ "touched_functions", 0444, F_TOP },
	{ "set_ftrace_filter", 0644, F_LIST },
	{ "set_ftrace_notrace", 0644, F_LIST },
	{ "set_ftrace_pid", 0644, F_LIST },
	{ "set_ftrace_notrace_pid", 0644, F_LIST },
	{ "set_graph_function", 0644, F_TOP | F_LIST },
	{ "set_graph_notrace", 0644, F_TOP | F_LIST },
	{ "max_graph_depth", 0644, F_TOP },
	{ "function_profile_enabled", 0644, F_TOP },
	{ "stack_trace", 0444, F_TOP },
	{ "stack_max_size", 0644, F_TOP },
	{ "stack_trace_filter", 0644, F_TOP | F_LIST },
	{ "stack_tracer_enabled", 0644, F_TOP },	/* the kernel's sysctl */
	{ "snapshot", 0644, F_TRUNC },
	{ "error_log", 0644, 0 },
	{ "set_event", 0644, F_LIST },
	{ "set_event_pid", 0644, F_LIST },
	{ "available_events", 0444, 0 },
};
#define NR_FILES (sizeof(files) / sizeof(files[0]))

/* options/NAME: the runtime's trace_options list names them */
static const char *const dirs_top[] = { "options", "events", "instances", "trace_stat" };

static struct {
	int fd;				/* control connection */
	pthread_mutex_t lock;		/* one request at a time on it */
	pid_t pid;
	volatile int dead;		/* the process is gone: ENODEV */
	struct fuse *fuse;
	time_t t0;
	uid_t uid;
	gid_t gid;
	pthread_mutex_t poll_lock;
	struct fuse_pollhandle *polls[64];
	char poll_path[64][PATH_MAX];
	bool unmounted;
	/*
	 * Text a trace_pipe reader closed without taking (it was consumed in
	 * the process for that reader's read): the next read of the same
	 * trace_pipe gets it first, so a close loses nothing.
	 */
	pthread_mutex_t left_lock;
	struct left {
		struct left *next;
		char path[PATH_MAX];	/* the trace_pipe file */
		char *text;
		size_t len;
	} *left;
} M = {
	.fd = -1,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.poll_lock = PTHREAD_MUTEX_INITIALIZER,
	.left_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* one request; Return: status (ENODEV once the process is gone) */
static int req(int op, const char *text, char **out)
{
	int r;

	*out = NULL;
	if (M.dead)
		return -ENODEV;
	pthread_mutex_lock(&M.lock);
	r = usft_ctl_request(M.fd, op, text, out);
	pthread_mutex_unlock(&M.lock);
	if (r == -EPIPE || r == -EPROTO || r == -ETIMEDOUT || r == -ECONNRESET) {
		M.dead = 1;
		free(*out);
		*out = NULL;
		return -ENODEV;
	}
	return r;
}

/* "tracefs/" + path, for a request text */
static char *tpath(const char *path, const char *extra, size_t elen)
{
	size_t pl = strlen(path);
	char *t = malloc(8 + pl + 1 + elen + 1);

	if (!t)
		return NULL;
	memcpy(t, "tracefs/", 8);
	memcpy(t + 8, path + 1, pl);	/* without the leading '/' */
	if (extra) {
		size_t n = 8 + pl - 1;

		t[n] = '\n';
		memcpy(t + n + 1, extra, elen);
		t[n + 1 + elen] = 0;
	}
	return t;
}

static int read_text(const char *path, char **out)
{
	char *t = tpath(path, NULL, 0);
	int r;

	if (!t)
		return -ENOMEM;
	r = req(USFT_CTL_READ, t, out);
	free(t);
	return r;
}

/* is @name a line of the text file @path (instances, trace_options) */
static bool listed(const char *path, const char *name, size_t nlen, bool strip_no)
{
	char *out = NULL;
	bool found = false;

	if (read_text(path, &out) || !out) {
		free(out);
		return false;
	}
	for (char *save = NULL, *l = strtok_r(out, "\n", &save); l && !found;
	     l = strtok_r(NULL, "\n", &save)) {
		if (strip_no && !strncmp(l, "no", 2))
			l += 2;
		found = strlen(l) == nlen && !memcmp(l, name, nlen);
	}
	free(out);
	return found;
}

/*
 * events/ below @base: the runtime's "events" text lists "system/event",
 * one a line.  @rest ("events/...") names: 1 a directory, 2 a file (*@mode
 * its mode), 0 nothing.  For readdir, @fill gets the entries of a directory.
 */
static int events_lookup(const char *base, const char *rest, mode_t *mode,
			 void (*fill)(void *arg, const char *name), void *arg)
{
	static const char *const sys_files[] = { "enable", "filter" };
	static const char *const ev_files[] = { "enable", "filter", "format", "id", "trigger" };
	char lp[PATH_MAX], *out = NULL, last[128] = "";
	const char *p = rest[6] ? rest + 7 : rest + 6, *sl = strchr(p, '/');
	size_t syslen = sl ? (size_t)(sl - p) : strlen(p);
	int k = 0;

	if (!strcmp(p, "enable") && !fill) {
		*mode = 0644;
		return 2;	/* events/enable, there even with no events */
	}
	snprintf(lp, sizeof(lp), "%sevents", base);
	if (read_text(lp, &out)) {
		free(out);
		return 0;
	}
	if (!out && !(out = strdup("")))
		return 0;
	if (!*p) {	/* events/ itself: enable + the systems */
		if (fill) {
			fill(arg, "enable");
			for (char *s = NULL, *l = strtok_r(out, "\n", &s); l; l = strtok_r(NULL, "\n", &s)) {
				char *e = strchr(l, '/');

				if (e && (size_t)(e - l) < sizeof(last) &&
				    (strlen(last) != (size_t)(e - l) || memcmp(last, l, (size_t)(e - l)))) {
					snprintf(last, sizeof(last), "%.*s", (int)(e - l), l);
					fill(arg, last);
				}
			}
		}
		free(out);
		return 1;
	}
	for (char *s = NULL, *l = strtok_r(out, "\n", &s); l && !k; l = strtok_r(NULL, "\n", &s)) {
		char *e = strchr(l, '/');
		const char *q, *ev;
		size_t evlen;

		if (!e || (size_t)(e - l) != syslen || memcmp(l, p, syslen))
			continue;
		if (!sl) {	/* events/SYS */
			if (fill) {
				for (size_t i = 0; i < 2; i++)
					fill(arg, sys_files[i]);
				fill(arg, e + 1);
				for (char *l2; (l2 = strtok_r(NULL, "\n", &s));) {
					char *e2 = strchr(l2, '/');

					if (e2 && (size_t)(e2 - l2) == syslen && !memcmp(l2, p, syslen))
						fill(arg, e2 + 1);
				}
			}
			k = 1;
			break;
		}
		q = sl + 1;
		ev = strchr(q, '/');
		evlen = ev ? (size_t)(ev - q) : strlen(q);
		for (size_t i = 0; i < 2 && !ev; i++)
			if (!strcmp(q, sys_files[i])) {
				*mode = 0644;
				k = 2;
			}
		if (k || strlen(e + 1) != evlen || memcmp(e + 1, q, evlen))
			continue;
		if (!ev) {	/* events/SYS/EV */
			for (size_t i = 0; fill && i < 5; i++)
				fill(arg, ev_files[i]);
			k = 1;
			break;
		}
		for (size_t i = 0; i < 5; i++)
			if (!strcmp(ev + 1, ev_files[i])) {
				*mode = i == 2 || i == 3 ? 0444 : 0644;
				k = 2;
			}
		break;
	}
	free(out);
	return k;
}

/*
 * What @path names: 1 a directory, 2 a file (*@tf set, NULL for options/X
 * and events/...), 0 nothing.
 */
struct where {
	bool top;		/* in the top level, not an instance */
	char base[96];		/* "/" or "/instances/NAME/" (names are < 64 bytes) */
	const char *rest;	/* path inside it */
	mode_t mode;		/* of an events/ file */
};

static int lookup(const char *path, const struct tfile **tf, struct where *w)
{
	const char *p = path + 1;

	*tf = NULL;
	w->top = true;
	w->mode = 0;
	snprintf(w->base, sizeof(w->base), "/");
	if (!strncmp(p, "instances", 9) && (p[9] == '/' || !p[9])) {
		const char *n = p + 10, *sl;
		size_t nl;

		if (!p[9] || !*n) {
			w->rest = "instances";
			return 1;
		}
		sl = strchr(n, '/');
		nl = sl ? (size_t)(sl - n) : strlen(n);
		if (nl > 63 || !listed("/instances", n, nl, false))
			return 0;
		w->top = false;
		snprintf(w->base, sizeof(w->base), "/instances/%.*s/", (int)nl, n);
		p = sl ? sl + 1 : n + nl;
	}
	w->rest = p;
	if (!*p)
		return 1;
	if (!strcmp(p, "options") || !strcmp(p, "events") || (w->top && !strcmp(p, "trace_stat")))
		return 1;
	if (w->top && !strncmp(p, "trace_stat/", 11))
		return strchr(p + 11, '/') || !listed("/trace_stat", p + 11, strlen(p + 11), false) ?
		       0 : 2;
	if (!strncmp(p, "options/", 8)) {
		char lp[PATH_MAX];

		snprintf(lp, sizeof(lp), "%strace_options", w->base);
		return strchr(p + 8, '/') || !listed(lp, p + 8, strlen(p + 8), true) ? 0 : 2;
	}
	if (!strncmp(p, "events/", 7)) {
		w->mode = 0644;
		return events_lookup(w->base, p, &w->mode, NULL, NULL);
	}
	for (size_t i = 0; i < NR_FILES; i++)
		if (!strcmp(p, files[i].name)) {
			if ((files[i].flags & F_TOP) && !w->top)
				return 0;
			*tf = &files[i];
			return 2;
		}
	return 0;
}

/* ---- operations ------------------------------------------------------------ */

/* the signal libfuse sends a request's thread on FUSE_INTERRUPT (its default) */
#define USFT_FUSE_INTR_SIGNAL SIGUSR1

static void on_intr(int sig)
{
	(void)sig;	/* only ends a sleep: the interrupted request returns -EINTR */
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->direct_io = 1;		/* sizes are 0, as in the kernel's tracefs */
	cfg->entry_timeout = 0;
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->intr = 1;			/* ^C ends a blocking trace_pipe read */
	cfg->intr_signal = USFT_FUSE_INTR_SIGNAL;	/* handled: on_intr() */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;	/* O_TRUNC reaches open() */
	/*
	 * libfuse asks the kernel for max_write / page size pages per request,
	 * reads too: 1 MiB lets a trace_pipe read take 1 MiB in one round trip
	 * (at 64 KiB the pipe could not keep up with one thread calling in a
	 * loop).  fs_write() cuts writes to what a control request carries.
	 */
	conn->max_write = 1 << 20;
	return NULL;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	const struct tfile *tf;
	struct where w;
	int k;

	(void)fi;
	if (M.dead)
		return -ENODEV;
	memset(st, 0, sizeof(*st));
	st->st_uid = M.uid;
	st->st_gid = M.gid;
	st->st_atime = st->st_mtime = st->st_ctime = M.t0;
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	k = lookup(path, &tf, &w);
	if (M.dead)
		return -ENODEV;
	if (!k)
		return -ENOENT;
	if (k == 1) {
		st->st_mode = S_IFDIR | (!strcmp(path, "/instances") ? 0750 : 0755);
		st->st_nlink = 2;
		return 0;
	}
	st->st_mode = S_IFREG | (tf ? tf->mode : w.mode ? w.mode : 0644);
	st->st_nlink = 1;
	if (tf && (tf->flags & F_PIPE))
		st->st_blksize = 1 << 20;	/* cat reads this much at a time: one request */
	return 0;
}

struct dir_fill {
	void *buf;
	fuse_fill_dir_t fill;
};

static void dir_fill_one(void *arg, const char *name)
{
	struct dir_fill *df = arg;

	df->fill(df->buf, name, NULL, 0, 0);
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags fl)
{
	const struct tfile *tf;
	struct where w;
	char *out = NULL, lp[PATH_MAX];
	int k = strcmp(path, "/") ? lookup(path, &tf, &w) : 1;

	(void)off;
	(void)fi;
	(void)fl;
	if (M.dead)
		return -ENODEV;
	if (k != 1)
		return k ? -ENOTDIR : -ENOENT;
	if (!strcmp(path, "/"))
		w.top = true, w.rest = "", snprintf(w.base, sizeof(w.base), "/");
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	if (!strcmp(path, "/instances")) {
		if (!read_text("/instances", &out) && out)
			for (char *s = NULL, *l = strtok_r(out, "\n", &s); l; l = strtok_r(NULL, "\n", &s))
				fill(buf, l, NULL, 0, 0);
		free(out);
		return 0;
	}
	if (!*w.rest) {
		for (size_t i = 0; i < NR_FILES; i++)
			if (w.top || !(files[i].flags & F_TOP))
				fill(buf, files[i].name, NULL, 0, 0);
		for (size_t i = 0; i < sizeof(dirs_top) / sizeof(dirs_top[0]); i++)
			if (w.top || (strcmp(dirs_top[i], "instances") && strcmp(dirs_top[i], "trace_stat")))
				fill(buf, dirs_top[i], NULL, 0, 0);
		return 0;
	}
	if (!strcmp(w.rest, "trace_stat")) {
		if (!read_text("/trace_stat", &out) && out)
			for (char *s = NULL, *l = strtok_r(out, "\n", &s); l; l = strtok_r(NULL, "\n", &s))
				fill(buf, l, NULL, 0, 0);
		free(out);
		return 0;
	}
	if (!strcmp(w.rest, "events") || !strncmp(w.rest, "events/", 7)) {
		struct dir_fill df = { buf, fill };

		events_lookup(w.base, w.rest, &w.mode, dir_fill_one, &df);
		return 0;
	}
	if (!strcmp(w.rest, "options")) {
		snprintf(lp, sizeof(lp), "%strace_options", w.base);
		if (!read_text(lp, &out) && out)
			for (char *s = NULL, *l = strtok_r(out, "\n", &s); l; l = strtok_r(NULL, "\n", &s))
				fill(buf, strncmp(l, "no", 2) ? l : l + 2, NULL, 0, 0);
		free(out);
		return 0;
	}
	return 0;
}

/* keep @len bytes of @text, not read, for the next reader of @path (after what is kept) */
static void left_put(const char *path, const char *text, size_t len)
{
	struct left *l, **pp;
	char *t;

	pthread_mutex_lock(&M.left_lock);
	for (pp = &M.left; (l = *pp) && strcmp(l->path, path); pp = &l->next)
		;
	if (!l && (l = calloc(1, sizeof(*l)))) {
		snprintf(l->path, sizeof(l->path), "%s", path);
		*pp = l;
	}
	t = l ? realloc(l->text, l->len + len + 1) : NULL;
	if (t) {
		memcpy(t + l->len, text, len);
		l->len += len;
		t[l->len] = 0;
		l->text = t;
	}
	pthread_mutex_unlock(&M.left_lock);
}

/* what a closed reader left for @path (taken: the caller frees it), or NULL */
static char *left_take(const char *path, size_t *len)
{
	struct left *l, **pp;
	char *t = NULL;

	pthread_mutex_lock(&M.left_lock);
	for (pp = &M.left; (l = *pp); pp = &l->next)
		if (!strcmp(l->path, path)) {
			*pp = l->next;
			t = l->text;
			*len = l->len;
			free(l);
			break;
		}
	pthread_mutex_unlock(&M.left_lock);
	return t;
}

static bool left_has(const char *path)
{
	bool has = false;

	pthread_mutex_lock(&M.left_lock);
	for (struct left *l = M.left; l && !has; l = l->next)
		has = !strcmp(l->path, path);
	pthread_mutex_unlock(&M.left_lock);
	return has;
}

/*
 * The array's buffer was cleared (O_TRUNC of trace) or the instance went:
 * what its readers left goes too.  @dir: "/" or "/instances/NAME/".
 */
static void left_drop(const char *dir)
{
	size_t n = strlen(dir);
	struct left *l, **pp;

	pthread_mutex_lock(&M.left_lock);
	for (pp = &M.left; (l = *pp);) {
		if (!strncmp(l->path, dir, n) && !strcmp(l->path + n, "trace_pipe")) {
			*pp = l->next;
			free(l->text);
			free(l);
		} else {
			pp = &l->next;
		}
	}
	pthread_mutex_unlock(&M.left_lock);
}

/* @path (a file the process cleared) was an array's trace: its buffer is empty */
static void trace_cleared(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];

	if (!slash || strcmp(slash + 1, "trace"))
		return;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path) + 1, path);
	left_drop(dir);
}

/* per open file */
struct ofile {
	char path[PATH_MAX];
	unsigned int flags;	/* F_* */
	bool replace;		/* the next write replaces (O_TRUNC, nothing written yet) */
	bool wrote;
	bool failed;		/* a write was refused: close changes nothing more */
	char *data;		/* what a read shows, fetched at the first read */
	size_t len;
	bool fetched;
	char *partial;		/* F_LIST: the unfinished last word */
	size_t plen;
	/* trace_pipe (kernel: the trace_iterator of the open file) */
	pthread_mutex_t lock;	/* one read at a time (kernel: iter->mutex) */
	int pfd;		/* this reader's own control connection; -1 none yet, -2 none */
	size_t off;		/* what of data this reader has had: the rest is its next read's */
};

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	const struct tfile *tf;
	struct where w;
	struct ofile *o;
	int k = lookup(path, &tf, &w), acc = fi->flags & O_ACCMODE;
	mode_t mode;

	if (M.dead)
		return -ENODEV;
	if (k != 2)
		return k ? -EISDIR : -ENOENT;
	mode = tf ? tf->mode : w.mode ? w.mode : 0644;
	if ((acc != O_WRONLY && !(mode & 0444)) || (acc != O_RDONLY && !(mode & 0222)))
		return -EACCES;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	snprintf(o->path, sizeof(o->path), "%s", path);
	o->flags = tf ? tf->flags : 0;
	o->pfd = -1;
	pthread_mutex_init(&o->lock, NULL);
	o->replace = acc != O_RDONLY && (fi->flags & O_TRUNC) && !(fi->flags & O_APPEND);
	if (acc != O_RDONLY && (fi->flags & O_TRUNC) && (o->flags & F_TRUNC)) {
		char *t = tpath(path, NULL, 0), *out = NULL;
		int r = t ? req(USFT_CTL_TRUNC, t, &out) : -ENOMEM;

		free(t);
		free(out);
		if (r) {
			free(o);
			return r;
		}
		trace_cleared(path);
	}
	fi->fh = (uint64_t)(uintptr_t)o;
	fi->direct_io = 1;
	if (o->flags & F_PIPE)
		fi->nonseekable = 1;
	return 0;
}

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	char *t, *out = NULL;
	int r;

	(void)size;
	(void)fi;
	if (M.dead)
		return -ENODEV;
	t = tpath(path, NULL, 0);
	r = t ? req(USFT_CTL_TRUNC, t, &out) : -ENOMEM;
	free(t);
	free(out);
	if (!r)
		trace_cleared(path);
	return r == -ENOENT ? 0 : r;
}

/* a blocked trace_pipe read gives up: its reader's signal, or the process is gone */
static bool pipe_stop(void)
{
	return M.dead || fuse_interrupted();
}

/*
 * One PIPE of @o: on its own connection, a PIPE_WAIT (the process's
 * control thread answers once there is data) unless @nonblock; without
 * one (the process serves no more clients), a PIPE on the shared one.
 * Return: 0 with *@out (maybe empty), -EINTR, -errno.
 */
static int pipe_request(struct ofile *o, const char *text, bool nonblock, char **out)
{
	int r;

	*out = NULL;
	if (o->pfd == -1)
		o->pfd = usft_ctl_connect(M.pid);
	if (o->pfd < 0) {
		o->pfd = -2;
		return req(USFT_CTL_PIPE, text, out);
	}
	r = usft_ctl_request_until(o->pfd, nonblock ? USFT_CTL_PIPE : USFT_CTL_PIPE_WAIT, text, out,
				   pipe_stop);
	if (r == -EINTR) {
		close(o->pfd);	/* out of step: the next read connects again */
		o->pfd = -1;
		free(*out);
		*out = NULL;
		return M.dead ? -ENODEV : -EINTR;
	}
	if (r == -EBUSY || r == -EPIPE || r == -EPROTO || r == -ETIMEDOUT || r == -ECONNRESET) {
		/*
		 * Refused at accept (too many clients: the refusal, or EPIPE if
		 * it closed before our request went), a runtime without
		 * PIPE_WAIT (an older usft started it), or the connection is
		 * gone: the shared one from now on, which tells a dead process
		 * (ENODEV) from a live one.
		 */
		close(o->pfd);
		o->pfd = -2;
		free(*out);
		*out = NULL;
		return req(USFT_CTL_PIPE, text, out);
	}
	return r;
}

/*
 * A trace_pipe read: what the last request brought and this reader has not
 * had yet, else a request for the read's size (kernel tracing_read_pipe():
 * the text of whole entries, kept in the iterator when the read is
 * smaller).  Return: the bytes, 0 never (blocks), -errno.
 */
static int pipe_read(struct ofile *o, char *buf, size_t size, struct fuse_file_info *fi)
{
	bool nonblock = fi->flags & O_NONBLOCK;
	char num[32], *t;
	int r = 0;

	while (pthread_mutex_trylock(&o->lock)) {
		/* another read of this open file: wait for it, ^C still ends ours */
		if (pipe_stop())
			return M.dead ? -ENODEV : -EINTR;
		usleep(1000);
	}
	/* no more than the read asks (at least a page, as the kernel's seq
	 * buffer): what a reader does not take is lost when it closes */
	snprintf(num, sizeof(num), "%zu", size < 4096 ? (size_t)4096 : size);
	t = tpath(o->path, num, strlen(num));
	if (o->off >= o->len) {
		size_t len;
		char *kept = left_take(o->path, &len);

		if (kept) {
			free(o->data);
			o->data = kept;
			o->len = len;
			o->off = 0;
		}
	}
	while (t && o->off >= o->len) {
		char *out = NULL;

		r = pipe_request(o, t, nonblock, &out);
		if (r) {
			free(out);
			break;
		}
		free(o->data);
		o->data = out;
		o->len = out ? strlen(out) : 0;
		o->off = 0;
		if (o->len)
			break;
		if (nonblock) {
			r = -EAGAIN;
			break;
		}
		if (pipe_stop()) {
			r = M.dead ? -ENODEV : -EINTR;
			break;
		}
		if (o->pfd < 0)
			usleep(10000);	/* the shared connection: no waiting there */
	}
	free(t);
	if (!t)
		r = -ENOMEM;
	if (!r) {
		size_t n = o->len - o->off < size ? o->len - o->off : size;

		memcpy(buf, o->data + o->off, n);
		o->off += n;
		r = (int)n;
	}
	pthread_mutex_unlock(&o->lock);
	return r;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct ofile *o = (struct ofile *)(uintptr_t)fi->fh;

	(void)path;
	if (M.dead)
		return -ENODEV;
	if (o->flags & F_PIPE)
		return pipe_read(o, buf, size, fi);
	if (!o->fetched || off == 0) {
		char *out = NULL;
		int r = read_text(o->path, &out);

		if (r) {
			free(out);
			return r;
		}
		free(o->data);
		o->data = out;
		o->len = out ? strlen(out) : 0;
		o->fetched = true;
	}
	if ((size_t)off >= o->len)
		return 0;
	if (size > o->len - (size_t)off)
		size = o->len - (size_t)off;
	memcpy(buf, o->data + off, size);
	return (int)size;
}

/* the most one write request carries: its text is "tracefs/PATH\nDATA" */
#define WRITE_CHUNK (USFT_CTL_MAX_TEXT - PATH_MAX - 64)

/* one write request: WRITE (replaces) or APPEND */
static int send_write(struct ofile *o, const char *data, size_t len)
{
	char *t, *out = NULL;
	int r;

	if (memchr(data, 0, len) || len > WRITE_CHUNK)
		return -EINVAL;	/* the channel carries text; a word this long is no name */
	t = tpath(o->path, data, len);
	if (!t)
		return -ENOMEM;
	r = req(o->replace ? USFT_CTL_WRITE : USFT_CTL_APPEND, t, &out);
	free(t);
	free(out);
	if (!r) {
		o->replace = false;
		o->wrote = true;
	} else {
		o->failed = true;
	}
	return r;
}

/* one piece of a write, at most WRITE_CHUNK bytes; Return: @size or -errno */
static int write_piece(struct ofile *o, const char *buf, size_t size)
{
	size_t cut;
	char *all;
	int r;

	if (!(o->flags & F_LIST)) {
		r = send_write(o, buf, size);
		return r ? r : (int)size;
	}
	/* the kernel's trace_parser: a word cut by the end of this write continues in the next */
	all = malloc(o->plen + size + 1);
	if (!all)
		return -ENOMEM;
	memcpy(all, o->partial, o->plen);
	memcpy(all + o->plen, buf, size);
	cut = o->plen + size;
	while (cut && !strchr(" \t\n", all[cut - 1]))
		cut--;
	if (!cut) {
		free(o->partial);
		o->partial = all;
		o->plen += size;
		return (int)size;
	}
	r = send_write(o, all, cut);
	if (r) {
		free(all);
		return r;
	}
	free(o->partial);
	o->plen = o->plen + size - cut;
	o->partial = o->plen ? strndup(all + cut, o->plen) : NULL;
	free(all);
	return (int)size;
}

/* in pieces a control request carries, as the kernel's FUSE cut them at
 * the old max_write; Return: the bytes taken, or -errno when none were */
static int fs_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct ofile *o = (struct ofile *)(uintptr_t)fi->fh;
	size_t done = 0;

	(void)path;
	(void)off;
	if (M.dead)
		return -ENODEV;
	while (done < size) {
		size_t n = size - done < WRITE_CHUNK ? size - done : WRITE_CHUNK;
		int r = write_piece(o, buf + done, n);

		if (r < 0)
			return done ? (int)done : r;
		done += n;
	}
	return (int)size;
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
	struct ofile *o = (struct ofile *)(uintptr_t)fi->fh;

	(void)path;
	if (!M.dead && !o->failed) {
		if (o->plen)
			send_write(o, o->partial, o->plen);	/* as the kernel: at close, its error unseen */
		else if (o->replace && (o->flags & F_LIST))
			send_write(o, "", 0);		/* `> file` with nothing written: emptied */
	}
	/* trace_pipe: text this reader was given by the process but did not take */
	if ((o->flags & F_PIPE) && !M.dead && o->off < o->len)
		left_put(o->path, o->data + o->off, o->len - o->off);
	if (o->pfd >= 0)
		close(o->pfd);
	pthread_mutex_destroy(&o->lock);
	free(o->partial);
	free(o->data);
	free(o);
	return 0;
}

static int fs_mkdir(const char *path, mode_t mode)
{
	char *out = NULL;
	int r;

	(void)mode;
	if (M.dead)
		return -ENODEV;
	if (strncmp(path, "/instances/", 11) || strchr(path + 11, '/') || !path[11])
		return -EPERM;	/* the kernel's tracefs: only instances/ takes mkdir */
	r = req(USFT_CTL_MKDIR, path + 11, &out);
	free(out);
	return r;
}

static int fs_rmdir(const char *path)
{
	char *out = NULL;
	int r;

	if (M.dead)
		return -ENODEV;
	if (strncmp(path, "/instances/", 11) || strchr(path + 11, '/') || !path[11])
		return -EPERM;
	r = req(USFT_CTL_RMDIR, path + 11, &out);
	free(out);
	if (!r) {
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s/", path);
		left_drop(dir);
	}
	return r;
}

/* trace_pipe readiness: READ of trace_pipe says "ready" */
static bool pipe_ready(const char *path)
{
	char *out = NULL;
	bool ready = left_has(path) || (!read_text(path, &out) && out && !strncmp(out, "ready", 5));

	free(out);
	return ready;
}

static int fs_poll(const char *path, struct fuse_file_info *fi, struct fuse_pollhandle *ph,
		   unsigned *reventsp)
{
	struct ofile *o = (struct ofile *)(uintptr_t)fi->fh;

	if (M.dead) {
		*reventsp = POLLERR;
		if (ph)
			fuse_pollhandle_destroy(ph);
		return 0;
	}
	if (!(o->flags & F_PIPE)) {
		*reventsp = POLLIN | POLLOUT;
		if (ph)
			fuse_pollhandle_destroy(ph);
		return 0;
	}
	*reventsp = pipe_ready(path) ? POLLIN : 0;
	if (ph) {
		pthread_mutex_lock(&M.poll_lock);
		for (int i = 0; i < 64; i++)
			if (!M.polls[i]) {
				M.polls[i] = ph;
				snprintf(M.poll_path[i], PATH_MAX, "%s", path);
				ph = NULL;
				break;
			}
		pthread_mutex_unlock(&M.poll_lock);
		if (ph)
			fuse_pollhandle_destroy(ph);
	}
	return 0;
}

static const struct fuse_operations ops = {
	.init = fs_init,
	.getattr = fs_getattr,
	.readdir = fs_readdir,
	.open = fs_open,
	.read = fs_read,
	.write = fs_write,
	.release = fs_release,
	.truncate = fs_truncate,
	.mkdir = fs_mkdir,
	.rmdir = fs_rmdir,
	.poll = fs_poll,
};

/* ---- the process and the pollers ------------------------------------------------ */

/*
 * The process exits (its pidfd), or its control connection closes under us
 * (`usft detach`, the process called exec: the image this tracefs served
 * is gone): every file says ENODEV, then the mount goes.
 */
static void *watcher(void *arg)
{
	int pfd = (int)syscall(SYS_pidfd_open, M.pid, 0);

	(void)arg;
	for (;;) {
		/* events 0 on the connection: only its hang-up, never a reply */
		struct pollfd p[2] = { { M.fd, 0, 0 }, { pfd, POLLIN, 0 } };
		int n = poll(p, pfd >= 0 ? 2 : 1, 20);

		if ((n > 0 && (p[0].revents || p[1].revents)) ||
		    (pfd < 0 && kill(M.pid, 0) && errno == ESRCH))
			M.dead = 1;
		/* poll waiters: notify those whose pipe has data (or that the process is gone) */
		pthread_mutex_lock(&M.poll_lock);
		for (int i = 0; i < 64; i++) {
			if (!M.polls[i])
				continue;
			if (M.dead || pipe_ready(M.poll_path[i])) {
				fuse_notify_poll(M.polls[i]);
				fuse_pollhandle_destroy(M.polls[i]);
				M.polls[i] = NULL;
			}
		}
		pthread_mutex_unlock(&M.poll_lock);
		if (M.dead)
			break;
	}
	if (pfd >= 0)
		close(pfd);
	/* the process is gone: every file said ENODEV; now take the mount away */
	fuse_exit(M.fuse);
	fuse_session_unmount(fuse_get_session(M.fuse));
	M.unmounted = true;
	return NULL;
}

int usft_mount_tracefs(int fd, pid_t pid, const char *dir, bool foreground, int ready_fd)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *lc;
	char opts[256], *out = NULL;
	struct sigaction intr_sa = { .sa_handler = on_intr };	/* no SA_RESTART */
	sigset_t all, old, stop;
	pthread_t wt;
	int r;

	/*
	 * The 1 MiB buffers of each trace_pipe read (libfuse's, the reply's)
	 * from the heap, not a fresh mmap() each: at that size glibc would map
	 * and unmap them, every page faulted in and cleared on every read.
	 */
	mallopt(M_MMAP_THRESHOLD, 8 << 20);
	mallopt(M_TRIM_THRESHOLD, 32 << 20);
	M.fd = fd;
	M.pid = pid;
	M.t0 = time(NULL);
	M.uid = getuid();
	M.gid = getgid();
	r = usft_ctl_request(fd, USFT_CTL_READ, "tracefs/README", &out);
	free(out);
	if (r) {
		fprintf(stderr, "usft mount: process %d's runtime has no tracefs (%s): it loaded an "
			"older libusft-preload.so; restart it under this usft\n", (int)pid, strerror(-r));
		return USFT_EXIT_FAIL;
	}
	/*
	 * A reader's signal (^C, kill -9 of a `cat trace_pipe` blocked in read)
	 * becomes a FUSE_INTERRUPT, which libfuse passes to the request's thread
	 * as its intr_signal (fs_init()).  libfuse installs no handler for it
	 * when intr is set in the init callback, so that signal's default
	 * action killed this server: ours does nothing but end the sleep of
	 * pipe_read(), which then sees fuse_interrupted().
	 */
	sigaction(USFT_FUSE_INTR_SIGNAL, &intr_sa, NULL);
	snprintf(opts, sizeof(opts), "fsname=tracefs,subtype=usft,auto_unmount,"
		 "default_permissions%s", geteuid() ? "" : ",allow_other");
	if (fuse_opt_add_arg(&args, "usft") || fuse_opt_add_arg(&args, "-o") ||
	    fuse_opt_add_arg(&args, opts))
		return USFT_EXIT_FAIL;
	M.fuse = fuse_new(&args, &ops, sizeof(ops), NULL);
	fuse_opt_free_args(&args);
	if (!M.fuse) {
		fprintf(stderr, "usft mount: libfuse refused the options\n");
		return USFT_EXIT_FAIL;
	}
	if (fuse_mount(M.fuse, dir)) {
		fprintf(stderr, "usft mount: cannot mount on %s (is /dev/fuse there, is %s an empty "
			"directory you own, is fusermount3 installed?)\n", dir, dir);
		fuse_destroy(M.fuse);
		return USFT_EXIT_FAIL;
	}
	if (fuse_daemonize(foreground)) {
		fuse_unmount(M.fuse);
		fuse_destroy(M.fuse);
		return USFT_EXIT_FAIL;
	}
	if (ready_fd >= 0) {
		/* mounted: the waiting parent (automount.c) goes on */
		if (write(ready_fd, "m", 1) != 1)
			fprintf(stderr, "usft mount: telling the parent: %s\n", strerror(errno));
		close(ready_fd);
	}
	fuse_set_signal_handlers(fuse_get_session(M.fuse));
	/* only this thread takes SIGTERM/SIGINT/SIGHUP (libfuse's workers block
	 * every signal too): the watcher is created with all of them blocked */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_create(&wt, NULL, watcher, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(lc, 0);
	fuse_loop_cfg_set_max_threads(lc, 32);
	r = fuse_loop_mt(M.fuse, lc);
	fuse_loop_cfg_destroy(lc);
	/* a stop that comes from now on (`usft record` ending, a second ^C) stays
	 * pending: it must not cut the clean-up short and leave the process traced */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	fuse_remove_signal_handlers(fuse_get_session(M.fuse));
	if (!M.dead) {
		/* unmounted by the user: leave the process as it was before the mount */
		char *o2 = NULL;

		M.dead = 1;
		usft_ctl_request(fd, USFT_CTL_WRITE, "tracefs/current_tracer\nnop", &o2);
		free(o2);
		if (!usft_ctl_request(fd, USFT_CTL_READ, "tracefs/instances", &o2) && o2)
			for (char *s = NULL, *l = strtok_r(o2, "\n", &s); l; l = strtok_r(NULL, "\n", &s)) {
				char *o3 = NULL;

				usft_ctl_request(fd, USFT_CTL_RMDIR, l, &o3);
				free(o3);
			}
		free(o2);
		M.dead = 1;
		pthread_cancel(wt);
	}
	pthread_join(wt, NULL);
	if (!M.unmounted)
		fuse_unmount(M.fuse);
	fuse_destroy(M.fuse);
	close(fd);
	return r < 0 ? USFT_EXIT_FAIL : 0;
}

int usft_cmd_mount(int argc, char **argv)
{
	bool loaded, fg = false;
	const char *dir;
	pid_t pid;
	int fd, r, i = 1;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usft_usage(stdout, "mount");
		return 0;
	}
	if (argc > 1 && (!strcmp(argv[1], "-f") || !strcmp(argv[1], "--foreground"))) {
		fg = true;
		i++;
	}
	if (argc - i != 2)
		return usft_usage_error("mount", "a process id and a directory expected");
	r = usft_parse_pid("mount", argv[i], &pid);
	if (r)
		return r;
	dir = argv[i + 1];
	r = usft_tracefs_dir_ok("mount", dir);
	if (r)
		return r;
	fd = usft_ctl_attach("mount", pid, &loaded);
	if (fd < 0)
		return -fd;
	return usft_mount_tracefs(fd, pid, dir, fg, -1);
}

int usft_tracefs_dir_ok(const char *cmd, const char *dir)
{
	struct stat st;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "usft %s: %s is not a directory: make it first (mkdir -p %s)\n",
			cmd, dir, dir);
		return USFT_EXIT_USAGE;
	}
	return 0;
}
