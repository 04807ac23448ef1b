// SPDX-License-Identifier: MIT
/*
 * tracers/trace_record.c - one recording session in one process: the trace
 * file, the writer thread that drains the per-thread rings into it, symbol
 * names for the addresses seen, and the fork/exec/exit hand-offs.
 *
 * The writer thread (all signals blocked, never traced: this library is not
 * built with the patch flags) wakes every 10 ms, appends one EVENTS chunk per
 * thread with new events straight from the ring memory (writev), resolves
 * the addresses it has not seen yet (usft_kallsyms_lookup(), dladdr() for
 * code without a site table) into a SYMS chunk, and releases the slots of
 * threads that exited.  Names are resolved in the process because addresses
 * mean nothing outside it; `usft report` only reads the file.
 *
 * Every chunk is one write() on an O_APPEND descriptor: forked children
 * and exec'd images append to the same file, each under its own SESSION.
 */
#include <dlfcn.h>
#include <linux/futex.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <usft/ftrace_probe.h>
#include <usft/usft.h>
#include <usft/version.h>
#include "trace_array.h"
#include "trace_stack.h"
#include "tracer.h"

int usft_tracing_on;
unsigned long long usft_trace_base;

struct sym_ent {
	uint64_t addr;		/* 0: empty */
	uint64_t offset;
	const char *name;	/* owned copy, NULL unknown */
	bool stale;		/* its object was unloaded since: resolve again */
};

struct task_ent {
	int tid;
	char comm[16];
	bool written;		/* TASK chunk with this comm written */
};

static struct {
	bool active;
	bool stopping;			/* a thread is in usft_tracer_stop() */
	const struct usft_tracer *tracer;
	struct usft_trace_opts opts;
	char *output;
	int fd;
	dev_t fd_dev;			/* what fd must still be (the program may close */
	ino_t fd_ino;			/* its descriptors and reuse the number) */
	int pid;
	int write_error;
	pthread_mutex_t lock;		/* everything below, and the file */
	pthread_t thread;
	bool thread_running;
	int stop;
	/*
	 * The writer's wake-up: bumped (then FUTEX_WAKE) by a thread's exit, a
	 * lossless producer with a full ring and the stop; the writer sleeps
	 * on it (FUTEX_WAIT with its pause) unless it moved since the pass began.
	 * A futex, not a condition variable: a producer may be in a signal
	 * handler, where only system calls are safe.
	 */
	unsigned int wake_seq;
	unsigned long long events, lost;
	unsigned long long drained;	/* ring bytes written out (the writer's pace) */
	unsigned long long drained0, given0;	/* drained, given back: at the session's start */
	unsigned long fullest;		/* most bytes one ring held in this pass */
	/* address -> name cache, open addressing */
	struct sym_ent *syms;
	size_t sym_cap, sym_n;
	/* SYMS records not written yet */
	char *symbuf;
	size_t symbuf_len, symbuf_cap;
	struct task_ent *tasks;
	size_t ntasks, task_cap;
	char unmatched[512];
	bool atfork_done;
} S = {
	.fd = -1,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

bool usft_tracer_active(void)
{
	return S.active;
}

/*
 * The top level's tracing_on for the probe commands (traceon/traceoff,
 * <usft/ftrace_probe.h>): the recording's.  Outside a recording nothing is
 * turned on (usft_tracing_on also says a session is open).  Called in
 * traced threads: no lock, no errno.
 */
bool usft_record_tracing_is_on(void)
{
	return __atomic_load_n(&usft_tracing_on, __ATOMIC_RELAXED);
}

void usft_record_tracing_set(bool on)
{
	if (on && !__atomic_load_n(&S.active, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&usft_tracing_on, on, __ATOMIC_RELEASE);
}

/* NULL: the recording's top level; else a tracefs trace array (trace_array.c) */
static bool record_tr_is_on(struct trace_array *tr)
{
	return tr ? usft_trace_array_is_on(tr) : usft_record_tracing_is_on();
}

static void record_tr_set_on(struct trace_array *tr, bool on)
{
	if (tr)
		usft_trace_array_set_on(tr, on);
	else
		usft_record_tracing_set(on);
}

static void record_tr_dump_stack(struct trace_array *tr, unsigned long ip, int skip)
{
	if (tr)
		usft_trace_array_dump_stack(tr, ip, skip);
	else
		usft_record_stack(ip);	/* trace_stack.c */
}

static const struct usft_trace_array_ops record_tr_ops = {
	.sz = sizeof(record_tr_ops),
	.is_on = record_tr_is_on,
	.set_on = record_tr_set_on,
	.dump_stack = record_tr_dump_stack,
	.puts = usft_tracer_puts,
};

void usft_tr_ops_install(void)
{
	usft_set_trace_array_ops(&record_tr_ops);
}

/* ---- chunks ---------------------------------------------------------- */

/* a short write sets no errno: a full file system, or the file size limit */
static int short_write_cause(void)
{
	struct statvfs v;
	struct rlimit rl;
	struct stat st;

	if (!fstatvfs(S.fd, &v) && (unsigned long long)v.f_bavail * v.f_frsize < 65536)
		return ENOSPC;
	if (!getrlimit(RLIMIT_FSIZE, &rl) && rl.rlim_cur != RLIM_INFINITY && !fstat(S.fd, &st) &&
	    (unsigned long long)st.st_size + 65536 >= rl.rlim_cur)
		return EFBIG;
	return EIO;
}

/*
 * The trace cannot be written any more (disk full, file size limit, a
 * device that refuses it): stop writing in this process and say so once,
 * on stderr, with write(2) (the writer thread must not take stdio's lock).
 * A short write leaves its chunk cut: readers stop there.
 */
static void write_failed(int err, bool cut)
{
	char msg[PATH_MAX + 384];
	int n;

	S.write_error = err ? err : EIO;
	n = snprintf(msg, sizeof(msg), "usft: %s: %s%s: recording stopped in process %d; the "
		     "file keeps the chunks written before%s\n", S.output,
		     S.write_error == ENOSPC ? "the disk is full (ENOSPC)" :
		     S.write_error == EFBIG ? "file size limit reached (EFBIG)" : "write failed: ",
		     S.write_error == ENOSPC || S.write_error == EFBIG ? "" : strerror(S.write_error),
		     S.pid, cut ? " (its last one is cut)" : "");
	if (n > 0 && write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1) < 0)
		return;	/* nowhere left to say it */
}

static void write_chunk(unsigned int type, int tid, uint64_t arg, struct iovec *iov, int n)
{
	static const char zero[8];
	struct usft_chunk_hdr h;
	struct iovec v[6];
	size_t size = 0, total;
	ssize_t r;
	int k = 0;

	if (S.fd < 0 || S.write_error)
		return;
	for (int i = 0; i < n; i++)
		size += iov[i].iov_len;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, USFT_TRACE_MAGIC, 4);
	h.version = USFT_TRACE_VERSION;
	h.type = (uint16_t)type;
	h.pid = (uint32_t)S.pid;
	h.tid = (uint32_t)tid;
	h.size = (size + 7) & ~7UL;
	h.arg = arg;
	v[k++] = (struct iovec){ &h, sizeof(h) };
	for (int i = 0; i < n && k < 5; i++)
		if (iov[i].iov_len)
			v[k++] = iov[i];
	if (h.size != size)
		v[k++] = (struct iovec){ (void *)zero, h.size - size };
	total = sizeof(h) + h.size;
	do {
		r = writev(S.fd, v, k);
	} while (r < 0 && errno == EINTR);
	/* a short write (disk full) would let other processes interleave: stop */
	if (r != (ssize_t)total)
		write_failed(r < 0 ? errno : short_write_cause(), r > 0);
}

