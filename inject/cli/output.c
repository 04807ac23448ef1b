// SPDX-License-Identifier: MIT
/*
 * inject/cli/output.c - where `usft record` puts the trace, and the summary
 * it prints.
 *
 * The trace is written to a temporary file next to FILE (".FILE.usft-XXXXXX",
 * made with mkstemp: 0600, O_EXCL) and renamed over FILE only once the
 * program ran and wrote something: a program that is not found, cannot be
 * run or records nothing leaves an existing FILE as it was.  A symbolic
 * link named by -o is refused unless --follow-symlink (then the file it
 * points to is replaced, the link kept).  A FILE that exists and is not a
 * regular file (/dev/null, a FIFO, a device) is written directly: it cannot
 * be renamed over, nor read back for a summary.  `usft report -o` writes
 * its output the same way.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "cli.h"
#include "trace_read.h"

static void split_dir(const char *path, char *dir, size_t len, const char **base)
{
	const char *slash = strrchr(path, '/');

	/* @path is absolute: there is a slash */
	snprintf(dir, len, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	*base = slash + 1;
}

int usft_out_prepare(const char *output, bool follow, struct usft_out *o)
{
	char abs[PATH_MAX], dir[PATH_MAX];
	const char *base;
	struct stat st;
	int fd;

	memset(o, 0, sizeof(*o));
	if (output[0] != '/') {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)) ||
		    snprintf(abs, sizeof(abs), "%s/%s", cwd, output) >= (int)sizeof(abs)) {
			fprintf(stderr, "usft: %s: path too long\n", output);
			return -1;
		}
	} else if (snprintf(abs, sizeof(abs), "%s", output) >= (int)sizeof(abs)) {
		fprintf(stderr, "usft: %s: path too long\n", output);
		return -1;
	}
	snprintf(o->path, sizeof(o->path), "%s", abs);
	snprintf(o->name, sizeof(o->name), "%s", output);
	if (!lstat(abs, &st) && S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(abs, target, sizeof(target) - 1);

		target[n > 0 ? n : 0] = 0;
		if (!follow) {
			fprintf(stderr, "usft: -o %s is a symbolic link (to %s): not followed, so a "
				"link cannot send the trace over another file; name the file "
				"itself, or add --follow-symlink\n", output, target);
			return -1;
		}
		/* the file it points to (which may not exist yet) */
		if (!realpath(abs, o->path)) {
			if (n <= 0) {
				fprintf(stderr, "usft: %s: %s\n", output, strerror(errno));
				return -1;
			}
			split_dir(abs, dir, sizeof(dir), &base);
			if (target[0] == '/')
				snprintf(o->path, sizeof(o->path), "%s", target);
			else if (snprintf(o->path, sizeof(o->path), "%s/%s", dir, target) >=
				 (int)sizeof(o->path)) {
				fprintf(stderr, "usft: %s: path too long\n", output);
				return -1;
			}
		}
		snprintf(o->name, sizeof(o->name), "%s", o->path);
	}
	if (!stat(o->path, &st)) {
		o->existed = true;
		if (S_ISDIR(st.st_mode)) {
			fprintf(stderr, "usft: -o %s is a directory; name a file\n", output);
			return -1;
		}
		if (!S_ISREG(st.st_mode)) {
			o->direct = true;	/* /dev/null, a FIFO: written as it goes */
			return 0;
		}
	}
	split_dir(o->path, dir, sizeof(dir), &base);
	if (snprintf(o->tmp, sizeof(o->tmp), "%s/.%s.usft-XXXXXX", dir, base) >=
	    (int)sizeof(o->tmp)) {
		fprintf(stderr, "usft: %s: path too long\n", output);
		return -1;
	}
	fd = mkstemp(o->tmp);
	if (fd < 0) {
		fprintf(stderr, "usft: cannot create a file in %s: %s (%s is written as a "
			"temporary file next to it, then renamed: name a file in a directory "
			"you can write)\n", dir, strerror(errno), output);
		o->tmp[0] = 0;
		return -1;
	}
	/* an existing trace keeps its permissions (usft makes new ones 0600) */
	if (o->existed && fchmod(fd, st.st_mode & 0777))
		fprintf(stderr, "usft: warning: %s: cannot keep the mode of %s: %s\n", o->tmp,
			o->path, strerror(errno));
	close(fd);
	return 0;
}

const char *usft_out_write_path(const struct usft_out *o)
{
	return o->direct ? o->path : o->tmp;
}

void usft_out_abort(struct usft_out *o)
{
	if (o->tmp[0])
		unlink(o->tmp);
	o->tmp[0] = 0;
}

