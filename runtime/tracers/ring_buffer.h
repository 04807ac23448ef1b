/* SPDX-License-Identifier: MIT */
/*
 * tracers/ring_buffer.h - per-thread lock-free ring buffers
 * (kernel/trace/ring_buffer.c, per thread instead of per CPU).
 *
 * One pool is mapped (MAP_NORESERVE, so only touched pages cost memory) when
 * tracing starts; a thread takes a slot with a CAS the first time it emits an
 * event and hands it back at exit (pthread key destructor).  After that the
 * hot path is: TLS load, a few stores, no atomics, no allocation, no lock,
 * no syscall, errno untouched.  The one exception is the reservation that
 * crosses half the ring: usft_tbuf_make_room() wakes the writer there (one
 * FUTEX_WAKE per half ring written, errno kept), which is what keeps a
 * ring that stays in the cache from filling (docs/tracers.md, "Ring size").
 *
 * Producer (the owning thread, and signal handlers nested on it):
 *   nest++                            nesting level on this thread
 *   reserve: head += size             (refused while an interrupted outer
 *                                      reservation is in progress: lost;
 *                                      past @limit: usft_tbuf_make_room())
 *   write the words (masked, so an event may wrap)
 *   outermost level: commit = head    (release), re-checked so a handler
 *                                      that arrived during the commit is
 *                                      published too
 * Full ring: the event is dropped and counted in @lost (kernel ring buffer
 * "lost events"); nothing is overwritten.  With the lossless policy the
 * producer waits for the writer instead, as long as the writer makes
 * progress (docs/tracers.md, Recording).
 *
 * Shared rings (crash-safe recording): the slot headers and the rings live
 * in a MAP_SHARED mapping of a file (struct usft_ring_file, trace_format.h)
 * that outlives the process, so `usft record` finds in it, after any death,
 * what the writer had not written out yet.  Only pages known to be
 * allocated in that file are written (a page fault on a full tmpfs would
 * be SIGBUS): @limit never passes the populated part of the first lap (of
 * every lap when the ring gives its written pages back: usft_tbuf_give_back()).
 *
 * Consumer (the writer thread, or a flush): reads [consumed, commit),
 * gives whole pages of it back (large rings) and then releases consumed.
 */
#ifndef USFT_RING_BUFFER_H
#define USFT_RING_BUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "trace_format.h"
#if __has_include("asm/prefetch.h")
#include "asm/prefetch.h"
#endif

#ifndef likely
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#endif
#define rb_barrier()	__asm__ __volatile__("" ::: "memory")

enum usft_tbuf_state { TBUF_FREE, TBUF_CLAIMING, TBUF_LIVE, TBUF_DEAD };

/* per-thread function profile entry (kernel struct ftrace_profile) */
struct usft_prof_ent {
	uint64_t ip;
	uint64_t hits;
	uint64_t time;
	double time_sq;
};

struct usft_tbuf {
	/* producer: the owning thread */
	unsigned long head;
	unsigned long commit;
	/*
	 * head may grow to here without a look at the consumer: a lower
	 * bound of min(consumed + size, populated) (0: look now)
	 */
	unsigned long limit;
	unsigned long lost;
	unsigned int nest;
	unsigned int reserving;
	unsigned int prof_busy;
	unsigned int pad0;
	const volatile unsigned int *cpu;	/* rseq cpu_id, or a constant "unknown" */
	/*
	 * function_graph: the last entry, kept back until the next entry
	 * (then it is a parent and written alone) or its own return (then it
	 * is a leaf: one 3-word LEAF event instead of entry + return).
	 */
	uint64_t pend_w0, pend_w1;		/* pend_w1 == 0: none */