static void write_text_chunk(unsigned int type, const char *text)
{
	struct iovec iov = { (void *)text, strlen(text) };

	write_chunk(type, 0, 0, &iov, 1);
}

/* ---- symbols --------------------------------------------------------- */

static size_t sym_hash(uint64_t a, size_t cap)
{
	return (size_t)((a * 0x9e3779b97f4a7c15ULL) >> 17) & (cap - 1);
}

static struct sym_ent *sym_slot(uint64_t a)
{
	size_t i = sym_hash(a, S.sym_cap);

	while (S.syms[i].addr && S.syms[i].addr != a)
		i = (i + 1) & (S.sym_cap - 1);
	return &S.syms[i];
}

static bool sym_grow(void)
{
	struct sym_ent *old = S.syms;
	size_t oldcap = S.sym_cap, cap = oldcap ? oldcap * 2 : 4096;
	struct sym_ent *n = calloc(cap, sizeof(*n));

	if (!n)
		return false;
	S.syms = n;
	S.sym_cap = cap;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].addr)
			*sym_slot(old[i].addr) = old[i];
	free(old);
	return true;
}

static void symbuf_add(uint64_t addr, uint64_t off, const char *name)
{
	struct usft_sym_rec r = { .addr = addr, .offset = off };
	size_t len = name ? strlen(name) : 0, need;

	r.namelen = (uint32_t)len;
	need = sizeof(r) + ((len + 8) & ~7UL);
	if (S.symbuf_len + need > S.symbuf_cap) {
		size_t cap = S.symbuf_cap ? S.symbuf_cap * 2 : 65536;
		char *p;

		while (cap < S.symbuf_len + need)
			cap *= 2;
		p = realloc(S.symbuf, cap);
		if (!p)
			return;
		S.symbuf = p;
		S.symbuf_cap = cap;
	}
	memcpy(S.symbuf + S.symbuf_len, &r, sizeof(r));
	memset(S.symbuf + S.symbuf_len + sizeof(r), 0, need - sizeof(r));
	if (len)
		memcpy(S.symbuf + S.symbuf_len + sizeof(r), name, len);
	S.symbuf_len += need;
}

/*
 * The name of the function containing @addr, resolved once per session,
 * and again once the object it was in is unloaded (another may be loaded
 * at the same address: its names go in SYMS after the UNMAP chunk).
 */
static const struct sym_ent *sym_lookup(uint64_t addr)
{
	struct sym_ent *e;
	unsigned long off = 0;
	const char *name;
	char objname[96];
	Dl_info di;

	if (!addr)
		return NULL;
	if ((S.sym_n + 1) * 2 > S.sym_cap && !sym_grow())
		return NULL;
	e = sym_slot(addr);
	if (e->addr && !e->stale)
		return e;
	name = usft_kallsyms_lookup((unsigned long)addr, &off);
	if (!name && dladdr((void *)(uintptr_t)addr, &di)) {
		if (di.dli_sname) {
			name = di.dli_sname;
			off = (unsigned long)addr - (unsigned long)di.dli_saddr;
		} else if (di.dli_fname) {
			/* no symbol (a stripped library's local function): object+offset */
			const char *base = strrchr(di.dli_fname, '/');

			snprintf(objname, sizeof(objname), "%s+%#lx", base ? base + 1 : di.dli_fname,
				 (unsigned long)addr - (unsigned long)di.dli_fbase);
			name = objname;
		}
	}
	if (e->addr) {
		/* nothing there now: the old name stays the last one given */
		e->stale = false;
		if (!name || (e->name && !strcmp(name, e->name) && off == e->offset))
			return e;
		free((void *)e->name);
		S.sym_n--;
	}
	e->addr = addr;
	e->offset = off;
	e->name = name ? strdup(name) : NULL;
	S.sym_n++;
	symbuf_add(addr, off, e->name);
	return e;
}

static void flush_syms(void)
{
	struct iovec iov;

	if (!S.symbuf_len)
		return;
	iov = (struct iovec){ S.symbuf, S.symbuf_len };
	write_chunk(USFT_CHUNK_SYMS, 0, 0, &iov, 1);
	S.symbuf_len = 0;
}

