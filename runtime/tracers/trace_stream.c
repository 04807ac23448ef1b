// SPDX-License-Identifier: MIT
/*
 * tracers/trace_stream.c - a trace's events one at a time, in time order,
 * without holding them (trace_read.h: usft_trace_open(), usft_trace_iter_*).
 *
 * usft_trace_open() leaves every EVENTS chunk in the file and notes where
 * it is: one index entry per chunk, chained per thread (a "stream": one
 * session's one tid).  The iterator merges the streams by time with a heap
 * of their heads; each stream reads its chunks through a window of at most
 * STREAM_WINDOW bytes and keeps up to USFT_ITER_REORDER decoded events
 * sorted, which orders what one thread wrote slightly out of order (a
 * signal handler's events before the entry it interrupted).  Memory: the
 * index, and per stream a window and the reorder buffer, whatever the
 * trace's length; time: linear in it (log of the number of threads per
 * event).  Loaded traces (usft_trace_read()) are walked in their sorted
 * array through the same interface.
 *
 * -A/-R values (EV_DATA after the event they belong to) are formatted when
 * the stream decodes them, into a small ring per stream indexed by the
 * event's sequence number: an event is returned (or peeked) at most
 * USFT_ITER_REORDER events after it was decoded, so its values are still
 * there; usft_trace_values() finds them through the live iterator.
 *
 * Untrusted input: each chunk header is read again and checked (magic,
 * type, size within the file) before its words are used.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "trace_args.h"
#include "trace_read.h"

#define STREAM_WINDOW	(16U << 10)	/* bytes of a chunk read at once */
/* events whose values a stream keeps (a power of 2, well above the window) */
#define VAL_SLOTS	(4U * USFT_ITER_REORDER)
#define VAL_KINDS	(USFT_DATA_RETVAL_RAW - USFT_DATA_ARGS + 1)

struct rchunk {
	uint64_t off;		/* the chunk's header */
	uint32_t next;		/* the stream's next chunk, UINT32_MAX: none */
	uint16_t epoch;
	uint16_t pad;
};

struct rstream_meta {
	uint32_t sess, tid;
	uint32_t first, last;	/* chunk indexes */
};

struct usft_rindex {
	int fd;
	struct rchunk *c;
	size_t nc, ccap;
	struct rstream_meta *s;
	size_t ns, scap;
	uint32_t *hash;		/* stream index + 1; 0: empty */
	size_t hcap;
	struct usft_trace_iter *live;	/* the iterator whose values usft_trace_values() sees */
};

static size_t key_hash(uint32_t sess, uint32_t tid, size_t cap)
{
	return (size_t)(((tid * 0x9e3779b97f4a7c15ULL) ^ (sess * 0xc2b2ae3d27d4eb4fULL)) >> 17) &
	       (cap - 1);
}

static int rehash(struct usft_rindex *x)
{
	size_t cap = x->hcap ? x->hcap * 2 : 1024;
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < x->ns; i++) {
		size_t k = key_hash(x->s[i].sess, x->s[i].tid, cap);

		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = (uint32_t)i + 1;
	}
	free(x->hash);
	x->hash = h;
	x->hcap = cap;
	return 0;
}

static struct rstream_meta *stream_of(struct usft_rindex *x, uint32_t sess, uint32_t tid)
{
	size_t k;

	if ((x->ns + 1) * 2 > x->hcap && rehash(x))
		return NULL;
	for (k = key_hash(sess, tid, x->hcap); x->hash[k]; k = (k + 1) & (x->hcap - 1)) {
		struct rstream_meta *m = &x->s[x->hash[k] - 1];

		if (m->sess == sess && m->tid == tid)
			return m;
	}
	if (x->ns == x->scap) {
		size_t cap = x->scap ? x->scap * 2 : 64;
		void *p = realloc(x->s, cap * sizeof(*x->s));

		if (!p)
			return NULL;
		x->s = p;
		x->scap = cap;
	}
	x->s[x->ns] = (struct rstream_meta){ sess, tid, UINT32_MAX, UINT32_MAX };
	x->hash[k] = (uint32_t)++x->ns;
	return &x->s[x->ns - 1];
}

