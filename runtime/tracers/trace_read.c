// SPDX-License-Identifier: MIT
/*
 * tracers/trace_read.c - parse a trace file (trace_format.h) into sessions,
 * names and events.  Untrusted input: every size is checked against what is
 * left (a chunk larger than the rest of the file is a cut chunk, never an
 * allocation); a chunk cut short at the end of the file (a process killed
 * while writing, or a full disk) ends the read with t->truncated set.
 * Fuzzed: tests/fuzz/fuzz_trace.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "trace_args.h"
#include "trace_read.h"

static char *dupn(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (p) {
		memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = read(fd, (char *)buf + done, len - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return (int)done == 0 ? 0 : 1;	/* 1: short */
		done += (size_t)r;
	}
	return 2;	/* complete */
}

/*
 * @size payload bytes into *buf (grown as needed, + 8 for the NUL ending
 * text payloads).  From a pipe a chunk's size is not checked against the
 * file: the buffer grows only as bytes arrive (1 MiB steps), so a header
 * claiming 1 TiB costs what the stream really holds.
 * Return: 2 complete, 1 short (the input ended), -errno.
 */
static int read_payload(int fd, char **buf, size_t *cap, uint64_t size)
{
	uint64_t done = 0;

	do {
		uint64_t want = size - done < (1U << 20) ? size - done : (1U << 20);
		int r;

		if (!*buf || done + want > *cap) {
			size_t ncap = *cap ? *cap : 4096;
			char *p;

			while (ncap < done + want)
				ncap *= 2;
			if (ncap > size)
				ncap = (size_t)size;
			p = realloc(*buf, ncap + 8);
			if (!p)
				return -ENOMEM;
			*buf = p;
			*cap = ncap;
		}
		r = want ? read_full(fd, *buf + done, (size_t)want) : 2;
		if (r != 2)
			return r < 0 ? r : 1;
		done += want;
	} while (done < size);
	return 2;
}

static void session_set(struct usft_rsession *s, const char *key, size_t klen,
			const char *val, size_t vlen)
{
#define KEY(k) (klen == sizeof(k) - 1 && !memcmp(key, k, klen))
	char **dst = NULL;

	if (KEY("tracer"))
		dst = &s->tracer;
	else if (KEY("comm"))
		dst = &s->comm;
	else if (KEY("exe"))
		dst = &s->exe;
	else if (KEY("cmdline"))
		dst = &s->cmdline;
	else if (KEY("clock"))
		dst = &s->clock;
	else if (KEY("unmatched"))
		dst = &s->unmatched;
	else if (KEY("version"))
		dst = &s->version;
	if (dst) {
		free(*dst);
		*dst = dupn(val, vlen);
		return;
	}
	if (KEY("ppid"))
		s->ppid = atoi(val);
	else if (KEY("forked"))
		s->forked = atoi(val) == 1;
	else if (KEY("base_ns"))
		s->base_ns = strtoull(val, NULL, 10);
	else if (KEY("nr_cpus"))
		s->nr_cpus = atoi(val);
	else if (KEY("values"))
		s->values = atoi(val) != 0;
#undef KEY
}

static void parse_session(struct usft_rsession *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end && *p) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		const char *eq = memchr(p, '=', (size_t)(eol - p));

		if (eq) {
			/* numbers are parsed in place: make them NUL-terminated copies */
			char *v = dupn(eq + 1, (size_t)(eol - eq - 1));

			if (v) {
				session_set(s, p, (size_t)(eq - p), v, strlen(v));
				free(v);
			}
		}
		p = nl ? nl + 1 : end;
	}
}

/* an EXIT chunk's "key=value" lines into words a user reads */
static void parse_exit(struct usft_rsession *s, const char *text)
{
	const char *st = strstr(text, "status="), *v;
	char buf[96], name[24] = "";

	if (!st)
		return;
	st += 7;
	if (!strncmp(st, "exited", 6)) {
		v = strstr(text, "code=");
		snprintf(buf, sizeof(buf), "exited %d", v ? atoi(v + 5) : 0);
	} else if (!strncmp(st, "killed", 6)) {
		v = strstr(text, "signame=");
		if (v)
			sscanf(v + 8, "%23[A-Z0-9+-]", name);
		v = strstr(text, "signal=");
		s->exit_signal = v ? atoi(v + 7) : 0;
		snprintf(buf, sizeof(buf), "killed by %s%s", name[0] ? name : "a signal",
			 strstr(text, "core=1") ? " (core dumped)" : "");
	} else {
		snprintf(buf, sizeof(buf), "died (status unknown)");
	}
	free(s->exit_status);
	s->exit_status = strdup(buf);
}

