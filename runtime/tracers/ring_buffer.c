// SPDX-License-Identifier: MIT
/*
 * tracers/ring_buffer.c - the pool of per-thread slots behind
 * ring_buffer.h: one MAP_NORESERVE mapping, a state word per slot, CAS to
 * claim, a pthread key destructor to give back.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#endif
#include "ring_buffer.h"

__thread struct usft_tbuf *usft_tbuf_self __attribute__((tls_model("initial-exec")));

static struct usft_tbuf *pool;		/* slot headers */
static unsigned int nr_slots;
static unsigned int claim_hint;
static pthread_key_t tbuf_key;
static unsigned long no_slot_events;
static const unsigned int cpu_unknown = EV_CPU_UNKNOWN;
static int prefault_ok = 1;

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define HUGE_BYTES		(2UL << 20)

int usft_gettid(void)
{
	return (int)syscall(SYS_gettid);
}

unsigned int usft_tbuf_pool_slots(void)
{
	return nr_slots;
}

struct usft_tbuf *usft_tbuf_slot(unsigned int i)
{
	return &pool[i];
}

/*
 * Writer thread: fault in the ring pages a producer is about to reach, so
 * it does not take page faults in its callbacks (MADV_POPULATE_WRITE maps
 * them writable without touching their contents).  Only ahead of the
 * first lap; after it the ring's pages are all there.  The window is twice
 * what the thread wrote since the writer's last pass (at least 2 MiB), so
 * a quiet thread costs little memory and a busy one does not outrun it.
 */
void usft_tbuf_prefault(struct usft_tbuf *b)
{
	unsigned long head, want, rate;

	if (!prefault_ok || b->populated >= b->size)
		return;
	head = __atomic_load_n(&b->head, __ATOMIC_RELAXED);
	rate = head - b->prefault_last;
	b->prefault_last = head;
	want = head + (rate * 2 > HUGE_BYTES ? rate * 2 : HUGE_BYTES);
	want = (want + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);
	if (want > b->size)
		want = b->size;
	if (want <= b->populated)
		return;
	if (madvise((char *)b->data + b->populated, want - b->populated, MADV_POPULATE_WRITE)) {
		if (errno == EINVAL || errno == ENOSYS)
			prefault_ok = 0;	/* kernel before 5.14 */
		return;
	}
	b->populated = want;
}

/*
 * A session ended in a process that goes on (a detach): give the rings'
 * pages back, so that attaching again and again costs no more memory than
 * once.  The slots stay (threads point to them); a late write by a thread
 * still on its way out of a callback only faults in a fresh zero page.  The
 * first-lap prefaulting does not apply to a ring used before.
 */
void usft_tbuf_pool_trim(void)
{
	for (unsigned int i = 0; i < nr_slots; i++) {
		struct usft_tbuf *b = &pool[i];

		if (!b->size || !b->data)
			continue;
		madvise(b->data, b->size, MADV_DONTNEED);
		b->populated = b->size;
	}
}

void (*usft_tbuf_exit_hook)(void);

static __thread struct usft_tbuf *self_saved __attribute__((tls_model("initial-exec")));
static __thread int self_depth __attribute__((tls_model("initial-exec")));

void usft_self_begin(void)
{
	if (self_depth++ == 0) {
		self_saved = usft_tbuf_self;
		usft_tbuf_self = USFT_TBUF_SELF;
		__asm__ __volatile__("" ::: "memory");
	}
}

void usft_self_end(void)
{
	if (self_depth > 0 && --self_depth == 0) {
		__asm__ __volatile__("" ::: "memory");
		usft_tbuf_self = self_saved;
	}
}

struct usft_tbuf *usft_tbuf_own(void)
{
	return self_depth ? self_saved : usft_tbuf_self;
}

/*
 * A thread that found the pool full drops its events, and retries the
 * claim every 4096 of them in case exited threads' slots came back.
 */
void usft_tbuf_no_slot_event(void)
{
	static __thread unsigned int misses __attribute__((tls_model("initial-exec")));

	__atomic_add_fetch(&no_slot_events, 1, __ATOMIC_RELAXED);
	if (!(++misses & 4095))
		usft_tbuf_self = NULL;
}

unsigned long usft_tbuf_no_slot(void)
{
	return __atomic_load_n(&no_slot_events, __ATOMIC_RELAXED);
}

