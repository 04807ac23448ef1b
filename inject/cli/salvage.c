// SPDX-License-Identifier: MIT
/*
 * inject/cli/salvage.c - crash-safe recording, the recorder's half
 * (docs/tracers.md, "Recording"; the file layout: struct usft_ring_file in
 * trace_format.h).
 *
 * `usft record` makes a private directory (mode 0700, on tmpfs when it can:
 * no disk writeback of ring pages) and names it in USFT_RING_DIR; every
 * traced process maps its slot headers and rings from a file there,
 * MAP_SHARED, so what it wrote stays in the page cache whatever kills it.
 * A process that ends cleanly writes everything, marks its file ended and
 * removes it.  Once the processes are gone, a file still there is a process
 * that died first: its rings still hold what the writer thread had not
 * written out (up to one drain period) and the kept-back function_graph
 * entry (the last function entered).  Those events go to the trace as
 * EVENTS chunks of that pid, with an END chunk that says they were
 * recovered; then an EXIT chunk with how the process ended.
 *
 * The ring files come from processes usft started, but their contents are
 * checked as any input: sizes against the file, offsets against the ring.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli.h"
#include "inject.h"
#include "ring_buffer.h"
#include "trace_format.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

static bool on_tmpfs(const char *dir)
{
	struct statfs sf;

	return !statfs(dir, &sf) && sf.f_type == TMPFS_MAGIC && !access(dir, W_OK);
}

/*
 * The directories of recorders that died before removing theirs (a usft
 * record killed itself): "usft-rings-PID-XXXXXX" of a PID that is gone,
 * owned by us.  Their ring files were nobody's to salvage any more.
 */
static void remove_stale(const char *base)
{
	DIR *dp = opendir(base);
	struct dirent *d;

	while (dp && (d = readdir(dp))) {
		char path[PATH_MAX], file[PATH_MAX];
		struct stat st;
		DIR *in;
		int pid;

		if (sscanf(d->d_name, "usft-rings-%d-", &pid) != 1 || pid <= 0 ||
		    !kill(pid, 0) || errno != ESRCH ||
		    snprintf(path, sizeof(path), "%s/%s", base, d->d_name) >= (int)sizeof(path) ||
		    lstat(path, &st) || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
			continue;
		in = opendir(path);
		while (in && (d = readdir(in)))
			if (!strncmp(d->d_name, USFT_RING_FILE_PREFIX, strlen(USFT_RING_FILE_PREFIX)) &&
			    snprintf(file, sizeof(file), "%s/%s", path, d->d_name) < (int)sizeof(file))
				unlink(file);
		if (in)
			closedir(in);
		rmdir(path);
	}
	if (dp)
		closedir(dp);
}

int usft_rings_dir_make(char *dir, size_t len)
{
	const char *cand[3] = { "/dev/shm", getenv("XDG_RUNTIME_DIR"), NULL };
	const char *tmp = getenv("TMPDIR");

	for (int i = 0; i < 3; i++) {
		const char *base = cand[i];

		if (!base)
			base = tmp && *tmp ? tmp : "/tmp";	/* last: wherever TMPDIR is */
		else if (!*base || !on_tmpfs(base))
			continue;
		remove_stale(base);
		if (snprintf(dir, len, "%s/usft-rings-%d-XXXXXX", base, (int)getpid()) >= (int)len)
			continue;
		if (mkdtemp(dir))
			return 0;
	}
	dir[0] = 0;
	return -1;
}

/* ---- the trace file ---------------------------------------------------- */

static int put_chunk(int fd, unsigned int type, uint32_t pid, uint32_t tid, uint64_t arg,
		     const struct iovec *iov, int n)
{
	static const char zero[8];
	struct usft_chunk_hdr h = { .version = USFT_TRACE_VERSION, .type = (uint16_t)type,
				    .pid = pid, .tid = tid, .arg = arg };
	struct iovec v[5];
	size_t size = 0, total;
	int k = 0;

	memcpy(h.magic, USFT_TRACE_MAGIC, 4);
	for (int i = 0; i < n; i++)
		size += iov[i].iov_len;
	h.size = (size + 7) & ~7UL;
	v[k++] = (struct iovec){ &h, sizeof(h) };
	for (int i = 0; i < n && k < 4; i++)
		if (iov[i].iov_len)
			v[k++] = iov[i];
	if (h.size != size)
		v[k++] = (struct iovec){ (void *)zero, h.size - size };
	total = sizeof(h) + h.size;
	return writev(fd, v, k) == (ssize_t)total ? 0 : -1;
}

static int put_text(int fd, unsigned int type, uint32_t pid, const char *text)
{
	struct iovec iov = { (void *)text, strlen(text) };

	return put_chunk(fd, type, pid, 0, 0, &iov, 1);
}

/* how @status reads in an EXIT chunk */
static void exit_text(int status, bool known, char *buf, size_t len)
{
	if (!known)
		snprintf(buf, len, "status=unknown\n");
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "status=killed\nsignal=%d\nsigname=SIG%s\ncore=%d\n",
			 WTERMSIG(status), sigabbrev_np(WTERMSIG(status)) ?: "?",
			 WCOREDUMP(status) ? 1 : 0);
	else
		snprintf(buf, len, "status=exited\ncode=%d\n", WEXITSTATUS(status));
}