static struct usft_rsession *new_session(struct usft_trace *t, int pid)
{
	struct usft_rsession *s;

	if (t->nsess == t->sesscap) {
		size_t cap = t->sesscap ? t->sesscap * 2 : 16;
		void *p = realloc(t->sess, cap * sizeof(*t->sess));

		if (!p)
			return NULL;
		t->sess = p;
		t->sesscap = cap;
	}
	s = &t->sess[t->nsess++];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->nr_cpus = 1;
	return s;
}

/*
 * pid -> its latest session (a pid's chunks up to its next SESSION belong
 * to it): open addressing, so 10^5 processes read in linear time.
 */
struct pid_map {
	uint32_t *pid;
	uint32_t *sess;		/* index + 1; 0: empty */
	size_t cap, n;
};

static size_t pid_slot(const struct pid_map *m, uint32_t pid)
{
	size_t i = (size_t)((pid * 0x9e3779b97f4a7c15ULL) >> 20) & (m->cap - 1);

	while (m->sess[i] && m->pid[i] != pid)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int pid_map_set(struct pid_map *m, uint32_t pid, size_t sess)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap) {
		struct pid_map n = { .cap = m->cap ? m->cap * 2 : 256 };

		n.pid = calloc(n.cap, sizeof(*n.pid));
		n.sess = calloc(n.cap, sizeof(*n.sess));
		if (!n.pid || !n.sess) {
			free(n.pid);
			free(n.sess);
			return -ENOMEM;
		}
		for (size_t k = 0; k < m->cap; k++) {
			if (!m->sess[k])
				continue;
			i = pid_slot(&n, m->pid[k]);
			n.pid[i] = m->pid[k];
			n.sess[i] = m->sess[k];
		}
		n.n = m->n;
		free(m->pid);
		free(m->sess);
		*m = n;
	}
	i = pid_slot(m, pid);
	if (!m->sess[i])
		m->n++;
	m->pid[i] = pid;
	m->sess[i] = (uint32_t)sess + 1;
	return 0;
}

static int find_session(const struct pid_map *m, uint32_t pid)
{
	return m->cap ? (int)m->sess[pid_slot(m, pid)] - 1 : -1;
}

char *(*usft_trace_name_hook)(const char *name);

static char *sym_dup(const char *name, size_t len)
{
	char *n = len ? dupn(name, len) : NULL, *h;

	if (n && usft_trace_name_hook && (h = usft_trace_name_hook(n))) {
		free(n);
		n = h;
	}
	return n;
}

static void add_sym(struct usft_rsession *s, uint64_t addr, uint64_t off, const char *name,
		    size_t len)
{
	if (s->nsyms == s->symcap) {
		size_t cap = s->symcap ? s->symcap * 2 : 1024;
		void *p = realloc(s->syms, cap * sizeof(*s->syms));

		if (!p)
			return;
		s->syms = p;
		s->symcap = cap;
	}
	s->syms[s->nsyms++] = (struct usft_rsym){ addr, off, sym_dup(name, len), s->epoch };
	s->syms_sorted = false;
}

static void parse_syms(struct usft_rsession *s, const char *buf, size_t len)
{
	size_t off = 0;

	while (off + sizeof(struct usft_sym_rec) <= len) {
		struct usft_sym_rec r;
		size_t rec;

		memcpy(&r, buf + off, sizeof(r));
		rec = sizeof(r) + (((size_t)r.namelen + 8) & ~7UL);
		if (r.namelen > 65536 || off + rec > len)
			return;
		add_sym(s, r.addr, r.offset, buf + off + sizeof(r), r.namelen);
		off += rec;
	}
}