void usft_tbuf_flush_pending(struct usft_tbuf *b)
{
	usft_tbuf_begin(b);
	if (b->nest == 1 && b->pend_w1) {
		usft_tbuf_reserve(b, b->pend_w0, b->pend_w1, 0, 0, 2);
		b->pend_w1 = 0;
	}
	usft_tbuf_end(b);
}

/* thread exit: keep the name, hand the slot to the writer for its last drain */
static void tbuf_thread_exit(void *p)
{
	struct usft_tbuf *b = p;

	if (!b || usft_tbuf_self != b)
		return;
	if (b->size)
		usft_tbuf_flush_pending(b);
	if (!prctl(PR_GET_NAME, b->comm, 0, 0, 0))
		__atomic_store_n(&b->comm_valid, 1, __ATOMIC_RELEASE);
	usft_tbuf_self = NULL;
	__atomic_store_n(&b->state, TBUF_DEAD, __ATOMIC_RELEASE);
	if (usft_tbuf_exit_hook)
		usft_tbuf_exit_hook();
}

/* the rseq area's cpu_id (glibc >= 2.35 registers it for every thread) */
static const volatile unsigned int *tbuf_cpu_ptr(void)
{
#if defined(RSEQ_SIG)
	if (__rseq_size >= 8) {
		char *tp = __builtin_thread_pointer();

		return (const volatile unsigned int *)(tp + __rseq_offset +
						       offsetof(struct rseq, cpu_id));
	}
#endif
	return &cpu_unknown;
}

/*
 * First event of a thread (inside a callback): no allocation, no lock; one
 * gettid() syscall per thread lifetime, errno preserved.  A handler that
 * interrupts the claim finds the TLS word still NULL and the claiming flag
 * of the slot it would race for taken, so at worst it loses its event.
 */
struct usft_tbuf *usft_tbuf_claim(void)
{
	static __thread int claiming __attribute__((tls_model("initial-exec")));
	unsigned int start, i;
	int saved = errno;