	/* consumer side */
	unsigned long consumed __attribute__((aligned(64)));
	unsigned long lost_seen;
	int state;
	int tid;
	int task;			/* writer's task table index, -1 none yet */
	int comm_valid;
	char comm[16];
	/*
	 * ring bytes of the first lap faulted in (writer ahead of the
	 * producer, the producer itself in usft_tbuf_make_room()); with shared
	 * rings the producer never writes past it
	 */
	unsigned long populated;
	/*
	 * Writer, for a salvage after a death at any point of a drain: events
	 * written out of this slot in this session, and the chunk being
	 * written now: ring bytes [writing_from, writing) holding
	 * writing_events events, events_written before it (writing 0: none).
	 */
	unsigned long writing;
	unsigned long writing_from;
	unsigned long long events_written, events_before, writing_events;
	unsigned long prefault_last;	/* head at the writer's last pass */

	/* geometry, fixed when the pool is made */
	unsigned long size;		/* ring bytes, a power of two */
	unsigned long wmask;		/* ring words - 1 */
	uint64_t *data;
	struct usft_prof_ent *prof;
	unsigned long prof_mask;
	unsigned long prof_lost;
};

/*
 * The calling thread's slot; NULL: none yet; USFT_TBUF_NONE: none possible;
 * USFT_TBUF_SELF: usft's own code runs in this thread (usft_self_begin()):
 * nothing it calls is recorded, nor counted.
 */
extern __thread struct usft_tbuf *usft_tbuf_self __attribute__((tls_model("initial-exec")));
#define USFT_TBUF_NONE ((struct usft_tbuf *)1)
#define USFT_TBUF_SELF ((struct usft_tbuf *)2)

/*
 * usft's own work in a program thread (start, stop, exec, fork, dlopen,
 * dlclose) and in the writer thread: the program's traced functions it
 * reaches (a malloc() of the program's own, say) are not recorded.
 * Nests.  usft_tbuf_own(): the thread's real slot, inside or outside.
 */
/* a session ended, the process goes on: the rings' pages are returned */
void usft_tbuf_pool_trim(void);
void usft_self_begin(void);
void usft_self_end(void);
struct usft_tbuf *usft_tbuf_own(void);

struct usft_tbuf *usft_tbuf_claim(void);

/*
 * usft_tbuf_make_room() - the slow path of a reservation ending at @end:
 * the ring is full, or the next pages are not there yet.  Populates them
 * (shared rings), waits for the writer (lossless policy), refreshes @limit.
 * Called with b->reserving set; no allocation, no lock, errno preserved.
 * Return: whether the event fits now.
 */
bool usft_tbuf_make_room(struct usft_tbuf *b, unsigned long end);

/* an event of a thread that has no slot: dropped, but counted */
void usft_tbuf_no_slot_event(void);

static inline __attribute__((always_inline)) struct usft_tbuf *usft_tbuf_get(void)
{
	struct usft_tbuf *b = usft_tbuf_self;

	if (likely((unsigned long)b > (unsigned long)USFT_TBUF_SELF))
		return b;
	if (b == USFT_TBUF_NONE) {
		usft_tbuf_no_slot_event();
		return NULL;
	}
	if (b == USFT_TBUF_SELF)
		return NULL;
	return usft_tbuf_claim();
}

static inline __attribute__((always_inline)) unsigned int usft_tbuf_cpu(struct usft_tbuf *b)
{
	return *b->cpu;
}

/* kernel rb_end_commit(): only the outermost level publishes */
static inline __attribute__((always_inline)) void usft_tbuf_end(struct usft_tbuf *b)
{
	rb_barrier();
	if (likely(b->nest == 1)) {
		for (;;) {
			unsigned long h = b->head;

			__atomic_store_n(&b->commit, h, __ATOMIC_RELEASE);
			rb_barrier();
			b->nest = 0;
			rb_barrier();
			if (likely(b->head == h))
				break;
			/* a handler reserved while we published: publish again */
			b->nest = 1;
			rb_barrier();
		}
	} else {
		b->nest--;
	}
}

/* kernel rb_start_commit(): enter a (possibly nested) writing section */
static inline __attribute__((always_inline)) void usft_tbuf_begin(struct usft_tbuf *b)
{
	b->nest++;
	rb_barrier();
}