int usft_rindex_add(struct usft_trace *t, int fd, unsigned int sess, uint32_t tid, uint64_t off,
		    uint16_t epoch)
{
	struct usft_rindex *x = t->index;
	struct rstream_meta *m;

	if (!x) {
		x = t->index = calloc(1, sizeof(*x));
		if (!x)
			return -ENOMEM;
		x->fd = dup(fd);
		if (x->fd < 0)
			return -errno;
	}
	if (x->nc >= UINT32_MAX - 1)
		return -EFBIG;
	if (x->nc == x->ccap) {
		size_t cap = x->ccap ? x->ccap * 2 : 1024;
		void *p = realloc(x->c, cap * sizeof(*x->c));

		if (!p)
			return -ENOMEM;
		x->c = p;
		x->ccap = cap;
	}
	m = stream_of(x, sess, tid);
	if (!m)
		return -ENOMEM;
	x->c[x->nc] = (struct rchunk){ off, UINT32_MAX, epoch, 0 };
	if (m->last != UINT32_MAX)
		x->c[m->last].next = (uint32_t)x->nc;
	else
		m->first = (uint32_t)x->nc;
	m->last = (uint32_t)x->nc++;
	return 0;
}

void usft_rindex_free(struct usft_rindex *x)
{
	if (!x)
		return;
	if (x->fd >= 0)
		close(x->fd);
	free(x->c);
	free(x->s);
	free(x->hash);
	free(x);
}

/* ---- one stream --------------------------------------------------------- */

/* the index of @sess/@tid's stream, -1 if none (never adds one) */
static long stream_find(const struct usft_rindex *x, uint32_t sess, uint32_t tid)
{
	if (!x->hcap)
		return -1;
	for (size_t k = key_hash(sess, tid, x->hcap); x->hash[k]; k = (k + 1) & (x->hcap - 1)) {
		const struct rstream_meta *m = &x->s[x->hash[k] - 1];

		if (m->sess == sess && m->tid == tid)
			return (long)(x->hash[k] - 1);
	}
	return -1;
}

/* the values of one decoded event, by kind */
struct sval {
	uint32_t seq;
	char *text[VAL_KINDS];
};

struct rstream {
	uint32_t sess, tid;
	uint32_t chunk;		/* the chunk being read, UINT32_MAX: done */
	uint64_t at, end;	/* file offsets of the next unread word, the chunk's end */
	uint64_t *w;		/* read window */
	size_t nw, pos, wcap;
	uint16_t epoch;
	uint32_t seq;
	struct usft_revent win[USFT_ITER_REORDER];	/* sorted, [head, head + n) */
	unsigned int head, n;
	/* an EV_STACK at pos being split into its frames: the next one, how many */
	unsigned int stk_k, stk_n;
	struct usft_revent stk;
	/* the last event decoded in this chunk (EV_DATA belongs to it), valid if last_ok */
	struct usft_revent last_ev;
	bool last_ok;
	struct sval *vals;	/* VAL_SLOTS, by seq; NULL: the session has no values */
};

struct usft_trace_iter {
	struct usft_trace *t;
	/* file mode */
	struct rstream *st;
	size_t nst;
	uint32_t *heap;		/* stream indexes, min-heap by their first event */
	size_t nheap;
	long last;		/* the stream of the event returned, out of the heap; -1 */
	/* array mode */
	size_t i;
	size_t *next;		/* per event, the next of its thread */
	unsigned char *done;
	struct usft_revent cur;
	int err;
};

/*
 * An EV_PRINT's text is the iterator's: malloc'd when the event is decoded,
 * held by the window, then by it->cur until the next call, then freed.
 */
static void ev_free_text(struct usft_revent *e)
{
	if ((unsigned int)(e->w1 >> EV_TYPE_SHIFT) == EV_PRINT && e->aux) {
		free((void *)(uintptr_t)e->aux);
		e->aux = 0;
	}
}

static int ev_less(const struct usft_revent *x, const struct usft_revent *y)
{
	if (x->ts != y->ts)
		return x->ts < y->ts;
	if (x->sess != y->sess)
		return x->sess < y->sess;
	if (x->tid != y->tid)
		return x->tid < y->tid;
	return x->seq < y->seq;
}

/* a decoded event into the reorder window (mostly at its end) */
static void win_insert(struct rstream *s, const struct usft_revent *e)
{
	unsigned int k;

	if (s->head + s->n == USFT_ITER_REORDER) {
		memmove(s->win, s->win + s->head, s->n * sizeof(*s->win));
		s->head = 0;
	}
	k = s->head + s->n;
	while (k > s->head && ev_less(e, &s->win[k - 1])) {
		s->win[k] = s->win[k - 1];
		k--;
	}
	s->win[k] = *e;
	s->n++;
}