/*
 * A writer killed inside a write leaves its last chunk cut, and a cut
 * chunk ends every reader there: the file is cut back to the chunk before
 * (its events are still in the rings: the writer had not marked them
 * consumed).  Also notes, for the slots caught inside a write, whether
 * their chunk made it in full.
 */
struct inflight {
	size_t slot;
	uint32_t pid, tid;
	uint64_t from;		/* its first ring position (writing_from) */
	uint64_t bytes;		/* payload the chunk being written would have */
	bool written;
};

/* ---- one ring file ----------------------------------------------------- */

struct ringmap {
	char *map;
	size_t len;
	const struct usft_ring_file *f;
};

/* the ring file open at @fd mapped, its header checked; Return: 0 or -1 */
static int ring_map(int fd, struct ringmap *r)
{
	struct stat st;
	const struct usft_ring_file *f;

	memset(r, 0, sizeof(*r));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < 4096)
		return -1;
	r->len = (size_t)st.st_size;
	r->map = mmap(NULL, r->len, PROT_READ, MAP_SHARED, fd, 0);
	if (r->map == MAP_FAILED)
		return -1;
	f = r->f = (const struct usft_ring_file *)r->map;
	if (memcmp(f->magic, USFT_RING_MAGIC, 8) || f->version != USFT_RING_VERSION ||
	    f->tbuf_size != sizeof(struct usft_tbuf) || f->nr_slots > USFT_MAX_THREADS ||
	    f->ring_bytes > USFT_RING_MAX_BYTES || (f->ring_bytes & (f->ring_bytes - 1)) ||
	    f->hdr_off < sizeof(*f) || f->hdr_off + f->nr_slots * sizeof(struct usft_tbuf) > f->data_off ||
	    f->data_off > r->len || f->nr_slots * f->ring_bytes > r->len - f->data_off) {
		munmap(r->map, r->len);
		return -1;
	}
	return 0;
}

static int ring_open(const char *path, struct ringmap *r)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), ret;

	memset(r, 0, sizeof(*r));
	if (fd < 0)
		return -1;
	ret = ring_map(fd, r);
	close(fd);
	return ret;
}

static const struct usft_tbuf *ring_slot(const struct ringmap *r, size_t i)
{
	return (const struct usft_tbuf *)(r->map + r->f->hdr_off) + i;
}