/* ---- tasks ----------------------------------------------------------- */

static void read_comm(int tid, char comm[16])
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, comm, 15);
	close(fd);
	if (n <= 0)
		return;
	comm[n] = 0;
	if (comm[n - 1] == '\n')
		comm[n - 1] = 0;
}

static int task_index(struct usft_tbuf *b)
{
	struct task_ent *t;

	if (b->task >= 0 && (size_t)b->task < S.ntasks && S.tasks[b->task].tid == b->tid)
		return b->task;
	for (size_t i = 0; i < S.ntasks; i++)
		if (S.tasks[i].tid == b->tid)
			return b->task = (int)i;
	if (S.ntasks == S.task_cap) {
		size_t cap = S.task_cap ? S.task_cap * 2 : 64;
		void *p = realloc(S.tasks, cap * sizeof(*S.tasks));

		if (!p)
			return -1;
		S.tasks = p;
		S.task_cap = cap;
	}
	t = &S.tasks[S.ntasks];
	memset(t, 0, sizeof(*t));
	t->tid = b->tid;
	snprintf(t->comm, sizeof(t->comm), "<...>");
	if (__atomic_load_n(&b->comm_valid, __ATOMIC_ACQUIRE))
		memcpy(t->comm, b->comm, 16);
	else
		read_comm(b->tid, t->comm);
	t->comm[15] = 0;
	return b->task = (int)S.ntasks++;
}

static void write_task(struct task_ent *t)
{
	struct iovec iov = { t->comm, 16 };

	write_chunk(USFT_CHUNK_TASK, t->tid, 0, &iov, 1);
	t->written = true;
}

/* ---- draining -------------------------------------------------------- */

static inline uint64_t ring_word(struct usft_tbuf *b, unsigned long byte)
{
	return b->data[(byte >> 3) & b->wmask];
}

/* names for the addresses in [from, to) of @b; returns the events seen */
/*
 * Addresses named already, direct-mapped: most events repeat a few hot
 * addresses, and a hash probe per event was most of the writer's time on a
 * busy thread.  Cleared when names may go stale (dlclose) and per session.
 */
#define SEEN_SLOTS	1024
static uint64_t sym_seen[SEEN_SLOTS];

static inline void sym_note(uint64_t a)
{
	uint64_t *slot = &sym_seen[((a >> 4) ^ (a >> 14)) & (SEEN_SLOTS - 1)];

	if (*slot != a) {
		sym_lookup(a);
		*slot = a;
	}
}

static unsigned long scan_events(struct usft_tbuf *b, unsigned long from, unsigned long to)
{
	unsigned long n = 0;

	while (from + 16 <= to) {
		uint64_t w1 = ring_word(b, from + 8);
		unsigned int type = (unsigned int)(w1 >> EV_TYPE_SHIFT);
		unsigned int words = usft_ev_len(ring_word(b, from), w1);

		if (!words || from + words * 8 > to)
			break;
		if (type == EV_DATA) {
			/* values of the event before: not an event of their own */
			from += words * 8;
			continue;
		}
		sym_note(w1 & EV_IP_MASK);
		if (type == EV_FUNC)
			sym_note(ring_word(b, from + 16));
		for (unsigned int k = 2; type == EV_STACK && k < words; k++)
			sym_note(ring_word(b, from + 8 * k));	/* its frames */
		from += words * 8;
		n += type == EV_GRAPH_LEAF || type == EV_GRAPH_LEAF_GONE ? 2 : 1;
	}
	return n;
}

static void drain_slot(struct usft_tbuf *b)
{
	unsigned long commit = __atomic_load_n(&b->commit, __ATOMIC_ACQUIRE);
	unsigned long from = b->consumed;
	unsigned long lost = __atomic_load_n(&b->lost, __ATOMIC_RELAXED);
	unsigned long len, off, first, ev;
	struct iovec iov[2];
	int t;

	if (commit == from && lost == b->lost_seen)
		return;
	t = task_index(b);
	if (t >= 0 && !S.tasks[t].written)
		write_task(&S.tasks[t]);
	len = commit - from;
	off = from & (b->size - 1);
	first = len < b->size - off ? len : b->size - off;
	ev = scan_events(b, from, commit);
	S.events += ev;
	/* the names before the events that use them: a process that ends
	 * without a word (an exec of an attached process, a kill) leaves no
	 * address without its name */
	flush_syms();
	iov[0] = (struct iovec){ (char *)b->data + off, first };
	iov[1] = (struct iovec){ (char *)b->data, len - first };
	/* a salvage after a death inside this write knows what it held */
	b->events_before = b->events_written;
	b->writing_from = from;
	b->writing_events = ev;
	__atomic_store_n(&b->writing, commit, __ATOMIC_RELEASE);
	write_chunk(USFT_CHUNK_EVENTS, b->tid, lost - b->lost_seen, iov, 2);
	S.lost += lost - b->lost_seen;
	__atomic_store_n(&b->lost_seen, lost, __ATOMIC_RELEASE);
	b->events_written += ev;
	/* pages written out go back before consumed lets the next lap in
	 * (only when the chunk is in the file: a salvage reads the ring) */
	if (!S.write_error && S.fd >= 0)
		usft_tbuf_give_back(b, from, commit);
	__atomic_store_n(&b->consumed, commit, __ATOMIC_RELEASE);
	__atomic_store_n(&b->writing, 0, __ATOMIC_RELEASE);
	S.drained += len;
	if (len > S.fullest)
		S.fullest = len;
}