static void parse_profile(struct usft_rsession *s, const char *buf, size_t len)
{
	size_t off = 0, cap = 0;

	/* a later snapshot replaces an earlier one */
	for (size_t i = 0; i < s->nprof; i++)
		free(s->prof[i].name);
	free(s->prof);
	s->prof = NULL;
	s->nprof = 0;
	while (off + sizeof(struct usft_prof_rec) <= len) {
		struct usft_prof_rec r;
		size_t rec;

		memcpy(&r, buf + off, sizeof(r));
		rec = sizeof(r) + (((size_t)r.namelen + 8) & ~7UL);
		if (r.namelen > 65536 || off + rec > len)
			return;
		if (s->nprof == cap) {
			void *p = realloc(s->prof, (cap = cap ? cap * 2 : 64) * sizeof(*s->prof));

			if (!p)
				return;
			s->prof = p;
		}
		s->prof[s->nprof++] = (struct usft_rprof){
			r.addr, r.hits, r.time_ns, r.time_sq,
			sym_dup(buf + off + sizeof(r), r.namelen) };
		off += rec;
	}
}

/* appended in file order; sorted by tid (the last name kept) at the end of the read */
static void add_task(struct usft_rsession *s, int tid, const char *comm, size_t len)
{
	struct usft_rtask *k;

	if (s->ntasks == s->taskcap) {
		size_t cap = s->taskcap ? s->taskcap * 2 : 16;
		void *p = realloc(s->tasks, cap * sizeof(*s->tasks));

		if (!p)
			return;
		s->tasks = p;
		s->taskcap = cap;
	}
	k = &s->tasks[s->ntasks];
	memset(k, 0, sizeof(*k));
	k->tid = tid;
	k->seq = (uint32_t)s->ntasks++;
	memcpy(k->comm, comm, len < 15 ? len : 15);
}

static int task_cmp(const void *a, const void *b)
{
	const struct usft_rtask *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void finish_tasks(struct usft_rsession *s)
{
	size_t n = 0;

	if (!s->ntasks)
		return;
	qsort(s->tasks, s->ntasks, sizeof(*s->tasks), task_cmp);
	for (size_t i = 0; i < s->ntasks; i++) {
		if (n && s->tasks[n - 1].tid == s->tasks[i].tid)
			n--;	/* a later name of the same thread */
		s->tasks[n++] = s->tasks[i];
	}
	s->ntasks = n;
}

static struct usft_revent *push_event(struct usft_trace *t)
{
	if (t->nev == t->evcap) {
		size_t cap = t->evcap ? t->evcap * 2 : 65536;
		void *p = realloc(t->ev, cap * sizeof(*t->ev));

		if (!p)
			return NULL;
		t->ev = p;
		t->evcap = cap;
	}
	return &t->ev[t->nev++];
}

/* an EV_DATA payload for the event @seq: formatted now, kept by seq */
static void add_values(struct usft_trace *t, uint32_t seq, unsigned int kind, const uint64_t *w,
		       size_t n)
{
	char buf[1024];
	struct usft_rvalue *v;

	if (kind < USFT_DATA_ARGS || kind > USFT_DATA_RETVAL_RAW ||
	    !usft_format_values(w, n, buf, sizeof(buf)))
		return;		/* a malformed payload shows nothing */
	if (t->nvals == t->valcap) {
		size_t nc = t->valcap ? t->valcap * 2 : 64;

		v = realloc(t->vals, nc * sizeof(*v));
		if (!v)
			return;
		t->vals = v;
		t->valcap = nc;
	}
	v = &t->vals[t->nvals];
	v->seq = seq;
	v->kind = kind;
	v->text = strdup(buf);
	if (v->text)
		t->nvals++;
}

/* an EV_PRINT's text from its @n words: a NUL-terminated copy, NULL if none */
char *usft_print_text_dup(const uint64_t *w, size_t n)
{
	const char *c = (const char *)w;
	size_t len = strnlen(c, n * 8);
	char *text = malloc(len + 1);

	if (text) {
		memcpy(text, c, len);
		text[len] = 0;
	}
	return text;
}

/* the text of print event @seq, kept with the values (freed with them); NULL none */
static char *keep_text(struct usft_trace *t, uint32_t seq, const uint64_t *w, size_t n)
{
	struct usft_rvalue *v;

	if (t->nvals == t->valcap) {
		size_t nc = t->valcap ? t->valcap * 2 : 64;

		v = realloc(t->vals, nc * sizeof(*v));
		if (!v)
			return NULL;
		t->vals = v;
		t->valcap = nc;
	}
	v = &t->vals[t->nvals];
	v->seq = seq;
	v->kind = USFT_RVAL_PRINT;
	v->text = usft_print_text_dup(w, n);
	if (!v->text)
		return NULL;
	t->nvals++;
	return v->text;
}

/*
 * Asked once per event by the JSON writer: constant time (a scan of the
 * sessions here made a file of 70,000 processes quadratic to print).
 */
bool usft_trace_has_values(const struct usft_trace *t)
{
	return t->nvals || (t->index && t->sess_values);
}

const char *usft_trace_values(const struct usft_trace *t, const struct usft_revent *e,
			      unsigned int kind)
{
	size_t lo = 0, hi = t->nvals;

	if (t->index)
		return usft_rindex_values(t, e, kind);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->vals[mid].seq < e->seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < t->nvals && t->vals[lo].seq == e->seq; lo++)
		if (t->vals[lo].kind == kind)
			return t->vals[lo].text;
	return NULL;
}