/* the next chunk of the stream: its header checked, the lost count as an event */
static int open_chunk(struct usft_trace_iter *it, struct rstream *s)
{
	struct usft_rindex *x = it->t->index;
	struct usft_rsession *ss = &it->t->sess[s->sess];
	struct usft_chunk_hdr h;
	const struct rchunk *c = &x->c[s->chunk];

	if (pread(x->fd, &h, sizeof(h), (off_t)c->off) != sizeof(h))
		return -EIO;
	if (memcmp(h.magic, USFT_TRACE_MAGIC, 4) || h.type != USFT_CHUNK_EVENTS || h.tid != s->tid)
		return -EINVAL;		/* the file changed under us */
	s->at = c->off + sizeof(h);
	s->end = s->at + (h.size & ~7ULL);
	s->epoch = c->epoch;
	s->nw = s->pos = 0;
	s->last_ok = false;	/* values never belong to another chunk's event */
	if (h.arg) {
		struct usft_revent e = { .ts = ss->base_ns, .w1 = (uint64_t)EV_LOST << EV_TYPE_SHIFT,
					 .aux = h.arg, .tid = s->tid, .seq = s->seq++,
					 .sess = s->sess, .epoch = s->epoch };
		uint64_t w0;

		/* at the time of the chunk's first event, as the loading reader does */
		if (h.size >= 16 && pread(x->fd, &w0, 8, (off_t)s->at) == 8)
			e.ts = ss->base_ns + (w0 & EV_TS_MASK);
		win_insert(s, &e);
	}
	return 0;
}

/* words [pos, nw) are left; read more of the chunk after them */
static int refill_words(struct usft_trace_iter *it, struct rstream *s)
{
	size_t left = s->nw - s->pos, want;
	ssize_t r;

	/* no more than the chunk needs: a file may hold 10^5 threads' streams */
	want = (size_t)(s->end - s->at < STREAM_WINDOW ? s->end - s->at : STREAM_WINDOW) / 8 + left;
	if (want > STREAM_WINDOW / 8)
		want = STREAM_WINDOW / 8;
	if (!s->w || s->wcap < want) {
		uint64_t *p = realloc(s->w, want * 8);

		if (!p)
			return -ENOMEM;
		s->w = p;
		s->wcap = want;
	}
	memmove(s->w, s->w + s->pos, left * 8);
	s->nw = left;
	s->pos = 0;
	want = (s->wcap - left) * 8;
	if (want > s->end - s->at)
		want = (size_t)(s->end - s->at);
	if (!want)
		return 0;
	r = pread(it->t->index->fd, s->w + left, want, (off_t)s->at);
	if (r <= 0)
		return r < 0 ? -errno : -EIO;
	s->at += (uint64_t)r & ~7ULL;
	s->nw += (size_t)r / 8;
	return 0;
}

/*
 * EV_DATA @w (@words) after the stream's last event: its values, if it is
 * the same function (as the loading reader checks), formatted into the
 * event's slot
 */
static void stream_values(struct rstream *s, const uint64_t *w, unsigned int words)
{
	unsigned int kind = (unsigned int)(w[0] >> EV_DATA_KIND_SHIFT) & 0xff;
	struct sval *v;
	char buf[1024];

	if (!s->last_ok || kind < USFT_DATA_ARGS || kind > USFT_DATA_RETVAL_RAW ||
	    usft_rev_ip(&s->last_ev) != (w[1] & EV_IP_MASK) ||
	    usft_rev_type(&s->last_ev) == EV_LOST ||
	    !usft_format_values(w + 2, words - 2, buf, sizeof(buf)))
		return;		/* a malformed payload shows nothing */
	v = &s->vals[s->last_ev.seq & (VAL_SLOTS - 1)];
	if (v->seq != s->last_ev.seq) {
		/* an older event's slot: its values are no longer asked for */
		for (unsigned int k = 0; k < VAL_KINDS; k++) {
			free(v->text[k]);
			v->text[k] = NULL;
		}
		v->seq = s->last_ev.seq;
	}
	free(v->text[kind - USFT_DATA_ARGS]);
	v->text[kind - USFT_DATA_ARGS] = strdup(buf);
}

/* @e decoded: EV_DATA after it is its; its slot freed of an event VAL_SLOTS before */
static void stream_decoded(struct rstream *s, const struct usft_revent *e)
{
	s->last_ev = *e;
	s->last_ok = true;
	if (s->vals) {
		struct sval *v = &s->vals[e->seq & (VAL_SLOTS - 1)];

		for (unsigned int k = 0; k < VAL_KINDS; k++) {
			free(v->text[k]);
			v->text[k] = NULL;
		}
		v->seq = e->seq;
	}
}