/* shared rings: the totals an END chunk would give, for a salvage */
static void ring_totals(void)
{
	struct usft_ring_file *f = usft_tbuf_ring_file();

	if (!f)
		return;
	__atomic_store_n(&f->events, S.events, __ATOMIC_RELAXED);
	__atomic_store_n(&f->lost, S.lost, __ATOMIC_RELAXED);
	__atomic_store_n(&f->no_slot, usft_tbuf_no_slot(), __ATOMIC_RELAXED);
	__atomic_store_n(&f->threads, S.ntasks, __ATOMIC_RELEASE);
}

/*
 * The program may close every descriptor (daemons do) and open something
 * else under the same number: check that the trace fd is still the trace
 * file before each pass, and reopen it if not.
 */
static void check_fd(void)
{
	struct stat st;
	int fd;

	if (S.fd < 0 || S.write_error)
		return;
	if (!fstat(S.fd, &st) && st.st_dev == S.fd_dev && st.st_ino == S.fd_ino)
		return;
	fd = open(S.output, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd >= 0) {
		int hi = fcntl(fd, F_DUPFD_CLOEXEC, 512);

		if (hi >= 0) {
			close(fd);
			fd = hi;
		}
	}
	S.fd = fd;	/* not ours any more: never close the old number */
	if (fd < 0 || fstat(fd, &st)) {
		write_failed(fd < 0 ? errno : EBADF, false);
		return;
	}
	S.fd_dev = st.st_dev;
	S.fd_ino = st.st_ino;
}

/* called with S.lock held */
static void drain_all(void)
{
	unsigned int n = usft_tbuf_pool_slots();

	check_fd();
	for (unsigned int i = 0; i < n; i++) {
		struct usft_tbuf *b = usft_tbuf_slot(i);
		int st = __atomic_load_n(&b->state, __ATOMIC_ACQUIRE);

		if (st != TBUF_LIVE && st != TBUF_DEAD)
			continue;
		if (b->size) {
			drain_slot(b);
			if (st == TBUF_LIVE)
				usft_tbuf_prefault(b);
		}
		if (st == TBUF_DEAD) {
			int t = task_index(b);

			/* the thread's last name, from its exit */
			if (t >= 0 && b->comm_valid && strncmp(S.tasks[t].comm, b->comm, 16)) {
				memcpy(S.tasks[t].comm, b->comm, 16);
				S.tasks[t].comm[15] = 0;
				S.tasks[t].written = false;
			}
			if (b->prof)
				usft_profile_merge_slot(b);
			usft_tbuf_release(b);
		}
	}
	flush_syms();
	ring_totals();
	usft_tbuf_prepare_free();
	usft_tbuf_writer_passed();
}

/* ---- snapshot: tasks, profile, END ------------------------------------- */

struct prof_out {
	char *buf;
	size_t len, cap;
};

static void prof_emit(const struct usft_prof_ent *e, void *arg)
{
	struct prof_out *o = arg;
	const struct sym_ent *s = sym_lookup(e->ip);
	struct usft_prof_rec r = { .addr = e->ip, .hits = e->hits, .time_ns = e->time,
				   .time_sq = e->time_sq };
	const char *name = s ? s->name : NULL;
	size_t len = name ? strlen(name) : 0, need = sizeof(r) + ((len + 8) & ~7UL);

	if (o->len + need > o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 65536;
		char *p;

		while (cap < o->len + need)
			cap *= 2;
		p = realloc(o->buf, cap);
		if (!p)
			return;
		o->buf = p;
		o->cap = cap;
	}
	r.namelen = (uint32_t)len;
	memcpy(o->buf + o->len, &r, sizeof(r));
	memset(o->buf + o->len + sizeof(r), 0, need - sizeof(r));
	if (len)
		memcpy(o->buf + o->len + sizeof(r), name, len);
	o->len += need;
}

/*
 * function_graph entries kept back by threads still running (their own
 * thread writes them at its next event or exit): at the end of the image
 * (exit, or exec from any thread) they are written from here, straight
 * into the file.  Their owners may still run: the entry is taken with an
 * exchange, and one its owner is changing right now (inside a callback,
 * or a new entry replacing it meanwhile) is counted lost instead.
 */
static void pending_lost(struct usft_tbuf *b)
{
	write_chunk(USFT_CHUNK_EVENTS, b->tid, 1, NULL, 0);
	S.lost++;
}

static void write_pending(void)
{
	unsigned int n = usft_tbuf_pool_slots();

	for (unsigned int i = 0; i < n; i++) {
		struct usft_tbuf *b = usft_tbuf_slot(i);
		uint64_t w[2];
		struct iovec iov = { w, sizeof(w) };

		if (__atomic_load_n(&b->state, __ATOMIC_ACQUIRE) != TBUF_LIVE ||
		    !__atomic_load_n(&b->pend_w1, __ATOMIC_RELAXED))
			continue;
		if (__atomic_load_n(&b->nest, __ATOMIC_ACQUIRE)) {
			pending_lost(b);
			continue;
		}
		w[0] = __atomic_load_n(&b->pend_w0, __ATOMIC_ACQUIRE);
		w[1] = __atomic_exchange_n(&b->pend_w1, 0, __ATOMIC_ACQ_REL);
		if (!w[1])
			continue;
		if (__atomic_load_n(&b->pend_w0, __ATOMIC_ACQUIRE) != w[0]) {
			pending_lost(b);
			continue;
		}
		sym_lookup(w[1] & EV_IP_MASK);
		write_chunk(USFT_CHUNK_EVENTS, b->tid, 0, &iov, 1);
		S.events++;
	}
	flush_syms();
}

/* this thread's kept-back entry goes into its ring (not a callback) */
static void flush_own_pending(void)
{
	struct usft_tbuf *b = usft_tbuf_own();

	if ((unsigned long)b > 1 && b->size)
		usft_tbuf_flush_pending(b);
}