/* the frames of the stack event last pushed, as EV_STACK_FRAME events after it */
static bool push_stack_frames(struct usft_trace *t, const uint64_t *f, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		struct usft_revent *r = push_event(t);

		if (!r)
			return false;
		*r = t->ev[t->nev - 2];
		r->seq = (uint32_t)(t->nev - 1);
		r->w1 = usft_stack_frame_w1(f[k], (unsigned int)k);
		r->aux = f[k];
	}
	return true;
}

static void parse_events(struct usft_trace *t, int si, int tid, uint64_t lost,
			 const uint64_t *w, size_t nwords, bool load)
{
	size_t first_ev = t->nev;
	struct usft_rsession *s = &t->sess[si];
	size_t i = 0;

	if (lost) {
		s->lost += lost;
		t->lost += lost;
		if (load) {
			struct usft_revent *e = push_event(t);

			if (e) {
				uint64_t ts = nwords >= 2 ? s->base_ns + (w[0] & EV_TS_MASK) : s->base_ns;

				*e = (struct usft_revent){ .ts = ts, .w1 = (uint64_t)EV_LOST << EV_TYPE_SHIFT,
					.aux = lost, .tid = (uint32_t)tid, .seq = (uint32_t)t->nev,
					.sess = (uint32_t)si, .cpu = 0, .epoch = s->epoch };
			}
		}
	}
	while (i + 2 <= nwords) {
		unsigned int type = (unsigned int)(w[i + 1] >> EV_TYPE_SHIFT);
		unsigned int n = usft_ev_len(w[i], w[i + 1]);

		if (!n || i + n > nwords)
			break;
		if (type == EV_DATA) {
			/* the values of this chunk's last event (same function) */
			if (load && t->nev > first_ev &&
			    usft_rev_ip(&t->ev[t->nev - 1]) == (w[i + 1] & EV_IP_MASK) &&
			    usft_rev_type(&t->ev[t->nev - 1]) != EV_LOST)
				add_values(t, t->ev[t->nev - 1].seq,
					   (unsigned int)(w[i] >> EV_DATA_KIND_SHIFT) & 0xff,
					   &w[i + 2], n - 2);
			i += n;
			continue;
		}
		s->events++;
		t->events++;
		if (load) {
			struct usft_revent *e = push_event(t);

			if (!e)
				return;
			e->ts = s->base_ns + (w[i] & EV_TS_MASK);
			e->cpu = (uint16_t)(w[i] >> EV_CPU_SHIFT);
			e->w1 = w[i + 1];
			e->aux = n == 3 ? w[i + 2] : 0;
			e->tid = (uint32_t)tid;
			e->seq = (uint32_t)t->nev;
			e->sess = (uint32_t)si;
			e->epoch = s->epoch;
			if (type == EV_STACK) {
				e->aux = 0;
				if (!push_stack_frames(t, &w[i + 2], n - 2))
					return;
			}
			if (type == EV_PRINT) {
				e->w1 &= ~((uint64_t)EV_DEPTH_MAX << EV_DEPTH_SHIFT);
				e->aux = (uint64_t)(uintptr_t)keep_text(t, e->seq, &w[i + 2], n - 2);
			}
			if (type == EV_GRAPH_LEAF || type == EV_GRAPH_LEAF_GONE) {
				/* a leaf is an entry and a return: the readers see both */
				struct usft_revent *r = push_event(t);
				uint64_t keep = (EV_IP_MASK | ((uint64_t)EV_DEPTH_MAX << EV_DEPTH_SHIFT));

				if (!r)
					return;
				e = &t->ev[t->nev - 2];
				*r = *e;
				r->seq = (uint32_t)(t->nev - 1);
				r->ts = s->base_ns + (e->aux & EV_TS_MASK);
				r->w1 = (e->w1 & keep) | ((uint64_t)(type == EV_GRAPH_LEAF ? EV_GRAPH_RET :
								 EV_GRAPH_GONE) << EV_TYPE_SHIFT);
				e->w1 = (e->w1 & keep) | ((uint64_t)EV_GRAPH_ENT << EV_TYPE_SHIFT);
				e->aux = 0;
				r->aux = 0;
			}
		}
		if (type == EV_GRAPH_LEAF || type == EV_GRAPH_LEAF_GONE) {
			/* one record, but an entry and a return, as the kernel counts */
			s->events++;
			t->events++;
		}
		i += n;
	}
}