/*
 * usft_tbuf_room() - room for @n words of an event whose second word is
 * @w1, inside a begin/end section.
 * Return: false when the event is dropped (counted in lost): ring full, an
 * interrupted reservation below, or nested deeper than four levels (which
 * doubles as recursion protection); else *@at is its first word's index
 * (to be masked with wmask).  Every reservation goes through here.
 */
/* what a dropped event whose second word is @w1 counts in lost: a leaf record is a call's entry and return */
static inline __attribute__((always_inline)) unsigned int usft_ev_lost_count(uint64_t w1)
{
	unsigned int type = (unsigned int)(w1 >> EV_TYPE_SHIFT);

	return type == EV_GRAPH_LEAF || type == EV_GRAPH_LEAF_GONE ? 2 : 1;
}

static inline __attribute__((always_inline)) bool
usft_tbuf_room(struct usft_tbuf *b, unsigned int n, uint64_t w1, unsigned long *at)
{
	unsigned long head;

	if (unlikely(b->reserving || b->nest > 4))
		goto lost;
	b->reserving = 1;
	rb_barrier();
	head = b->head;
	if (unlikely(head + n * 8 > b->limit) && !usft_tbuf_make_room(b, head + n * 8)) {
		b->reserving = 0;
		goto lost;
	}
	b->head = head + n * 8;
	rb_barrier();
	b->reserving = 0;
	rb_barrier();
	*at = head >> 3;
	return true;
lost:
	/* counted in events */
	b->lost += usft_ev_lost_count(w1);
	return false;
}

/*
 * The line USFT_TBUF_PREFETCH bytes ahead of an event at word @i, asked for
 * writing.  The writer, on another CPU, has read the lap before: without
 * it every new line of a ring that stays in the cache was a coherence miss
 * in the event's path (docs/tracers.md, "Ring size").
 * ftrace_event_caller does the same (asm/event.h: EVT_PREFETCH).
 */
#define USFT_TBUF_PREFETCH	2048UL
extern bool usft_tbuf_prefetch_ok;

static inline __attribute__((always_inline)) void
usft_tbuf_prefetch(const uint64_t *d, unsigned long i, unsigned long m)
{
#if __has_include("asm/prefetch.h")
	if (likely(usft_tbuf_prefetch_ok))
		arch_prefetch_w(&d[(i + USFT_TBUF_PREFETCH / 8) & m]);
#else
	(void)d, (void)i, (void)m;
#endif
}

/*
 * usft_tbuf_reserve() - one event of @n (2 to 4) words, inside a
 * begin/end section.  Return: false when it was dropped (usft_tbuf_room()).
 */
static inline __attribute__((always_inline)) bool
usft_tbuf_reserve(struct usft_tbuf *b, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3,
		  unsigned int n)
{
	unsigned long i, m;
	uint64_t *d;

	if (unlikely(!usft_tbuf_room(b, n, w1, &i)))
		return false;
	d = b->data;
	m = b->wmask;
	d[i & m] = w0;
	usft_tbuf_prefetch(d, i, m);
	d[(i + 1) & m] = w1;
	if (n > 2)
		d[(i + 2) & m] = w2;
	if (n > 3)
		d[(i + 3) & m] = w3;
	return true;
}

/*
 * usft_tbuf_reserve_n() - @n words at once (an event and the EV_DATA after
 * it, so nothing a signal handler writes comes between them), inside a
 * begin/end section.  Return: false when dropped (usft_tbuf_room()).
 */
static inline bool usft_tbuf_reserve_n(struct usft_tbuf *b, const uint64_t *w, unsigned int n)
{
	unsigned long i;

	if (unlikely(!usft_tbuf_room(b, n, w[1], &i)))
		return false;
	for (unsigned int k = 0; k < n; k++)
		b->data[(i + k) & b->wmask] = w[k];
	usft_tbuf_prefetch(b->data, i, b->wmask);
	return true;
}