/* the slot's unwritten events, [from, to) of its ring, made contiguous */
static uint64_t *ring_copy(const struct ringmap *r, size_t i, uint64_t from, uint64_t to)
{
	uint64_t size = r->f->ring_bytes, len = to - from, off = from & (size - 1);
	const char *ring = r->map + r->f->data_off + i * size;
	uint64_t first = len < size - off ? len : size - off;
	char *p = malloc(len + 16);

	if (!p)
		return NULL;
	memcpy(p, ring + off, first);
	memcpy(p + first, ring, len - first);
	return (uint64_t *)p;
}

/*
 * Whether the chunk body at @pos of @fd holds the ring bytes of @fl (the
 * writer's positions [writing_from, writing) of its slot).  A ring page
 * that reads all zero was given back after the write (the writer punches
 * what it wrote out before it moves consumed): it cannot be compared, and
 * only a completed write punches, so it counts as the same.
 */
static bool chunk_holds(int fd, off_t pos, const struct ringmap *r, const struct inflight *fl)
{
	uint64_t from = fl->from, len = fl->bytes, *ring = ring_copy(r, fl->slot, from, from + len);
	char *body = ring ? malloc(len) : NULL;
	bool same = body && pread(fd, body, len, pos) == (ssize_t)len;

	for (uint64_t at = 0, step; same && at < len; at += step) {
		const char *rp = (const char *)ring + at;
		bool zero = true;

		/* up to the end of the ring page that holds position from + at */
		step = 4096 - ((from + at) & 4095);
		if (step > len - at)
			step = len - at;
		for (uint64_t k = 0; k < step && zero; k++)
			zero = !rp[k];
		same = zero || !memcmp(rp, body + at, step);
	}
	free(body);
	free(ring);
	return same;
}

/*
 * A chunk header starts at @h: a whole one, or one a live process is
 * writing right now (its size may reach past what the file holds yet).
 */
static bool chunk_hdr_start(const struct usft_chunk_hdr *h)
{
	return !memcmp(h->magic, USFT_TRACE_MAGIC, 4) && h->version == USFT_TRACE_VERSION &&
	       h->type >= USFT_CHUNK_SESSION && h->type <= USFT_CHUNK_PAD;
}

/* the first chunk header at or after @from (8-aligned as every chunk is), else @end */
static off_t next_chunk(int fd, off_t from, off_t end)
{
	for (off_t at = from; at + (off_t)sizeof(struct usft_chunk_hdr) <= end; at += 8) {
		struct usft_chunk_hdr h;

		if (pread(fd, &h, sizeof(h), at) == sizeof(h) && chunk_hdr_start(&h))
			return at;
	}
	return end;
}

/*
 * The chunk at @pos has the header of @fl's drain but not all its bytes:
 * the process died inside the write, which came out short (a kill stops a
 * file write at a page boundary), and other processes may have appended
 * after it (their chunks then read as its body).  Find where its bytes
 * end: the body matches the ring up to there (a page given back reads zero
 * and matches anything), and a chunk header or the end of the file is
 * there.  Return: that offset, or -1 (no such place: an earlier chunk of
 * the same size, or a damaged file).
 */