/* what read_chunks() does with EVENTS payloads */
enum read_mode { READ_COUNT, READ_LOAD, READ_INDEX };

static int read_chunks(int fd, struct usft_trace *t, enum read_mode mode);

int usft_trace_read_fd(int fd, struct usft_trace *t, bool load_events)
{
	struct stat st;

	if (load_events)
		return read_chunks(fd, t, READ_LOAD);
	/*
	 * Counts only (record's summary): a regular file's EVENTS payloads are
	 * skipped, the counts taken from each session's END (as
	 * usft_trace_open() does) instead of a parse of every event.
	 */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode))
		return read_chunks(fd, t, READ_INDEX);
	return read_chunks(fd, t, READ_COUNT);
}

/*
 * A pipe (or any file that is not a regular one) copied into an unlinked
 * file in TMPDIR, so that it streams as a file does: memory stays bounded
 * whatever the trace's size; the disk holds it meanwhile.
 * Return: the copy's descriptor at offset 0, or -errno (-ENOSPC: no room).
 */
static int spool(int in)
{
	const size_t len = 1U << 20;
	const char *dir = getenv("TMPDIR");
	char path[4096], *buf;
	int fd, ret = 0;

	if (!dir || !*dir)
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		/* a file system without O_TMPFILE: a named one, removed at once */
		if (snprintf(path, sizeof(path), "%s/usft-report-XXXXXX", dir) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		fd = mkostemp(path, O_CLOEXEC);
		if (fd < 0)
			return -errno;
		unlink(path);
	}
	buf = malloc(len);
	while (buf && !ret) {
		ssize_t r = read(in, buf, len), w = 0;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ret = r ? -errno : 0;
			break;
		}
		while (w < r && !ret) {
			ssize_t k = write(fd, buf + w, (size_t)(r - w));

			if (k > 0)
				w += k;
			else if (k < 0 && errno != EINTR)
				ret = -errno;
			else if (!k)
				ret = -ENOSPC;
		}
	}
	if (!buf)
		ret = -ENOMEM;
	free(buf);
	if (!ret && lseek(fd, 0, SEEK_SET))
		ret = -errno;
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

int usft_trace_open(const char *path, struct usft_trace *t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;
	struct stat st;

	memset(t, 0, sizeof(*t));
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		int copy = spool(fd);

		close(fd);
		if (copy < 0)
			return copy;
		fd = copy;
	}
	/* the index keeps its own descriptor (dup'd); values are read as they stream */
	ret = read_chunks(fd, t, READ_INDEX);
	close(fd);
	return ret;
}