/* called with S.lock held */
static void snapshot(bool final)
{
	unsigned int n = usft_tbuf_pool_slots();
	char text[256];

	drain_all();
	if (final)
		write_pending();
	/* names of threads still alive may have changed */
	for (unsigned int i = 0; i < n; i++) {
		struct usft_tbuf *b = usft_tbuf_slot(i);
		char comm[16] = "";
		int t;

		if (__atomic_load_n(&b->state, __ATOMIC_ACQUIRE) != TBUF_LIVE)
			continue;
		t = task_index(b);
		if (t < 0)
			continue;
		read_comm(b->tid, comm);
		if (comm[0] && strncmp(comm, S.tasks[t].comm, 16)) {
			memcpy(S.tasks[t].comm, comm, 16);
			S.tasks[t].written = false;
		}
	}
	for (size_t i = 0; i < S.ntasks; i++)
		if (!S.tasks[i].written)
			write_task(&S.tasks[i]);
	if (S.tracer && S.tracer->kind == USFT_TRACER_PROFILE) {
		struct prof_out o = { 0 };
		struct iovec iov;

		usft_profile_snapshot(prof_emit, &o);
		iov = (struct iovec){ o.buf, o.len };
		write_chunk(USFT_CHUNK_PROFILE, 0, 0, &iov, 1);
		free(o.buf);
		flush_syms();
	}
	/* the ring bytes written out, and of them those given back (large rings) */
	snprintf(text, sizeof(text), "events=%llu\nlost=%llu\nno_slot=%lu\nthreads=%zu\n"
		 "drained_bytes=%llu\ngiven_back_bytes=%llu\n", S.events, S.lost,
		 usft_tbuf_no_slot(), S.ntasks, S.drained - S.drained0,
		 usft_tbuf_given_back() - S.given0);
	write_text_chunk(USFT_CHUNK_END, text);
}

/* ---- writer thread --------------------------------------------------- */

static void pick_up_objects(void);
static void dl_note_seen(void);
/*
 * A fork child's writer never refilters: a lock of the filter code another
 * thread of the parent held at the fork stays held in the child.
 */
static bool dl_in_child;

/* more than this written in one pass: the next pass in 1 ms, not 10 */
#define WRITER_BUSY_BYTES	(256ULL << 10)

static void *writer_main(void *arg)
{
	unsigned long long last = 0;
	long pause;

	/* all of this thread is usft's own: never recorded */
	usft_self_begin();
	prctl(PR_SET_NAME, "usft-writer", 0, 0, 0);
	for (;;) {
		unsigned int seen = __atomic_load_n(&S.wake_seq, __ATOMIC_ACQUIRE);
		struct timespec ts;

		pthread_mutex_lock(&S.lock);
		drain_all();
		/* a busy producer: come back sooner, so its ring never fills */
		/*
		 * A ring a quarter full in one pass, or a producer waiting for
		 * room: back in 100 us; much written: 1 ms; else 10 ms.
		 */
		pause = usft_tbuf_waiters() || S.fullest * 4 > S.opts.buffer_size ? 100 * 1000 :
			S.drained - last > WRITER_BUSY_BYTES ? 1000 * 1000 : 10 * 1000 * 1000;
		S.fullest = 0;
		last = S.drained;
		pthread_mutex_unlock(&S.lock);
		pick_up_objects();
		if (__atomic_load_n(&S.stop, __ATOMIC_ACQUIRE))
			break;
		ts.tv_sec = 0;
		ts.tv_nsec = pause;
		/* a wake-up since the pass began: the next pass at once */
		syscall(SYS_futex, &S.wake_seq, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
	}
	return arg;
}

/* a thread exited, or a lossless producer has a full ring: drain now */
static void wake_writer(void)
{
	int saved = errno;

	__atomic_add_fetch(&S.wake_seq, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &S.wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = saved;
}

static void start_writer(void)
{
	sigset_t all, old;

	S.stop = 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	S.thread_running = !pthread_create(&S.thread, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* no writer (a thread limit, a sandbox): nobody to wait for, full rings drop */
	if (!S.thread_running)
		usft_tbuf_set_lossless(false);
}

static void stop_writer(void)
{
	if (!S.thread_running || pthread_equal(S.thread, pthread_self()))
		return;
	__atomic_store_n(&S.stop, 1, __ATOMIC_RELEASE);
	wake_writer();
	pthread_join(S.thread, NULL);
	S.thread_running = false;
}

/* ---- session --------------------------------------------------------- */

static void cat_file(const char *path, char *buf, size_t len, bool nul_to_space)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	buf[0] = 0;
	if (fd < 0)
		return;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] == '\n' && i == n - 1)
			buf[i] = 0;
		else if (nul_to_space && buf[i] == 0 && i < n - 1)
			buf[i] = ' ';
		else if (buf[i] == '\n')
			buf[i] = ' ';
	}
}

static void write_session(int ppid, bool forked)
{
	char exe[PATH_MAX] = "", cmdline[1024], comm[32], *text;
	const struct usft_trace_opts *o = &S.opts;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t len;

	if (n > 0)
		exe[n] = 0;
	cat_file("/proc/self/cmdline", cmdline, sizeof(cmdline), true);
	cat_file("/proc/self/comm", comm, sizeof(comm), false);
	len = 4096 + strlen(cmdline) + strlen(exe) +
	      (o->filter ? strlen(o->filter) : 0) + (o->notrace_list ? strlen(o->notrace_list) : 0) +
	      (o->graph_funcs ? strlen(o->graph_funcs) : 0) +
	      (o->graph_notrace ? strlen(o->graph_notrace) : 0);
	text = malloc(len);
	if (!text)
		return;
	snprintf(text, len,
		 "version=%s\ntracer=%s\npid=%d\nppid=%d\ncomm=%s\nexe=%s\ncmdline=%s\n"
		 "clock=%s\nbase_ns=%llu\nnr_cpus=%ld\nbuffer_size=%zu\nfilter=%s\n"
		 "notrace=%s\ngraph_funcs=%s\nmax_depth=%d\nunmatched=%s\nvalues=%d\ngraph_notrace=%s\n"
		 "%s",
		 USFT_VERSION_STRING, S.tracer->name, S.pid, ppid, comm, exe, cmdline,
		 usft_trace_clock_name(), usft_trace_base, sysconf(_SC_NPROCESSORS_CONF),
		 o->buffer_size, o->filter ? o->filter : "", o->notrace_list ? o->notrace_list : "",
		 o->graph_funcs ? o->graph_funcs : "", o->max_depth, S.unmatched,
		 /* EV_DATA records may follow events: readers that stream load instead */
		 (o->args_spec && *o->args_spec) || (o->retval_spec && *o->retval_spec) ||
		 o->funcgraph_retval, o->graph_notrace ? o->graph_notrace : "",
		 /* a fork child: its parent's names hold for what it never named */
		 forked ? "forked=1\n" : "");
	write_text_chunk(USFT_CHUNK_SESSION, text);
	free(text);
}