static off_t partial_end(int fd, off_t pos, off_t end, const struct ringmap *r,
			 const struct inflight *fl)
{
	off_t body = pos + (off_t)sizeof(struct usft_chunk_hdr), have = end - body, w = 0, at = -1;
	uint64_t *ring;
	char *file;

	if (have > (off_t)fl->bytes)
		have = (off_t)fl->bytes;
	if (have < 0)
		return -1;
	if (have == 0)
		return end == body ? end : -1;	/* the header alone */
	/* an earlier chunk of the same size (the usual case here) differs at once */
	{
		uint64_t head[8], n = (uint64_t)have < sizeof(head) ? (uint64_t)have : sizeof(head);
		uint64_t *rh = ring_copy(r, fl->slot, fl->from, fl->from + n);
		bool zero = true, differs;

		for (uint64_t k = 0; rh && k < n / 8; k++)
			zero = zero && !rh[k];
		/* a ring page given back reads zero: no telling, look further */
		differs = rh && !zero && pread(fd, head, n, body) == (ssize_t)n && memcmp(rh, head, n);
		free(rh);
		if (differs)
			return -1;
	}
	ring = ring_copy(r, fl->slot, fl->from, fl->from + fl->bytes);
	file = ring ? malloc((size_t)have) : NULL;
	if (!file || pread(fd, file, (size_t)have, body) != (ssize_t)have)
		goto out;
	/* the matching prefix, page by ring page (a zero page: given back) */
	while (w < have) {
		off_t step = 4096 - (off_t)((fl->from + (uint64_t)w) & 4095);
		const char *rp = (const char *)ring + w;
		bool zero = true;

		if (step > have - w)
			step = have - w;
		for (off_t k = 0; k < step && zero; k++)
			zero = !rp[k];
		if (!zero && memcmp(rp, file + w, (size_t)step)) {
			while (rp[0] == file[w])	/* the first byte that differs */
				rp++, w++;
			break;
		}
		w += step;
	}
	if (w == have && body + have == end && !(have & 7)) {
		at = end;	/* it matched to the end of the file: nobody wrote after it */
		goto out;
	}
	/* the next header at or before that byte */
	for (off_t e = w & ~(off_t)7; e >= 0 && at < 0; e -= 8) {
		struct usft_chunk_hdr h;

		if (e + (off_t)sizeof(h) <= have)
			memcpy(&h, file + e, sizeof(h));
		else if (pread(fd, &h, sizeof(h), body + e) != sizeof(h))
			continue;
		if (chunk_hdr_start(&h))
			at = body + e;
	}
out:
	free(file);
	free(ring);
	return at;
}

/* a PAD header over [@pos, @to) (our own descriptor: O_APPEND off for it) */
static bool put_pad(int fd, off_t pos, off_t to, uint32_t pid)
{
	struct usft_chunk_hdr h = { .version = USFT_TRACE_VERSION, .type = USFT_CHUNK_PAD,
				    .pid = pid,
				    .size = (uint64_t)(to - pos) - sizeof(struct usft_chunk_hdr) };
	int fl = fcntl(fd, F_GETFL);
	bool ok;

	if (to - pos < (off_t)sizeof(h))
		return false;
	memcpy(h.magic, USFT_TRACE_MAGIC, 4);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_APPEND))
		return false;
	ok = pwrite(fd, &h, sizeof(h), pos) == (ssize_t)sizeof(h);
	fcntl(fd, F_SETFL, fl);
	return ok;
}

/*
 * Less than a header at the end, the start of one of the dead process's
 * (its pid is there to read): too short for a PAD, so it is cut, if the
 * file has not grown meanwhile (a process that runs appends only after
 * it).  Shorter ones are left: whose they are cannot be told.
 */
static void tail_fragment(int fd, off_t pos, off_t end, uint32_t dead)
{
	struct usft_chunk_hdr h;
	struct stat st;
	off_t n = end - pos;

	if (n < (off_t)offsetof(struct usft_chunk_hdr, tid) || n >= (off_t)sizeof(h))
		return;
	memset(&h, 0, sizeof(h));
	if (pread(fd, &h, (size_t)n, pos) != (ssize_t)n || memcmp(h.magic, USFT_TRACE_MAGIC, 4) ||
	    h.version != USFT_TRACE_VERSION || h.pid != dead)
		return;
	if (!fstat(fd, &st) && st.st_size == end && ftruncate(fd, pos))
		fprintf(stderr, "usft: cannot cut the partial chunk off the trace: %s\n",
			strerror(errno));
}