/* decode until the window is full or the stream ends */
static void stream_fill(struct usft_trace_iter *it, struct rstream *s)
{
	const uint64_t keep = EV_IP_MASK | ((uint64_t)EV_DEPTH_MAX << EV_DEPTH_SHIFT);
	struct usft_rsession *ss = &it->t->sess[s->sess];

	while (s->n + 2 <= USFT_ITER_REORDER && s->chunk != UINT32_MAX) {
		unsigned int type, words;
		struct usft_revent e;
		const uint64_t *w;

		if (s->nw - s->pos < 4 && s->at < s->end) {
			int r = refill_words(it, s);

			if (r) {
				it->err = r;
				s->chunk = UINT32_MAX;
				return;
			}
		}
		w = s->w ? s->w + s->pos : NULL;
		if (s->stk_n) {
			/* the next frame of the stack at pos (EV_STACK_FRAME) */
			e = s->stk;
			e.seq = s->seq++;
			e.w1 = usft_stack_frame_w1(w[2 + s->stk_k], s->stk_k);
			e.aux = w[2 + s->stk_k];
			win_insert(s, &e);
			if (++s->stk_k == s->stk_n) {
				s->pos += 2 + s->stk_n;
				s->stk_n = 0;
			}
			continue;
		}
		words = 0;
		if (s->nw - s->pos >= 2) {
			type = (unsigned int)(w[1] >> EV_TYPE_SHIFT);
			words = usft_ev_len(w[0], w[1]);
			if (type == EV_DATA && words <= s->nw - s->pos) {
				/* values (a session without values=1 has none to show) */
				if (s->vals)
					stream_values(s, w, words);
				s->pos += words;
				continue;
			}
			if ((type == EV_DATA || type == EV_STACK ||
		     type == EV_PRINT) && words > s->nw - s->pos &&
			    words < s->wcap && s->at < s->end) {
				/* longer than what is read: read on */
				int r = refill_words(it, s);

				if (r) {
					it->err = r;
					s->chunk = UINT32_MAX;
					return;
				}
				continue;
			}
			if (words > s->nw - s->pos)
				words = 0;	/* cut in the middle: the rest is not an event */
		}
		if (!words) {
			/* this chunk is done: the next one of the thread */
			s->chunk = it->t->index->c[s->chunk].next;
			if (s->chunk != UINT32_MAX) {
				int r = open_chunk(it, s);

				if (r) {
					it->err = r;
					s->chunk = UINT32_MAX;
				}
			}
			continue;
		}
		e = (struct usft_revent){ .ts = ss->base_ns + (w[0] & EV_TS_MASK),
					  .w1 = w[1], .aux = words == 3 ? w[2] : 0, .tid = s->tid,
					  .seq = s->seq++, .sess = s->sess,
					  .cpu = (uint16_t)(w[0] >> EV_CPU_SHIFT), .epoch = s->epoch };
		stream_decoded(s, &e);
		if (type == EV_STACK && words > 2) {
			/* its frames follow it, one per pass; pos moves past them after */
			e.aux = 0;
			win_insert(s, &e);
			s->stk = e;
			s->stk_k = 0;
			s->stk_n = words - 2;
			continue;
		}
		if (type == EV_PRINT) {
			e.w1 &= ~((uint64_t)EV_DEPTH_MAX << EV_DEPTH_SHIFT);
			e.aux = (uint64_t)(uintptr_t)usft_print_text_dup(w + 2, words - 2);
		}
		s->pos += words;
		if (type == EV_GRAPH_LEAF || type == EV_GRAPH_LEAF_GONE) {
			/* an entry and a return, as the loading reader splits it */
			struct usft_revent r = e;

			r.seq = s->seq++;
			r.ts = ss->base_ns + (e.aux & EV_TS_MASK);
			r.w1 = (e.w1 & keep) | ((uint64_t)(type == EV_GRAPH_LEAF ? EV_GRAPH_RET :
							   EV_GRAPH_GONE) << EV_TYPE_SHIFT);
			r.aux = 0;
			e.w1 = (e.w1 & keep) | ((uint64_t)EV_GRAPH_ENT << EV_TYPE_SHIFT);
			e.aux = 0;
			stream_decoded(s, &r);	/* values after a leaf are its return's */
			win_insert(s, &e);
			win_insert(s, &r);
		} else {
			win_insert(s, &e);
		}
	}
	if (s->chunk == UINT32_MAX) {
		free(s->w);
		s->w = NULL;
	}
}