int usft_out_commit(struct usft_out *o, bool keep_empty, bool *empty)
{
	struct stat st;

	*empty = false;
	if (o->direct)
		return 0;
	if (stat(o->tmp, &st)) {
		fprintf(stderr, "usft: the file %s is gone: %s\n", o->tmp, strerror(errno));
		return -1;
	}
	if (!st.st_size && !keep_empty) {
		*empty = true;
		usft_out_abort(o);
		return 0;
	}
	if (rename(o->tmp, o->path)) {
		fprintf(stderr, "usft: cannot rename %s to %s: %s; the trace is kept in %s\n", o->tmp,
			o->path, strerror(errno), o->tmp);
		return -1;
	}
	o->tmp[0] = 0;
	return 0;
}

/* less than a few chunks' worth left where @file lives */
static bool disk_full(const char *file)
{
	char dir[PATH_MAX];
	const char *base;
	struct statvfs v;

	split_dir(file, dir, sizeof(dir), &base);
	return !statvfs(dir, &v) && (unsigned long long)v.f_bavail * v.f_frsize < (1ULL << 20);
}

void usft_record_summary(const struct usft_out *o, const char *prog, const char *progpath,
			 bool empty, bool lossless)
{
	const char *file = o->name, *tracer;
	struct usft_trace t;
	size_t unfinished = 0, nprof = 0;
	int r;

	if (o->direct) {
		/* the processes wrote it themselves: a failed write is theirs to tell */
		fprintf(stderr, "usft: the trace went straight to %s (not a regular file: no "
			"summary; a process that could not write it said so above)\n", file);
		return;
	}
	if (empty) {
		fprintf(stderr, "usft: nothing recorded: %s; %s %s\n",
			usft_no_sites_reason(progpath, prog), file,
			o->existed ? "left as it was" : "not created");
		return;
	}
	r = usft_trace_read(o->path, &t, false);
	if (r) {
		fprintf(stderr, "usft: cannot read %s: %s\n", file,
			r == -EINVAL ? "not a usft trace file" : strerror(-r));
		return;
	}
	for (size_t i = 0; i < t.nsess; i++) {
		const struct usft_rsession *s = &t.sess[i];

		if (s->unmatched && *s->unmatched)
			fprintf(stderr, "usft: warning: -l %s matched no function in %s-%d\n",
				s->unmatched, s->comm ? s->comm : "?", s->pid);
		unfinished += !s->ended;
		nprof += s->nprof;	/* the profiler writes tables, not events */
	}
	/* both counts in events: a call is one (function) or two (function_graph) */
	tracer = usft_trace_tracer(&t);
	fprintf(stderr, "usft: %llu events, %llu lost, %zu process%s, file %s (%s%s; full rings: "
		"%s)%s\n", (unsigned long long)t.events, (unsigned long long)t.lost, t.nsess,
		t.nsess == 1 ? "" : "es", file, tracer,
		!strcmp(tracer, "function_graph") ?
			": an event is a call's entry or its return, recorded or lost" :
		!strcmp(tracer, "function") ? ": an event is a call, recorded or lost" : "",
		lossless ? "the thread waits" : "drop and count",
		t.truncated ? " [truncated]" : "");
	for (size_t i = 0; i < t.nsess; i++) {
		const struct usft_rsession *s = &t.sess[i];

		if (s->exit_signal || s->salvaged)
			fprintf(stderr, "usft: %s-%d %s; %llu events recovered from its ring buffers "
				"after its death\n", s->comm ? s->comm : "?", s->pid,
				s->exit_status ? s->exit_status : "died",
				(unsigned long long)s->salvaged);
		else if (s->exit_status && !s->ended)
			fprintf(stderr, "usft: %s-%d %s\n", s->comm ? s->comm : "?", s->pid,
				s->exit_status);
	}
	if ((t.truncated || unfinished) && disk_full(o->path))
		fprintf(stderr, "usft: the disk holding %s is full (ENOSPC): the trace stops where "
			"it filled up and keeps the %llu events written before; free space and "
			"record again\n", file, (unsigned long long)t.events);
	else if (t.truncated || unfinished)
		fprintf(stderr, "usft: %zu process%s did not finish the trace (killed, or a write "
			"failed: see above); what they wrote before is kept\n", unfinished,
			unfinished == 1 ? "" : "es");
	else if (!t.events && !t.lost && !nprof)
		fprintf(stderr, "usft: no function was traced: %s\n",
			usft_no_sites_reason(progpath, prog));
	usft_trace_free(&t);
}