static int read_chunks(int fd, struct usft_trace *t, enum read_mode mode)
{
	bool load_events = mode == READ_LOAD;
	struct usft_chunk_hdr h;
	struct pid_map pids = { 0 };
	struct stat st;
	char *buf = NULL;
	uint64_t left = UINT64_MAX;	/* bytes after the current header */
	size_t cap = 0;
	int ret = 0, chunks = 0;
	bool any = false;

	memset(t, 0, sizeof(*t));
	/* a size larger than what the file holds is a cut chunk, not an allocation */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode)) {
		off_t pos = lseek(fd, 0, SEEK_CUR);

		left = pos >= 0 && st.st_size >= pos ? (uint64_t)(st.st_size - pos) : 0;
	}
	for (;;) {
		int r = read_full(fd, &h, sizeof(h));
		int si;

		if (r == 0)
			break;
		if (r < 0) {
			ret = r;
			break;
		}
		any = true;
		if (r == 2 && left != UINT64_MAX)
			left = left >= sizeof(h) ? left - sizeof(h) : 0;
		if (r == 1 || memcmp(h.magic, USFT_TRACE_MAGIC, 4) || h.version != USFT_TRACE_VERSION ||
		    h.size > (1ULL << 40)) {
			if (!chunks)
				ret = -EINVAL;
			else
				t->truncated = true;
			break;
		}
		if (h.size > left) {
			/* the file ends inside this chunk */
			if (!chunks)
				ret = -EINVAL;
			else
				t->truncated = true;
			break;
		}
		if (mode == READ_INDEX && h.type == USFT_CHUNK_EVENTS && left != UINT64_MAX) {
			off_t at = lseek(fd, 0, SEEK_CUR);
			int si = find_session(&pids, h.pid);

			left -= h.size;
			chunks++;
			if (at < 0 || lseek(fd, (off_t)h.size, SEEK_CUR) < 0) {
				ret = -errno;
				break;
			}
			if (si < 0)
				continue;
			if (h.arg) {
				t->sess[si].lost += h.arg;
				t->lost += h.arg;
			}
			r = usft_rindex_add(t, fd, (unsigned int)si, h.tid,
					    (uint64_t)at - sizeof(h), t->sess[si].epoch);
			if (r) {
				ret = r;
				break;
			}
			continue;
		}
		r = read_payload(fd, &buf, &cap, h.size);
		if (r < 0) {
			ret = r;
			break;
		}
		if (r != 2) {
			t->truncated = true;
			break;
		}
		if (left != UINT64_MAX)
			left -= h.size;
		chunks++;
		buf[h.size] = 0;
		if (h.type == USFT_CHUNK_SESSION) {
			struct usft_rsession *s = new_session(t, (int)h.pid);

			if (!s || pid_map_set(&pids, h.pid, t->nsess - 1)) {
				ret = -ENOMEM;
				break;
			}
			parse_session(s, buf, h.size);
			t->sess_values |= s->values;
			s->text = dupn(buf, strnlen(buf, h.size));
			/* a fork child: its parent as the fork left it (usft_trace_sym()) */
			s->parent = -1;
			if (s->forked && s->ppid > 0 && (uint32_t)s->ppid != h.pid &&
			    (si = find_session(&pids, (uint32_t)s->ppid)) >= 0) {
				s->parent = si;
				s->parent_epoch = t->sess[si].epoch;
			}
			continue;
		}
		si = find_session(&pids, h.pid);
		if (si < 0)
			continue;	/* no SESSION for this pid: nothing to name it with */
		switch (h.type) {
		case USFT_CHUNK_EVENTS:
			parse_events(t, si, (int)h.tid, h.arg, (const uint64_t *)buf, h.size / 8,
				     load_events);
			break;
		case USFT_CHUNK_TASK:
			add_task(&t->sess[si], (int)h.tid, buf, strnlen(buf, h.size));
			break;
		case USFT_CHUNK_SYMS:
			parse_syms(&t->sess[si], buf, h.size);
			break;
		case USFT_CHUNK_PROFILE:
			parse_profile(&t->sess[si], buf, h.size);
			break;
		case USFT_CHUNK_UNMAP:
			if (t->sess[si].epoch < UINT16_MAX)
				t->sess[si].epoch++;
			break;
		case USFT_CHUNK_END: {
			/* events of threads that found no ring slot count as lost */
			const char *ns = strstr(buf, "no_slot=");
			uint64_t n = ns ? strtoull(ns + 8, NULL, 10) : 0;
			struct usft_rsession *s = &t->sess[si];

			if (n > s->no_slot) {
				s->lost += n - s->no_slot;
				t->lost += n - s->no_slot;
				s->no_slot = n;
			}
			s->ended = true;
			ns = strstr(buf, "salvaged=");
			if (ns)
				s->salvaged = strtoull(ns + 9, NULL, 10);
			ns = strstr(buf, "events=");
			if (ns)
				s->end_events = strtoull(ns + 7, NULL, 10);
			break;
		}
		case USFT_CHUNK_EXIT:
			parse_exit(&t->sess[si], buf);
			break;
		default:
			break;
		}
	}
	free(buf);
	free(pids.pid);
	free(pids.sess);
	if (!ret && !any)
		ret = -ENODATA;
	if (ret) {
		usft_trace_free(t);
		return ret;
	}
	for (size_t i = 0; i < t->nsess; i++)
		finish_tasks(&t->sess[i]);
	if (mode == READ_INDEX) {
		/* counts without reading the events: END's, or the chunks' own */
		t->events = 0;
		for (size_t i = 0; i < t->nsess; i++)
			t->sess[i].events = t->sess[i].ended ? t->sess[i].end_events : 0;
		usft_rindex_count(t);
		for (size_t i = 0; i < t->nsess; i++)
			t->events += t->sess[i].events;
	}
	return 0;
}