/* ---- the merge ----------------------------------------------------------- */

static const struct usft_revent *head_of(struct usft_trace_iter *it, uint32_t k)
{
	return &it->st[k].win[it->st[k].head];
}

static void heap_push(struct usft_trace_iter *it, uint32_t k)
{
	size_t i = it->nheap++;

	while (i && ev_less(head_of(it, k), head_of(it, it->heap[(i - 1) / 2]))) {
		it->heap[i] = it->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	it->heap[i] = k;
}

static uint32_t heap_pop(struct usft_trace_iter *it)
{
	uint32_t top = it->heap[0], k = it->heap[--it->nheap];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= it->nheap)
			break;
		if (c + 1 < it->nheap && ev_less(head_of(it, it->heap[c + 1]), head_of(it, it->heap[c])))
			c++;
		if (!ev_less(head_of(it, it->heap[c]), head_of(it, k)))
			break;
		it->heap[i] = it->heap[c];
		i = c;
	}
	if (it->nheap)
		it->heap[i] = k;
	return top;
}

/* index of the next event of the same thread, per event (array mode) */
static size_t *next_same_thread(const struct usft_trace *t)
{
	size_t *next = malloc(t->nev * sizeof(size_t) + 1);
	struct last { uint32_t tid, sess; size_t idx; } *tab;
	size_t nb = 1024;

	while (nb < t->nev * 2 && nb < ((size_t)1 << 26))
		nb *= 2;
	tab = calloc(nb, sizeof(*tab));
	if (!next || !tab) {
		free(next);
		free(tab);
		return NULL;
	}
	for (size_t i = t->nev; i-- > 0;) {
		const struct usft_revent *e = &t->ev[i];
		size_t k = key_hash(e->sess, e->tid, nb), n = 0;

		while (tab[k].idx && (tab[k].tid != e->tid || tab[k].sess != e->sess) && ++n < nb)
			k = (k + 1) & (nb - 1);
		if (n >= nb) {
			next[i] = SIZE_MAX;	/* more threads than slots: no look-ahead */
			continue;
		}
		next[i] = tab[k].idx ? tab[k].idx - 1 : SIZE_MAX;
		tab[k] = (struct last){ e->tid, e->sess, i + 1 };
	}
	free(tab);
	return next;
}

struct usft_trace_iter *usft_trace_iter_new(struct usft_trace *t)
{
	struct usft_trace_iter *it = calloc(1, sizeof(*it));
	struct usft_rindex *x = t->index;

	if (!it)
		return NULL;
	it->t = t;
	it->last = -1;
	if (!x) {
		usft_trace_sort(t);
		it->next = next_same_thread(t);
		it->done = calloc(t->nev + 1, 1);
		if (!it->next || !it->done) {
			usft_trace_iter_free(it);
			return NULL;
		}
		return it;
	}
	it->st = calloc(x->ns ? x->ns : 1, sizeof(*it->st));
	it->heap = calloc(x->ns ? x->ns : 1, sizeof(*it->heap));
	if (!it->st || !it->heap) {
		usft_trace_iter_free(it);
		return NULL;
	}
	it->nst = x->ns;
	x->live = it;
	for (size_t k = 0; k < x->ns; k++) {
		struct rstream *s = &it->st[k];

		s->sess = x->s[k].sess;
		s->tid = x->s[k].tid;
		s->chunk = x->s[k].first;
		if (s->chunk == UINT32_MAX)
			continue;	/* a thread left out (usft_trace_keep_threads()) */
		if (t->sess[s->sess].values && !(s->vals = calloc(VAL_SLOTS, sizeof(*s->vals)))) {
			usft_trace_iter_free(it);
			return NULL;
		}
		if (open_chunk(it, s)) {
			it->err = -EINVAL;
			s->chunk = UINT32_MAX;
		}
		stream_fill(it, s);
		if (s->n)
			heap_push(it, (uint32_t)k);
	}
	return it;
}

const struct usft_revent *usft_trace_iter_next(struct usft_trace_iter *it)
{
	struct rstream *s;

	if (!it->st) {
		while (it->i < it->t->nev && it->done[it->i])
			it->i++;
		if (it->i >= it->t->nev)
			return NULL;
		it->last = (long)it->i;
		return &it->t->ev[it->i++];
	}
	if (it->last >= 0) {
		s = &it->st[it->last];
		stream_fill(it, s);
		if (s->n)
			heap_push(it, (uint32_t)it->last);
		it->last = -1;
	}
	ev_free_text(&it->cur);
	if (!it->nheap)
		return NULL;
	it->last = heap_pop(it);
	s = &it->st[it->last];
	it->cur = s->win[s->head];
	s->head++;
	s->n--;
	return &it->cur;
}