static void session_reset_writer_state(void)
{
	memset(sym_seen, 0, sizeof(sym_seen));
	for (size_t i = 0; i < S.sym_cap; i++)
		free((void *)S.syms[i].name);
	free(S.syms);
	S.syms = NULL;
	S.sym_cap = S.sym_n = 0;
	S.symbuf_len = 0;
	S.ntasks = 0;
	S.events = S.lost = 0;
}

/*
 * Whether the prepare handler took S.lock: S.active may change while the
 * fork runs (a session that starts or ends on another thread), and the
 * parent must unlock exactly what prepare locked (it once kept the lock:
 * the next fork in that thread waited for itself).
 */
static bool fork_locked;

static void atfork_prepare(void)
{
	if (S.active) {
		pthread_mutex_lock(&S.lock);
		fork_locked = true;
	}
}

static void atfork_parent(void)
{
	if (fork_locked) {
		fork_locked = false;
		pthread_mutex_unlock(&S.lock);
	}
}

static void atfork_child(void)
{
	int ppid;

	S.stopping = false;
	if (!S.active) {
		if (fork_locked)
			pthread_mutex_init(&S.lock, NULL);
		fork_locked = false;
		return;
	}
	fork_locked = false;
	usft_self_begin();
	pthread_mutex_init(&S.lock, NULL);
	S.wake_seq = 0;
	ppid = S.pid;
	S.pid = getpid();
	S.thread_running = false;
	dl_in_child = true;
	usft_tbuf_atfork_child();
	usft_profile_reset();
	session_reset_writer_state();
	S.drained0 = S.drained;
	S.given0 = usft_tbuf_given_back();
	write_session(ppid, true);
	start_writer();
	usft_self_end();
}

static const struct usft_tracer *find_tracer(const char *name)
{
	if (!name || !*name || !strcmp(name, "nop"))
		return NULL;
	if (!strcmp(name, "function"))
		return &usft_function_tracer;
	if (!strcmp(name, "function_graph") || !strcmp(name, "graph"))
		return &usft_graph_tracer;
	if (!strcmp(name, "profile") || !strcmp(name, "function_profile"))
		return &usft_profile_tracer;
	return NULL;
}

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

/* globs of @list that match no function, for the SESSION chunk */
static void note_unmatched(const char *list)
{
	struct ftrace_ops probe = { 0 };
	char *copy, *save = NULL;

	if (!list || !(copy = strdup(list)))
		return;
	for (char *g = strtok_r(copy, " \t\n,", &save); g; g = strtok_r(NULL, " \t\n,", &save)) {
		if (ftrace_set_filter(&probe, (unsigned char *)g, -1, 1) == -EINVAL) {
			size_t l = strlen(S.unmatched);

			snprintf(S.unmatched + l, sizeof(S.unmatched) - l, "%s%s", l ? " " : "", g);
		}
	}
	ftrace_free_filter(&probe);
	free(copy);
}

/*
 * Shared rings: every site's name now (and after each dlopen()), so the
 * events a salvage recovers from a dead process's rings are named too (the
 * writer names the others as it writes them).
 */
static void name_all_sites(void)	/* S.lock held */
{
	int n;
	unsigned long *ips;

	if (!usft_tbuf_ring_file())
		return;
	n = usft_match_sites("*", -1, NULL, 0);
	if (n <= 0 || !(ips = malloc((size_t)n * sizeof(*ips))))
		return;
	n = usft_match_sites("*", -1, ips, (size_t)n);
	for (int i = 0; i < n; i++)
		sym_lookup(ips[i]);
	free(ips);
	flush_syms();
}

static void notrace_hook(int begin)
{
	if (begin)
		usft_self_begin();
	else
		usft_self_end();
}