/*
 * A complete chunk for a drain the writer was inside is in the file when
 * the LAST chunk of that process is an EVENTS chunk of the thread holding
 * those very bytes (a size alone is not enough: a thread calling at a
 * steady pace writes many chunks of one size).
 *
 * What the dead process left of a chunk it was writing (a short write)
 * becomes a PAD chunk over just its own bytes, up to where the next chunk
 * starts or the file ends; a drain's is then appended whole again from the
 * rings.  The file is never cut: other processes of the trace may still be
 * appending (the children of an attached process, those left running after
 * ^C), and a chunk of theirs that is only partly in the file yet is left
 * as it is, for them to finish.
 */
static void check_tail(int fd, const struct ringmap *r, struct inflight *fl, size_t nfl)
{
	uint32_t dead = r->f->pid;
	struct usft_chunk_hdr h;
	struct stat st;
	off_t pos = 0;

	if (fstat(fd, &st))
		return;
	while (pos + (off_t)sizeof(h) <= st.st_size) {
		struct inflight *mine = NULL;
		bool ok, holds;
		off_t e;

		if (pread(fd, &h, sizeof(h), pos) != sizeof(h) || !chunk_hdr_start(&h))
			break;	/* damaged (or a header of less than 32 bytes): left as it is */
		for (size_t i = 0; i < nfl && !mine; i++)
			if (fl[i].pid == h.pid && h.type == USFT_CHUNK_EVENTS && fl[i].tid == h.tid &&
			    h.size == ((fl[i].bytes + 7) & ~7ULL))
				mine = &fl[i];
		ok = h.size <= (uint64_t)(st.st_size - pos - (off_t)sizeof(h));
		holds = mine && ok && chunk_holds(fd, pos + (off_t)sizeof(h), r, mine);
		/* not the drain's bytes: an earlier chunk of that size, or its short write */
		e = mine && !holds ? partial_end(fd, pos, st.st_size, r, mine) : -1;
		/* a cut chunk of the dead process's own: up to the next chunk */
		if (e < 0 && !ok && h.pid == dead)
			e = next_chunk(fd, pos + (off_t)sizeof(h), st.st_size);
		if (e > pos && put_pad(fd, pos, e, h.pid)) {
			if (mine)
				mine->written = false;
			pos = e;
			continue;
		}
		if (!ok)
			break;	/* being written by a process that runs */
		for (size_t i = 0; i < nfl; i++)
			if (fl[i].pid == h.pid)
				fl[i].written = &fl[i] == mine && holds;
		pos += (off_t)sizeof(h) + (off_t)h.size;
	}
	tail_fragment(fd, pos, st.st_size, dead);
}

/* events (an entry and a return count two in a leaf) in @n words */
static uint64_t count_events(const uint64_t *w, size_t n, size_t *used)
{
	uint64_t ev = 0;
	size_t i = 0;

	while (i + 2 <= n) {
		unsigned int type = (unsigned int)(w[i + 1] >> EV_TYPE_SHIFT);
		unsigned int k = usft_ev_len(w[i], w[i + 1]);

		if (!k || i + k > n)
			break;
		/* EV_DATA: the values of the event before, not one of its own */
		if (type != EV_DATA)
			ev += type == EV_GRAPH_LEAF || type == EV_GRAPH_LEAF_GONE ? 2 : 1;
		i += k;
	}
	*used = i;
	return ev;
}

struct salvage_sum {
	uint64_t events, lost;
	uint64_t written;	/* events the writer had written out, all slots */
	unsigned int threads;
};

static void salvage_slot(int fd, const struct ringmap *r, size_t i, const struct inflight *fl,
			 struct salvage_sum *sum)
{
	const struct usft_tbuf *b = ring_slot(r, i);
	uint64_t consumed = b->consumed, commit = b->commit, lost = b->lost - b->lost_seen;
	uint64_t size = r->f->ring_bytes, *w, ev;
	size_t words, used;
	struct iovec iov;
	bool pend;