const struct usft_revent *usft_trace_iter_peek_same(struct usft_trace_iter *it)
{
	struct rstream *s;

	if (it->last < 0)
		return NULL;
	if (!it->st) {
		size_t n = it->next[it->last];

		return n != SIZE_MAX && !it->done[n] ? &it->t->ev[n] : NULL;
	}
	s = &it->st[it->last];
	if (!s->n)
		stream_fill(it, s);
	return s->n ? &s->win[s->head] : NULL;
}

void usft_trace_iter_drop_same(struct usft_trace_iter *it)
{
	struct rstream *s;

	if (it->last < 0)
		return;
	if (!it->st) {
		size_t n = it->next[it->last];

		if (n != SIZE_MAX)
			it->done[n] = 1;
		return;
	}
	s = &it->st[it->last];
	if (s->n) {
		ev_free_text(&s->win[s->head]);
		s->head++;
		s->n--;
	}
}

int usft_trace_iter_error(const struct usft_trace_iter *it)
{
	return it->err;
}

void usft_trace_iter_free(struct usft_trace_iter *it)
{
	if (!it)
		return;
	for (size_t k = 0; k < it->nst; k++) {
		struct rstream *s = &it->st[k];

		for (unsigned int i = 0; i < s->n; i++)
			ev_free_text(&s->win[s->head + i]);
		free(s->w);
		for (unsigned int i = 0; s->vals && i < VAL_SLOTS; i++)
			for (unsigned int j = 0; j < VAL_KINDS; j++)
				free(s->vals[i].text[j]);
		free(s->vals);
	}
	if (it->t && it->t->index && it->t->index->live == it)
		it->t->index->live = NULL;
	if (it->st)
		ev_free_text(&it->cur);
	free(it->st);
	free(it->heap);
	free(it->next);
	free(it->done);
	free(it);
}

void usft_trace_keep_threads(struct usft_trace *t,
			     bool (*keep)(const struct usft_trace *t, uint32_t sess, uint32_t tid,
					  void *arg), void *arg)
{
	struct usft_rindex *x = t->index;
	size_t k = 0;

	if (x) {
		for (size_t i = 0; i < x->ns; i++)
			if (!keep(t, x->s[i].sess, x->s[i].tid, arg))
				x->s[i].first = UINT32_MAX;	/* a stream with no chunk */
		return;
	}
	for (size_t i = 0; i < t->nev; i++)
		if (keep(t, t->ev[i].sess, t->ev[i].tid, arg))
			t->ev[k++] = t->ev[i];
	t->nev = k;
}

const char *usft_rindex_values(const struct usft_trace *t, const struct usft_revent *e,
			       unsigned int kind)
{
	const struct usft_rindex *x = t->index;
	const struct sval *v;
	long k;

	if (!x || !x->live || kind < USFT_DATA_ARGS || kind > USFT_DATA_RETVAL_RAW ||
	    (k = stream_find(x, e->sess, e->tid)) < 0 || (size_t)k >= x->live->nst ||
	    !x->live->st[k].vals)
		return NULL;
	v = &x->live->st[k].vals[e->seq & (VAL_SLOTS - 1)];
	return v->seq == e->seq ? v->text[kind - USFT_DATA_ARGS] : NULL;
}

void usft_rindex_count(struct usft_trace *t)
{
	struct usft_rindex *x = t->index;

	for (size_t k = 0; x && k < x->ns; k++) {
		struct usft_trace_iter one = { .t = t };
		struct rstream s = { .sess = x->s[k].sess, .tid = x->s[k].tid,
				     .chunk = x->s[k].first };
		struct usft_rsession *ss = &t->sess[s.sess];

		if (ss->ended || s.chunk == UINT32_MAX || open_chunk(&one, &s))
			continue;
		/* the window is emptied each time: events are counted, not kept */
		for (;;) {
			stream_fill(&one, &s);
			if (!s.n)
				break;
			for (unsigned int i = 0; i < s.n; i++) {
				ss->events += usft_rev_type(&s.win[s.head + i]) != EV_LOST;
				ev_free_text(&s.win[s.head + i]);
			}
			s.head = s.n = 0;
		}
		free(s.w);
	}
}