static int tracer_start(const struct usft_trace_opts *o)
{
	const struct usft_tracer *t = find_tracer(o->tracer);
	struct usft_stats st = { .sz = sizeof(st) };
	size_t ring = 0, prof = 0;
	int flags, ret;

	if (S.active)
		return -EBUSY;
	if (!t)
		return o->tracer && *o->tracer && strcmp(o->tracer, "nop") ? -EINVAL : 0;
	/* what the tracer's init finds loaded is not new to the writer */
	dl_note_seen();
	ret = usft_init();
	if (ret)
		return ret;
	if (o->clock && *o->clock) {
		ret = usft_set_trace_clock(o->clock);	/* -EINVAL, -EOPNOTSUPP */
		if (ret < 0)
			return ret;
	}
	usft_stat(&st);
	if (!st.nr_sites)
		return 0;	/* nothing patchable in this process (e.g. a shell it runs) */
	S.tracer = t;
	S.opts = *o;
	S.opts.filter = dup_or_null(o->filter);
	S.opts.notrace_list = dup_or_null(o->notrace_list);
	S.opts.graph_funcs = dup_or_null(o->graph_funcs);
	S.opts.graph_notrace = dup_or_null(o->graph_notrace);
	S.output = strdup(o->output && *o->output ? o->output : USFT_TRACE_DEFAULT_FILE);
	S.opts.output = S.output;
	/*
	 * 1 MiB: small enough to stay in a core's L2 cache lap after lap
	 * (the writer is woken at half, usft_tbuf_make_room()), where a
	 * ring of 32 MiB made every event's store a miss (docs/tracers.md,
	 * "Ring size"); with the default lossless policy a full ring waits
	 * for the writer, it loses nothing
	 */
	if (!S.opts.buffer_size)
		S.opts.buffer_size = USFT_RING_DEFAULT_BYTES;
	if (t->kind == USFT_TRACER_PROFILE || o->reusable)
		prof = st.nr_sites * 2 < 1024 ? 1024 : st.nr_sites * 2;
	if (t->kind != USFT_TRACER_PROFILE || o->reusable)
		ring = S.opts.buffer_size;
	{
		struct usft_pool_opts po = {
			.ring_bytes = ring, .prof_entries = prof, .max_threads = o->max_threads,
			.prefault_first = o->prefault, .lossless = o->lossless,
			.ring_dir = o->ring_dir, .ring_keep = o->ring_keep,
			.ring_anon = o->ring_anon,
		};

		ret = usft_tbuf_pool_init(&po);
		if (ret)
			return ret;
	}
	usft_tbuf_ring_live();	/* a later session of an attached process */
	S.drained0 = S.drained;
	S.given0 = usft_tbuf_given_back();
	flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (o->append ? 0 : O_TRUNC);
	S.fd = open(S.output, flags, 0600);	/* traces can hold sensitive data */
	if (S.fd < 0)
		return -errno;
	/* out of the way of the program's own low descriptor numbers */
	{
		int hi = fcntl(S.fd, F_DUPFD_CLOEXEC, 512);
		struct stat st;

		if (hi >= 0) {
			close(S.fd);
			S.fd = hi;
		}
		if (fstat(S.fd, &st)) {
			close(S.fd);
			S.fd = -1;
			return -errno;
		}
		S.fd_dev = st.st_dev;
		S.fd_ino = st.st_ino;
	}
	S.pid = getpid();
	note_unmatched(S.opts.filter);
	usft_trace_base = usft_trace_clock();
	write_session(getppid(), false);
	usft_tracing_on = 1;
	S.active = true;
	usft_tr_ops_install();
	ret = t->init(&S.opts);
	if (ret && ret != -ENOENT) {
		usft_tracing_on = 0;
		S.active = false;
		close(S.fd);
		S.fd = -1;
		return ret;
	}
	/*
	 * Under S.lock: S.active is set, so a thread that execs or flushes now
	 * (usft_tracer_drain(), usft_tracer_flush()) names addresses in the
	 * same symbol table and buffer.
	 */
	pthread_mutex_lock(&S.lock);
	name_all_sites();
	pthread_mutex_unlock(&S.lock);
	if (!S.atfork_done)
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	S.atfork_done = true;
	usft_set_notrace_hook(notrace_hook);
	usft_tbuf_exit_hook = wake_writer;
	usft_tbuf_kick_hook = wake_writer;
	start_writer();
	return 0;
}

/*
 * A session starts (tracer_start() through the tracer's init), ends
 * (usft_tracer_end() through its reset) and is refiltered after a dlopen
 * (usft_tracer_after_dlopen(), on any thread) one at a time.  Without it a
 * dlopen in another thread while a session starts found S.active set and
 * the filter not applied yet, and registered the tracer with an empty
 * filter: every function (an attached process, where `usft record -P`
 * starts and ends sessions while the program runs).  Taken before
 * ftrace_lock, never under it.
 */
static pthread_mutex_t session_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t session_once = PTHREAD_ONCE_INIT;

/* fork child: the one thread left holds nothing */
static void session_lock_child(void)
{
	pthread_mutex_init(&session_lock, NULL);
}

static void session_lock_init(void)
{
	pthread_atfork(NULL, NULL, session_lock_child);
}

static void session_lock_take(void)
{
	pthread_once(&session_once, session_lock_init);
	pthread_mutex_lock(&session_lock);
}

int usft_tracer_start(const struct usft_trace_opts *o)
{
	int ret;

	usft_self_begin();
	session_lock_take();
	ret = tracer_start(o);
	pthread_mutex_unlock(&session_lock);
	usft_self_end();
	return ret;
}

void usft_tracer_drain(void)
{
	if (!S.active || getpid() != S.pid)
		return;		/* a vfork child: the parent drains its own rings */
	usft_self_begin();
	flush_own_pending();
	pthread_mutex_lock(&S.lock);
	/* the image ends for every thread, whichever one execs */
	snapshot(true);
	usft_tbuf_ring_done();
	pthread_mutex_unlock(&S.lock);
	usft_self_end();
}

static void resolve_prof(const struct usft_prof_ent *e, void *arg)
{
	sym_lookup(e->ip);
}

void usft_tracer_flush(void)
{
	if (!S.active || getpid() != S.pid)
		return;
	usft_self_begin();
	pthread_mutex_lock(&S.lock);
	/* checked again under the lock: a detach may have ended the session */
	if (!S.active || !S.tracer) {
		pthread_mutex_unlock(&S.lock);
		usft_self_end();
		return;
	}
	drain_all();
	if (S.tracer->kind == USFT_TRACER_PROFILE) {
		usft_profile_snapshot(resolve_prof, NULL);
		flush_syms();
	}
	pthread_mutex_unlock(&S.lock);
	usft_self_end();
}