	if (b->state != TBUF_LIVE && b->state != TBUF_DEAD) {
		sum->written += b->events_written;	/* earlier threads of the slot */
		return;
	}
	/* the writer died inside a drain of this slot: where it really was */
	if (fl) {
		consumed = fl->written ? b->writing : b->writing_from;
		sum->written += b->events_before + (fl->written ? b->writing_events : 0);
	} else {
		sum->written += b->events_written;
	}
	if (commit < consumed || commit - consumed > size || (commit & 7) || (consumed & 7))
		return;		/* not a state the producer leaves: nothing to trust */
	/* died inside a callback: the event it was writing never was */
	if (b->nest)
		lost++;
	pend = !b->nest && b->pend_w1 && (b->pend_w1 >> EV_TYPE_SHIFT) == EV_GRAPH_ENT;
	if (commit == consumed && !lost && !pend)
		return;
	w = ring_copy(r, i, consumed, commit);
	if (!w)
		return;
	words = (size_t)(commit - consumed) / 8;
	ev = count_events(w, words, &used);
	if (pend) {
		/* the entry kept back: the last function this thread entered */
		w[used] = b->pend_w0;
		w[used + 1] = b->pend_w1;
		used += 2;
		ev++;
	}
	iov = (struct iovec){ w, used * 8 };
	if (!put_chunk(fd, USFT_CHUNK_EVENTS, r->f->pid, (uint32_t)b->tid, lost, &iov, 1)) {
		sum->events += ev;
		sum->lost += lost;
		sum->threads++;
	}
	free(w);
	if (b->comm_valid) {
		char comm[16];

		memcpy(comm, b->comm, 16);
		comm[15] = 0;
		iov = (struct iovec){ comm, 16 };
		put_chunk(fd, USFT_CHUNK_TASK, r->f->pid, (uint32_t)b->tid, 0, &iov, 1);
	}
}

/* a process's rings after its death: what they still hold, and END */
/* ---- exit statuses of the processes usft reaped ------------------------- */

static struct {
	int pid, status;
} *exits;
static size_t nexits, exits_cap;

void usft_exit_note(int pid, int status)
{
	if (nexits == exits_cap) {
		size_t cap = exits_cap ? exits_cap * 2 : 16;
		void *p = realloc(exits, cap * sizeof(*exits));

		if (!p)
			return;
		exits = p;
		exits_cap = cap;
	}
	exits[nexits].pid = pid;
	exits[nexits++].status = status;
}

static bool exit_known(int pid)
{
	for (size_t i = 0; i < nexits; i++)
		if (exits[i].pid == pid)
			return true;
	return false;
}