/* usft_tbuf_write() - begin, one event, end */
static inline __attribute__((always_inline)) bool
usft_tbuf_write(struct usft_tbuf *b, uint64_t w0, uint64_t w1, uint64_t w2, unsigned int n)
{
	bool ok;

	usft_tbuf_begin(b);
	ok = usft_tbuf_reserve(b, w0, w1, w2, 0, n);
	usft_tbuf_end(b);
	return ok;
}

/* the graph tracer's entry not written yet (thread exit, stop): write it now */
void usft_tbuf_flush_pending(struct usft_tbuf *b);

/* pool (ring_buffer.c) */
struct usft_pool_opts {
	size_t ring_bytes;
	size_t prof_entries;
	unsigned int max_threads;
	bool prefault_first;		/* the first thread's whole ring at start */
	bool lossless;			/* full ring: wait for the writer */
	const char *ring_dir;		/* shared rings: a file there; NULL: private */
	bool ring_anon;			/* no ring_dir: shared rings in a memfd (attach) */
	size_t ring_keep;		/* rings above it give pages back; 0: the default */
};
int usft_tbuf_pool_init(const struct usft_pool_opts *o);
/*
 * The shared rings' file header (NULL: private rings) and path; after a
 * fork the child gets a file of its own (usft_tbuf_atfork_child()).
 */
struct usft_ring_file *usft_tbuf_ring_file(void);
const char *usft_tbuf_ring_path(void);
/* the shared rings' descriptor (passed to `usft record -P`), or -1 */
int usft_tbuf_ring_fd(void);
/* the session ended cleanly: mark the file ended and remove it */
void usft_tbuf_ring_done(void);
/*
 * `usft record -P`: the recorder's socket for the rings of children forked
 * while recorded (START carried it; docs/attach.md); -1 closes the one held.
 */
void usft_tbuf_ring_drop(int fd);
/* that socket is held (and is still the one START carried) */
bool usft_tbuf_ring_drop_held(void);
/* a later session (an attached process) starts: the file is live again */
void usft_tbuf_ring_live(void);
/* the lossless policy on or off (off before the writer stops) */
void usft_tbuf_set_lossless(bool on);
/* writer: a pass is done (a lossless wait that ran out may wait again) */
void usft_tbuf_writer_passed(void);
/* producers waiting for the writer now (it comes back at once) */
unsigned int usft_tbuf_waiters(void);
unsigned int usft_tbuf_pool_slots(void);
struct usft_tbuf *usft_tbuf_slot(unsigned int i);
void usft_tbuf_release(struct usft_tbuf *b);	/* consumer: DEAD -> FREE */
void usft_tbuf_prefault(struct usft_tbuf *b);	/* consumer: ring pages ahead */
/*
 * Rings larger than this (bytes; USFT_RING_KEEP sets it) give the pages
 * written out back to the system, so a thread's memory is what the writer
 * has not written yet plus what is populated ahead of it.
 */
#define USFT_RING_KEEP_DEFAULT	(64UL << 20)
/* a thread's ring when -b / USFT_BUFFER_SIZE does not say */
#define USFT_RING_DEFAULT_BYTES	(1UL << 20)
/* consumer: ring positions [from, to) are written out (consumed still @from) */
void usft_tbuf_give_back(struct usft_tbuf *b, unsigned long from, unsigned long to);
/* bytes usft_tbuf_give_back() gave back so far (the END chunk says them) */
unsigned long long usft_tbuf_given_back(void);
void usft_tbuf_prepare_free(void);		/* writer: free slots' first page */
void usft_tbuf_atfork_child(void);
unsigned long usft_tbuf_no_slot(void);	/* events dropped: no slot for the thread */
/* called at thread exit, after the slot is handed back (the writer's wake-up) */
extern void (*usft_tbuf_exit_hook)(void);
/*
 * called by a lossless producer whose ring is full, before it waits (the
 * writer drains at once instead of at its next pass); async-signal-safe
 */
extern void (*usft_tbuf_kick_hook)(void);
/* the calling thread's rseq cpu_id word, or a constant EV_CPU_UNKNOWN */
const volatile unsigned int *usft_tbuf_cpu_ptr(void);

#endif /* USFT_RING_BUFFER_H */