	if (!pool || claiming) {
		__atomic_add_fetch(&no_slot_events, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	claiming = 1;
	start = __atomic_fetch_add(&claim_hint, 1, __ATOMIC_RELAXED);
	for (i = 0; i < nr_slots; i++) {
		struct usft_tbuf *b = usft_tbuf_slot((start + i) % nr_slots);
		int expected = TBUF_FREE;

		if (__atomic_load_n(&b->state, __ATOMIC_RELAXED) != TBUF_FREE)
			continue;
		if (!__atomic_compare_exchange_n(&b->state, &expected, TBUF_CLAIMING, false,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		b->head = b->commit = b->consumed = 0;
		b->lost = b->lost_seen = 0;
		b->nest = b->reserving = b->prof_busy = 0;
		b->pend_w1 = 0;
		b->prof_lost = 0;
		b->prefault_last = 0;
		b->task = -1;
		b->comm_valid = 0;
		b->tid = usft_gettid();
		b->cpu = tbuf_cpu_ptr();
		/* the profile table was cleared when the slot was last released */
		__atomic_store_n(&b->state, TBUF_LIVE, __ATOMIC_RELEASE);
		usft_tbuf_self = b;
		pthread_setspecific(tbuf_key, b);
		claiming = 0;
		errno = saved;
		return b;
	}
	usft_tbuf_self = USFT_TBUF_NONE;
	__atomic_add_fetch(&no_slot_events, 1, __ATOMIC_RELAXED);
	claiming = 0;
	errno = saved;
	return NULL;
}

void usft_tbuf_release(struct usft_tbuf *b)
{
	if (b->prof)
		memset(b->prof, 0, (b->prof_mask + 1) * sizeof(*b->prof));
	__atomic_store_n(&b->state, TBUF_FREE, __ATOMIC_RELEASE);
}

/* fork child: only the forking thread exists; its old events are the parent's */
void usft_tbuf_atfork_child(void)
{
	struct usft_tbuf *self = usft_tbuf_own();

	for (unsigned int i = 0; i < nr_slots; i++) {
		struct usft_tbuf *b = usft_tbuf_slot(i);

		if (b != self && b->state != TBUF_FREE)
			b->state = TBUF_FREE;
	}
	if ((unsigned long)self > 1) {
		self->head = self->commit = self->consumed = 0;
		self->lost = self->lost_seen = 0;
		self->nest = self->reserving = self->prof_busy = 0;
		/* a pending entry was made before the fork: the parent writes it */
		self->pend_w1 = 0;
		self->task = -1;
		self->comm_valid = 0;
		self->tid = usft_gettid();
		if (self->prof)
			memset(self->prof, 0, (self->prof_mask + 1) * sizeof(*self->prof));
	} else {
		self = NULL;
	}
	if (self_depth)
		self_saved = self;
	else
		usft_tbuf_self = self;
	no_slot_events = 0;
}

/* @x at most USFT_RING_MAX_BYTES (checked by the caller): the loop ends */
static size_t round_pow2(size_t x)
{
	size_t p = 4096;

	while (p < x && p < (size_t)USFT_RING_MAX_BYTES)
		p <<= 1;
	return p;
}

/* an anonymous reservation, @align-aligned; Return: NULL on failure */
static void *reserve(size_t bytes, size_t align)
{
	char *p = mmap(NULL, bytes + align, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED)
		return NULL;
	a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((char *)a + bytes, (uintptr_t)p + align - a);
	return (void *)a;
}

int usft_tbuf_pool_init(size_t ring_bytes, size_t prof_entries, unsigned int max_threads,
			bool prefault_first)
{
	size_t ring, prof_bytes;
	char *rings = NULL, *profs = NULL;
	struct usft_tbuf *hdrs = NULL;

	if (pool)
		return 0;
	/* ring * max_threads must not wrap (a ring of 2^56 bytes did) */
	if (ring_bytes > USFT_RING_MAX_BYTES || max_threads > USFT_MAX_THREADS ||
	    prof_entries > USFT_RING_MAX_BYTES / sizeof(struct usft_prof_ent))
		return -EINVAL;
	ring = ring_bytes ? round_pow2(ring_bytes) : 0;
	prof_bytes = prof_entries ? round_pow2(prof_entries * sizeof(struct usft_prof_ent)) : 0;
	if (!max_threads)
		max_threads = 256;
	/* halve the slot count until the reservations fit (strict overcommit) */
	for (; max_threads >= 4; max_threads /= 2) {
		hdrs = reserve(max_threads * sizeof(*hdrs), 4096);
		rings = ring ? reserve(ring * max_threads, HUGE_BYTES) : NULL;
		profs = prof_bytes ? reserve(prof_bytes * max_threads, 4096) : NULL;
		if (hdrs && (!ring || rings) && (!prof_bytes || profs))
			break;
		if (hdrs)
			munmap(hdrs, max_threads * sizeof(*hdrs));
		if (rings)
			munmap(rings, ring * max_threads);
		if (profs)
			munmap(profs, prof_bytes * max_threads);
		hdrs = NULL;
	}
	if (!hdrs)
		return -ENOMEM;
	/* fewer page faults per byte traced: 2 MiB pages where THP allows */
	if (rings && ring >= HUGE_BYTES)
		madvise(rings, ring * max_threads, MADV_HUGEPAGE);
	if (pthread_key_create(&tbuf_key, tbuf_thread_exit))
		return -EAGAIN;
	for (unsigned int i = 0; i < max_threads; i++) {
		struct usft_tbuf *b = &hdrs[i];

		b->state = TBUF_FREE;
		b->size = ring;
		b->wmask = ring ? ring / 8 - 1 : 0;
		b->data = rings ? (uint64_t *)(rings + (size_t)i * ring) : NULL;
		b->cpu = &cpu_unknown;
		b->task = -1;
		if (prof_bytes) {
			b->prof = (struct usft_prof_ent *)(profs + (size_t)i * prof_bytes);
			b->prof_mask = prof_bytes / sizeof(struct usft_prof_ent) - 1;
		}
	}
	/*
	 * The first thread to trace (in practice the main thread) takes slot
	 * 0 (claim_hint starts there): on request its whole ring is faulted
	 * in now, so a long run never takes a page fault in a callback.
	 */
	if (prefault_first && ring && prefault_ok &&
	    !madvise(hdrs[0].data, ring, MADV_POPULATE_WRITE))
		hdrs[0].populated = ring;
	nr_slots = max_threads;
	__atomic_store_n(&pool, hdrs, __ATOMIC_RELEASE);
	return 0;
}