void usft_exits_write(const char *trace)
{
	char text[128];
	int fd = open(trace, O_WRONLY | O_APPEND | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return;
	/* nothing recorded stays nothing (the file is then not kept) */
	for (size_t i = 0; !fstat(fd, &st) && st.st_size && i < nexits; i++) {
		exit_text(exits[i].status, true, text, sizeof(text));
		put_text(fd, USFT_CHUNK_EXIT, (uint32_t)exits[i].pid, text);
	}
	close(fd);
}

static void salvage_ring(int fd, struct ringmap *rm, uint64_t *total)
{
	struct salvage_sum sum = { 0 };
	struct inflight *fl = NULL;
	struct ringmap r = *rm;
	size_t nfl = 0;
	char text[256];

	if (r.f->state != USFT_RING_LIVE)
		goto out;	/* it ended cleanly (the unlink did not happen) */
	fl = calloc(r.f->nr_slots ? r.f->nr_slots : 1, sizeof(*fl));
	for (size_t i = 0; fl && i < r.f->nr_slots; i++) {
		const struct usft_tbuf *b = ring_slot(&r, i);

		if (b->writing && b->writing > b->writing_from &&
		    b->writing - b->writing_from <= r.f->ring_bytes &&
		    !((b->writing - b->writing_from) & 7))
			fl[nfl++] = (struct inflight){ i, r.f->pid, (uint32_t)b->tid, b->writing_from,
						       b->writing - b->writing_from, false };
	}
	check_tail(fd, &r, fl, nfl);
	for (size_t i = 0, k = 0; i < r.f->nr_slots; i++) {
		const struct inflight *mine = NULL;

		if (k < nfl && fl[k].slot == i)
			mine = &fl[k++];
		salvage_slot(fd, &r, i, mine, &sum);
	}
	snprintf(text, sizeof(text), "events=%llu\nlost=%llu\nno_slot=%llu\nthreads=%llu\n"
		 "salvaged=%llu\n", (unsigned long long)(sum.written + sum.events),
		 (unsigned long long)(r.f->lost + sum.lost), (unsigned long long)r.f->no_slot,
		 (unsigned long long)r.f->threads, (unsigned long long)sum.events);
	put_text(fd, USFT_CHUNK_END, r.f->pid, text);
	if (!exit_known((int)r.f->pid)) {
		/* not reaped by usft (a grandchild its parent waited for) */
		put_text(fd, USFT_CHUNK_EXIT, r.f->pid, "status=unknown\n");
	}
	*total += sum.events;
out:
	free(fl);
}

static void salvage_file(int fd, const char *path, uint64_t *total)
{
	struct ringmap r;

	if (ring_open(path, &r))
		return;
	salvage_ring(fd, &r, total);
	munmap(r.map, r.len);
}

bool usft_rings_all_ended(const char *dir)
{
	struct dirent *d;
	bool ended = true;
	DIR *dp;

	if (!dir || !*dir || !(dp = opendir(dir)))
		return true;
	while (ended && (d = readdir(dp))) {
		char path[PATH_MAX];
		struct ringmap r;

		if (strncmp(d->d_name, USFT_RING_FILE_PREFIX, strlen(USFT_RING_FILE_PREFIX)) ||
		    snprintf(path, sizeof(path), "%s/%s", dir, d->d_name) >= (int)sizeof(path) ||
		    ring_open(path, &r))
			continue;
		/* a live file of a process that died is salvaged at the end */
		ended = __atomic_load_n(&r.f->state, __ATOMIC_ACQUIRE) != USFT_RING_LIVE ||
			usft_proc_gone((pid_t)r.f->pid);
		munmap(r.map, r.len);
	}
	closedir(dp);
	return ended;
}

bool usft_rings_fd_live(int ring_fd)
{
	struct ringmap r;
	bool live;

	if (ring_fd < 0 || ring_map(ring_fd, &r))
		return false;
	live = __atomic_load_n(&r.f->state, __ATOMIC_ACQUIRE) == USFT_RING_LIVE;
	munmap(r.map, r.len);
	return live;
}

unsigned long long usft_rings_salvage_fd(int ring_fd, const char *trace)
{
	uint64_t total = 0;
	struct ringmap r;
	int fd;

	if (ring_fd < 0 || !trace || ring_map(ring_fd, &r))
		return 0;
	fd = open(trace, O_RDWR | O_APPEND | O_CLOEXEC);
	if (fd >= 0) {
		salvage_ring(fd, &r, &total);
		close(fd);
	}
	munmap(r.map, r.len);
	return total;
}

unsigned long long usft_rings_salvage(const char *dir, const char *trace)
{
	uint64_t total = 0;
	struct dirent *d;
	DIR *dp;
	int fd;

	if (!dir || !*dir || !(dp = opendir(dir)))
		return 0;
	fd = trace ? open(trace, O_RDWR | O_APPEND | O_CLOEXEC) : -1;
	while ((d = readdir(dp))) {
		char path[PATH_MAX];

		if (strncmp(d->d_name, USFT_RING_FILE_PREFIX, strlen(USFT_RING_FILE_PREFIX)) ||
		    snprintf(path, sizeof(path), "%s/%s", dir, d->d_name) >= (int)sizeof(path))
			continue;
		if (fd >= 0)
			salvage_file(fd, path, &total);
		unlink(path);
	}
	closedir(dp);
	if (fd >= 0)
		close(fd);
	rmdir(dir);
	return total;
}