/* dlclose() unloaded the object mapped at [lo, hi) (called after drains) */
void usft_tracer_unmapped(unsigned long lo, unsigned long hi)
{
	uint64_t end = hi;
	struct iovec iov = { &end, sizeof(end) };
	bool any = false;

	if (!S.active || getpid() != S.pid)
		return;
	usft_self_begin();
	pthread_mutex_lock(&S.lock);
	if (!S.active) {
		/* the session ended meanwhile (a detach) */
		pthread_mutex_unlock(&S.lock);
		usft_self_end();
		return;
	}
	/* what the object's code recorded keeps its names */
	drain_all();
	for (size_t i = 0; i < S.sym_cap; i++) {
		struct sym_ent *e = &S.syms[i];

		if (e->addr >= lo && e->addr < hi) {
			e->stale = true;
			any = true;
		}
	}
	memset(sym_seen, 0, sizeof(sym_seen));
	if (any)
		write_chunk(USFT_CHUNK_UNMAP, 0, lo, &iov, 1);
	pthread_mutex_unlock(&S.lock);
	usft_self_end();
}

/*
 * The loader's counters of objects added and removed, and their values
 * when the tracer last refiltered: a change the writer sees that no
 * dlopen() of the shim reported was a load or an unload through a path
 * usft does not route (a dlopen() pointer taken with dlsym() before an
 * attach, libc's own loads, a library loaded before the attach that calls
 * dlopen(); docs/attach.md "Objects loaded after the attach").
 */
struct dl_gen {
	unsigned long long adds, subs;
};
static struct dl_gen dl_seen;	/* under session_lock */

/* the loader's counters, from the first object dl_iterate_phdr() reports */
static int dl_gen_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	*(struct dl_gen *)data = (struct dl_gen){ info->dlpi_adds, info->dlpi_subs };
	(void)size;
	return 1;
}

static struct dl_gen dl_gen_now(void)
{
	struct dl_gen g = { 0, 0 };

	dl_iterate_phdr(dl_gen_cb, &g);
	return g;
}

static void dl_note_seen(void)
{
	dl_seen = dl_gen_now();
}

/* the filters again over every object now loaded (kernel ftrace_module_enable()); session_lock held */
static void refilter(void)
{
	dl_note_seen();
	if (S.active && S.tracer && S.tracer->refilter) {
		S.tracer->refilter();
		if (getpid() == S.pid) {
			pthread_mutex_lock(&S.lock);
			name_all_sites();
			pthread_mutex_unlock(&S.lock);
		}
	}
}

void usft_tracer_after_dlopen(void)
{
	if (!__atomic_load_n(&S.active, __ATOMIC_RELAXED))
		return;
	usft_self_begin();
	session_lock_take();
	refilter();
	pthread_mutex_unlock(&session_lock);
	usft_self_end();
}

/*
 * The writer's pass: objects came or went since the last refilter.  Never
 * waits for session_lock: its holder may be ending the session, which
 * joins this thread (the next pass tries again).  An object unloaded this
 * way is released at the next update of the records (ftrace_records_sync(),
 * which every register and unregister runs first): its text is never
 * written once it is gone from the loader's list.  Not in a fork child
 * (dl_in_child).
 */
static void pick_up_objects(void)
{
	struct dl_gen now;

	if (dl_in_child)
		return;
	now = dl_gen_now();
	pthread_once(&session_once, session_lock_init);
	if (pthread_mutex_trylock(&session_lock))
		return;
	if ((now.adds != dl_seen.adds || now.subs != dl_seen.subs) &&
	    !__atomic_load_n(&S.stop, __ATOMIC_RELAXED))
		refilter();
	pthread_mutex_unlock(&session_lock);
}

void usft_tracer_stop(void)
{
	if (!S.active || getpid() != S.pid)
		return;
	/*
	 * One stopper: the program's exit can meet a STOP of the control
	 * thread or a finish trigger's usft-finish thread; the second waits
	 * (2 s at most) for the first to finish the file, never joins the
	 * writer a second time.
	 */
	if (__atomic_exchange_n(&S.stopping, true, __ATOMIC_ACQ_REL)) {
		for (int i = 0; i < 2000 && __atomic_load_n(&S.active, __ATOMIC_ACQUIRE); i++)
			usleep(1000);
		return;
	}
	__atomic_store_n(&usft_tracing_on, 0, __ATOMIC_RELEASE);
	usft_tbuf_set_lossless(false);
	usft_self_begin();
	flush_own_pending();
	stop_writer();
	pthread_mutex_lock(&S.lock);
	snapshot(true);
	usft_tbuf_ring_done();
	if (S.fd >= 0)
		close(S.fd);
	S.fd = -1;
	__atomic_store_n(&S.active, false, __ATOMIC_RELEASE);
	__atomic_store_n(&S.stopping, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&S.lock);
	usft_self_end();
}

/*
 * The end of a session in a process that goes on (a detach): the file is
 * finished as at exit, then the tracer unregisters (every site back to its
 * NOP, trampolines retired after a grace period) and the session's state is
 * freed, so that another session can start later.  The rings stay: threads
 * keep pointers to their slots.
 */
static void tracer_end(void)
{
	const struct usft_tracer *t = S.tracer;

	if (!S.active || getpid() != S.pid)
		return;
	usft_tracer_stop();
	usft_self_begin();
	if (t)
		t->reset();
	pthread_mutex_lock(&S.lock);
	free((char *)S.opts.filter);
	free((char *)S.opts.notrace_list);
	free((char *)S.opts.graph_funcs);
	free((char *)S.opts.graph_notrace);
	free(S.output);
	memset(&S.opts, 0, sizeof(S.opts));
	S.output = NULL;
	S.tracer = NULL;
	S.write_error = 0;
	S.unmatched[0] = 0;
	session_reset_writer_state();
	usft_tbuf_pool_trim();
	pthread_mutex_unlock(&S.lock);
	if (t && t->kind == USFT_TRACER_PROFILE)
		usft_profile_reset();
	usft_self_end();
}

void usft_tracer_end(void)
{
	usft_self_begin();
	session_lock_take();
	tracer_end();
	pthread_mutex_unlock(&session_lock);
	usft_self_end();
}

const char *usft_tracer_name(void)
{
	return S.active && S.tracer ? S.tracer->name : "nop";
}