int usft_trace_read(const char *path, struct usft_trace *t, bool load_events)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	memset(t, 0, sizeof(*t));
	if (fd < 0)
		return -errno;
	ret = usft_trace_read_fd(fd, t, load_events);
	close(fd);
	return ret;
}

void usft_trace_free(struct usft_trace *t)
{
	for (size_t i = 0; i < t->nsess; i++) {
		struct usft_rsession *s = &t->sess[i];

		free(s->tracer);
		free(s->comm);
		free(s->exe);
		free(s->cmdline);
		free(s->clock);
		free(s->unmatched);
		free(s->version);
		free(s->text);
		free(s->exit_status);
		for (size_t k = 0; k < s->nsyms; k++)
			free(s->syms[k].name);
		free(s->syms);
		free(s->tasks);
		for (size_t k = 0; k < s->nprof; k++)
			free(s->prof[k].name);
		free(s->prof);
	}
	free(t->sess);
	free(t->ev);
	for (size_t i = 0; i < t->nvals; i++)
		free(t->vals[i].text);
	free(t->vals);
	usft_rindex_free(t->index);
	memset(t, 0, sizeof(*t));
}

static int ev_cmp(const void *a, const void *b)
{
	const struct usft_revent *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->sess != y->sess)
		return x->sess < y->sess ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void usft_trace_sort(struct usft_trace *t)
{
	if (!t->sorted && t->nev)
		qsort(t->ev, t->nev, sizeof(*t->ev), ev_cmp);
	t->sorted = true;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct usft_rsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->epoch < y->epoch ? -1 : x->epoch > y->epoch;
}

const char *usft_trace_sym(struct usft_trace *t, unsigned int sess, uint32_t epoch,
			   uint64_t addr, uint64_t *offset)
{
	struct usft_rsession *s;
	size_t lo = 0, hi;

again:
	if (sess >= t->nsess)
		return NULL;
	s = &t->sess[sess];
	lo = 0;
	if (!s->syms_sorted) {
		if (s->nsyms)
			qsort(s->syms, s->nsyms, sizeof(*s->syms), sym_cmp);
		s->syms_sorted = true;
	}
	hi = s->nsyms;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->syms[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < s->nsyms && s->syms[lo].addr == addr) {
		/* the last name given at or before @epoch (else the first one) */
		while (lo + 1 < s->nsyms && s->syms[lo + 1].addr == addr &&
		       s->syms[lo + 1].epoch <= epoch)
			lo++;
		if (offset)
			*offset = s->syms[lo].offset;
		return s->syms[lo].name;
	}
	/*
	 * A fork child that unmapped nothing since the fork has its parent's
	 * address space: the parent's name of the time.  The events its
	 * writer never wrote (recovered from its rings after it died) are
	 * named this way; earlier sessions only, so the walk ends.
	 */
	if (s->forked && s->parent >= 0 && (unsigned int)s->parent < sess && !epoch) {
		epoch = s->parent_epoch;
		sess = (unsigned int)s->parent;
		goto again;
	}
	return NULL;
}

const char *usft_trace_comm(struct usft_trace *t, unsigned int sess, int tid)
{
	struct usft_rsession *s;

	if (sess >= t->nsess)
		return "<...>";
	s = &t->sess[sess];
	/* sorted by tid at the end of the read */
	for (size_t lo = 0, hi = s->ntasks; lo < hi;) {
		size_t mid = (lo + hi) / 2;

		if (s->tasks[mid].tid == tid)
			return s->tasks[mid].comm;
		if (s->tasks[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return s->comm ? s->comm : "<...>";
}

const char *usft_trace_tracer(const struct usft_trace *t)
{
	for (size_t i = 0; i < t->nsess; i++)
		if (t->sess[i].tracer && *t->sess[i].tracer)
			return t->sess[i].tracer;
	return "nop";
}
