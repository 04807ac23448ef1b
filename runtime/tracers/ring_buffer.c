// SPDX-License-Identifier: MIT
/*
 * tracers/ring_buffer.c - the pool of per-thread slots behind
 * ring_buffer.h: one mapping (private: MAP_NORESERVE anonymous memory;
 * shared: a file, crash-safe recording), a state word per slot, CAS to
 * claim, a pthread key destructor to give back.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/futex.h>
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#endif
#include "compat/prefault.h"	/* MADV_POPULATE_WRITE */
#include "core/trace_clock.h"	/* mono_ns() */
#include "control.h"
#include "ring_buffer.h"
#include "tid.h"

/* an arch whose trampolines write events (x86-64: ftrace_event_caller) */
#if __has_include("asm/event.h")
#include "asm/event.h"
/* what ftrace_event_caller (arch/x86_64/entry.S) writes into a slot */
_Static_assert(offsetof(struct usft_tbuf, head) == EVT_TB_HEAD &&
	       offsetof(struct usft_tbuf, commit) == EVT_TB_COMMIT &&
	       offsetof(struct usft_tbuf, limit) == EVT_TB_LIMIT &&
	       offsetof(struct usft_tbuf, nest) == EVT_TB_NEST &&
	       offsetof(struct usft_tbuf, reserving) == EVT_TB_RESERVING &&
	       offsetof(struct usft_tbuf, cpu) == EVT_TB_CPU &&
	       offsetof(struct usft_tbuf, wmask) == EVT_TB_WMASK &&
	       offsetof(struct usft_tbuf, data) == EVT_TB_DATA &&
	       sizeof(((struct usft_tbuf *)0)->nest) == 4 &&
	       sizeof(((struct usft_tbuf *)0)->reserving) == 4,
	       "asm/event.h: struct usft_tbuf");
_Static_assert(EVT_TS_MASK == EV_TS_MASK && EVT_CPU_SHIFT == EV_CPU_SHIFT &&
	       EVT_CPU_MASK == EV_CPU_UNKNOWN && EV_IP_MASK == (1ULL << EVT_IP_BITS) - 1 &&
	       EVT_PREFETCH == USFT_TBUF_PREFETCH,
	       "asm/event.h: the function tracer's event");
#endif

__thread struct usft_tbuf *usft_tbuf_self __attribute__((tls_model("initial-exec")));

static struct usft_tbuf *pool;		/* slot headers */
static unsigned int nr_slots;
static unsigned int claim_hint;
static pthread_key_t tbuf_key;
static unsigned long no_slot_events;
static const unsigned int cpu_unknown = EV_CPU_UNKNOWN;
static int prefault_ok = 1;
static bool pool_lossless;
/*
 * Rings larger than this give the pages the writer has written out back
 * (hole punch / MADV_DONTNEED) and have them populated again ahead of the
 * producer: a busy thread's memory is what is not written out yet, not
 * the ring's size.  Smaller rings keep their pages lap after lap.
 */
static size_t ring_keep;
static bool ring_punch;
static unsigned int pool_waiters;	/* lossless producers waiting now */
/*
 * The writer's passes: a lossless producer with a full ring sleeps on it
 * (FUTEX_WAIT), the writer bumps it after each pass and wakes the
 * waiters, so a producer goes on as soon as room is made instead of at
 * its next poll.
 */
static unsigned int pool_pass;
/*
 * lossless: a wait ran out (the writer freed nothing for LOSSLESS_WAIT_NS):
 * full rings drop until the writer's next pass, so a stuck writer costs
 * the program one wait, not one per event
 */
static bool pool_stalled;

/* shared rings: the file, its mapping (header page, slot headers, rings) */
static struct usft_ring_file *ring_file;
static int ring_fd = -1;
static char ring_dir[PATH_MAX];
static char ring_path[PATH_MAX];	/* "": an anonymous file (memfd), no path */
static bool ring_anon;
static dev_t ring_dev;		/* the file at ring_fd (a program may close it) */
static ino_t ring_ino;
static size_t ring_map_bytes;
static size_t pool_ring, pool_prof_bytes;	/* what init_headers() is given */
/*
 * `usft record -P`: the recorder's SOCK_SEQPACKET socket (START carried
 * it), where a child forked while recorded sends its new memfd and a pidfd
 * of itself, so the recorder holds its rings too (-1: none).
 */
static int drop_fd = -1;
static dev_t drop_dev;
static ino_t drop_ino;
static char *pool_profs;

static void ring_fd_note(void)
{
	struct stat st;

	if (ring_fd >= 0 && !fstat(ring_fd, &st)) {
		ring_dev = st.st_dev;
		ring_ino = st.st_ino;
	}
}

/* ring_fd is still the rings' file (daemons close every descriptor) */
static bool ring_fd_ours(void)
{
	struct stat st;

	return ring_fd >= 0 && !fstat(ring_fd, &st) && st.st_dev == ring_dev &&
	       st.st_ino == ring_ino;
}

#define HUGE_BYTES		(2UL << 20)
/*
 * What a producer populates itself when the writer has not yet (shared):
 * one page at its first event (as a private ring's first page fault: a
 * bigger first chunk cost a new thread's first event 130 us at p99, one
 * page 17 us), then twice what it has, up to NEXT_CHUNK_MAX.
 */
#define FIRST_CHUNK		4096UL
#define NEXT_CHUNK_MAX		(1UL << 20)
/* lossless: a writer that frees nothing for this long gets the event dropped */
#define LOSSLESS_WAIT_NS	(1000ULL * 1000 * 1000)
/* one futex wait's limit (a wake-up missed is a late pass, not a hang) */
#define LOSSLESS_POLL_NS	(1000L * 1000)

/* raise *@p to @v (the writer and the producer both populate) */
static void max_store(unsigned long *p, unsigned long v)
{
	unsigned long old = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (old < v && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELEASE,
							 __ATOMIC_RELAXED))
		;
}

/*
 * Make ring bytes [from, to) of @b writable without a page fault that
 * could fail: MADV_POPULATE_WRITE allocates them in the file (an error,
 * not SIGBUS, when tmpfs is full); fallocate() where the kernel predates it.
 * Return: 0 or -errno.
 */
static int populate(struct usft_tbuf *b, unsigned long from, unsigned long to)
{
	char *p = (char *)b->data + from;

	if (prefault_ok && !madvise(p, to - from, MADV_POPULATE_WRITE))
		return 0;
	if (errno == EINVAL || errno == ENOSYS)
		prefault_ok = 0;	/* kernel before 5.14 */
	if (!ring_file)
		return prefault_ok ? -errno : 0;	/* private: faults are fine */
	if (!prefault_ok && ring_fd >= 0 &&
	    !fallocate(ring_fd, 0, (off_t)((char *)p - (char *)ring_file), (off_t)(to - from)))
		return 0;
	return -errno;
}

/*
 * Ring positions [from, to) (absolute: they grow past the ring's size lap
 * after lap; to - from <= size) populated, split where the ring wraps.
 */
static int populate_pos(struct usft_tbuf *b, unsigned long from, unsigned long to)
{
	unsigned long m = b->size - 1, off = from & m, len = to - from;
	int ret;

	if (!len)
		return 0;
	if (off + len <= b->size)
		return populate(b, off, off + len);
	ret = populate(b, off, b->size);
	return ret ? ret : populate(b, 0, len - (b->size - off));
}

/* what the producer may reach: a page-aligned consumed when pages go back */
static unsigned long tbuf_released(struct usft_tbuf *b)
{
	unsigned long c = __atomic_load_n(&b->consumed, __ATOMIC_ACQUIRE);

	return ring_punch ? c & ~4095UL : c;
}

/* whether every page of the ring is there for good (no more populating) */
static bool tbuf_all_there(struct usft_tbuf *b, unsigned long pop)
{
	return !ring_punch && pop >= b->size;
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
	unsigned long head, want, rate, have, cap;

	if (!prefault_ok && !ring_file)
		return;
	have = __atomic_load_n(&b->populated, __ATOMIC_ACQUIRE);
	if (tbuf_all_there(b, have))
		return;
	head = __atomic_load_n(&b->head, __ATOMIC_RELAXED);
	rate = head - b->prefault_last;
	b->prefault_last = head;
	want = head + (rate * 2 > HUGE_BYTES ? rate * 2 : HUGE_BYTES);
	want = (want + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);
	/* never a page whose previous lap is not written out (and given back) */
	cap = ring_punch ? tbuf_released(b) + b->size : b->size;
	if (want > cap)
		want = cap;
	if (want <= have || populate_pos(b, have, want))
		return;
	max_store(&b->populated, want);
}

/*
 * Writer: ring positions [from, to) are in the file (consumed is still
 * @from): their whole pages go back, before consumed moves, so that the
 * producer (which never passes the page-aligned consumed + size) cannot
 * be writing the next lap into them.  The page holding @to stays: the
 * next pass gives it back.
 */
static unsigned long long given_back;	/* bytes given back after their write-out */

unsigned long long usft_tbuf_given_back(void)
{
	return __atomic_load_n(&given_back, __ATOMIC_RELAXED);
}

/* the pages of ring positions [lo, hi) (page-aligned, hi - lo <= size) go */
static void punch(struct usft_tbuf *b, unsigned long lo, unsigned long hi)
{
	unsigned long m = b->size - 1, off, len, first;

	off = lo & m;
	len = hi - lo;
	first = len < b->size - off ? len : b->size - off;
	for (int k = 0; k < 2 && len; k++) {
		char *p = (char *)b->data + off;

		if (ring_file && ring_fd >= 0)
			fallocate(ring_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  (off_t)(p - (char *)ring_file), (off_t)first);
		else
			madvise(p, first, MADV_DONTNEED);
		len -= first;
		off = 0;
		first = len;
	}
}

void usft_tbuf_give_back(struct usft_tbuf *b, unsigned long from, unsigned long to)
{
	unsigned long lo = from & ~4095UL, hi = to & ~4095UL;

	if (!ring_punch || hi <= lo || !b->data)
		return;
	punch(b, lo, hi);
	__atomic_add_fetch(&given_back, hi - lo, __ATOMIC_RELAXED);
}

/*
 * Writer: the first page of each free slot, so that a new thread's first
 * event finds it there (a populate in the callback cost 45 us at p99, a
 * page already there nothing).  Pages of a shared ring stay across
 * threads; at most PREPARE_SLOTS slots, a few per pass.
 */
#define PREPARE_SLOTS	1024U
#define PREPARE_PER_PASS 64U

static unsigned int prepare_next;	/* slots below it were prepared */

void usft_tbuf_prepare_free(void)
{
	unsigned int done = 0, next = prepare_next;

	if (!ring_file)
		return;
	for (; next < nr_slots && next < PREPARE_SLOTS && done < PREPARE_PER_PASS; next++) {
		struct usft_tbuf *b = &pool[next];

		if (!b->size || __atomic_load_n(&b->populated, __ATOMIC_ACQUIRE))
			continue;
		if (populate(b, 0, FIRST_CHUNK))
			break;		/* full: the producers will say so by losing */
		max_store(&b->populated, FIRST_CHUNK);
		done++;
	}
	prepare_next = next;
}

/* the producer's next limit (any value computed here is a lower bound) */
static unsigned long tbuf_limit(struct usft_tbuf *b)
{
	unsigned long full = tbuf_released(b) + b->size;
	unsigned long pop = __atomic_load_n(&b->populated, __ATOMIC_ACQUIRE);

	if (!ring_file || tbuf_all_there(b, pop))
		return full;
	return pop < full ? pop : full;
}

bool usft_tbuf_make_room(struct usft_tbuf *b, unsigned long end)
{
	unsigned long long t0 = 0;
	unsigned long limit, half;
	bool waited = false;
	int saved = errno;
	bool ok = true;

	for (;;) {
		unsigned int pass = __atomic_load_n(&pool_pass, __ATOMIC_ACQUIRE);
		struct timespec ts = { 0, LOSSLESS_POLL_NS };
		void (*kick)(void);
		bool ran_out;

		if (end - tbuf_released(b) <= b->size)
			break;
		ran_out = waited && mono_ns() - t0 >= LOSSLESS_WAIT_NS;
		/* a writer gone (stopping, stopped by a signal) never hangs us */
		if (!__atomic_load_n(&pool_lossless, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&pool_stalled, __ATOMIC_RELAXED) || ran_out) {
			if (ran_out)
				__atomic_store_n(&pool_stalled, true, __ATOMIC_RELAXED);
			if (waited)
				__atomic_sub_fetch(&pool_waiters, 1, __ATOMIC_RELAXED);
			ok = false;
			goto out;
		}
		if (!waited) {
			__atomic_add_fetch(&pool_waiters, 1, __ATOMIC_SEQ_CST);
			t0 = mono_ns();
			waited = true;
		}
		kick = __atomic_load_n(&usft_tbuf_kick_hook, __ATOMIC_ACQUIRE);
		if (kick)
			kick();
		/* a pass that ended since @pass was read: look again at once */
		syscall(SYS_futex, &pool_pass, FUTEX_WAIT_PRIVATE, pass, &ts, NULL, 0);
	}
	if (waited)
		__atomic_sub_fetch(&pool_waiters, 1, __ATOMIC_RELAXED);
	if (ring_file) {
		/* head never passes the populated part (the first lap, or all laps
		 * when pages go back) */
		unsigned long pop = __atomic_load_n(&b->populated, __ATOMIC_ACQUIRE);
		unsigned long cap = ring_punch ? tbuf_released(b) + b->size : b->size;
		unsigned long need = end < cap ? end : cap;

		if (!tbuf_all_there(b, pop) && pop < need) {
			unsigned long to = need + (!pop ? FIRST_CHUNK :
						   pop < NEXT_CHUNK_MAX ? pop : NEXT_CHUNK_MAX);

			to = (to + 4095) & ~4095UL;
			if (to > cap)
				to = cap;
			if (populate_pos(b, pop, to)) {
				ok = false;
				goto out;
			}
			max_store(&b->populated, to);
		}
	}
	limit = tbuf_limit(b);
	/*
	 * The writer's watermark (the kernel's buffer_percent, 50 by default):
	 * once past half the ring, the writer is woken now instead of at its
	 * next tick, so that a ring small enough to stay in the cache is
	 * drained while the other half fills.  One wake-up per half ring
	 * written (the limit stays past the half until the next look).
	 */
	half = tbuf_released(b) + b->size / 2;
	if (end > half) {
		void (*kick)(void) = __atomic_load_n(&usft_tbuf_kick_hook, __ATOMIC_ACQUIRE);

		if (kick && !waited)
			kick();
	} else if (limit > half) {
		limit = half;
	}
	__atomic_store_n(&b->limit, limit, __ATOMIC_RELAXED);
out:
	errno = saved;
	return ok;
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
		b->events_written = 0;
		prepare_next = 0;
		if (ring_file && ring_fd_ours()) {
			/* shared: the file's pages go; a late write re-populates first */
			__atomic_store_n(&b->limit, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&b->populated, 0, __ATOMIC_RELEASE);
			fallocate(ring_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  (off_t)((char *)b->data - (char *)ring_file), (off_t)b->size);
			continue;
		}
		madvise(b->data, b->size, MADV_DONTNEED);
		b->populated = ring_punch ? 0 : b->size;
	}
}

unsigned int usft_tbuf_waiters(void)
{
	return __atomic_load_n(&pool_waiters, __ATOMIC_RELAXED);
}

void usft_tbuf_set_lossless(bool on)
{
	__atomic_store_n(&pool_lossless, on, __ATOMIC_RELAXED);
}

void usft_tbuf_writer_passed(void)
{
	if (__atomic_load_n(&pool_stalled, __ATOMIC_RELAXED))
		__atomic_store_n(&pool_stalled, false, __ATOMIC_RELAXED);
	__atomic_add_fetch(&pool_pass, 1, __ATOMIC_SEQ_CST);
	/* no system call while nobody waits */
	if (__atomic_load_n(&pool_waiters, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &pool_pass, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void (*usft_tbuf_exit_hook)(void);
void (*usft_tbuf_kick_hook)(void);
bool usft_tbuf_prefetch_ok;

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
const volatile unsigned int *usft_tbuf_cpu_ptr(void)
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
		b->limit = 0;	/* the first reservation looks (and populates) */
		b->lost = b->lost_seen = 0;
		b->nest = b->reserving = b->prof_busy = 0;
		b->pend_w1 = 0;
		b->prof_lost = 0;
		b->prefault_last = 0;
		b->task = -1;
		b->comm_valid = 0;
		b->tid = usft_gettid();
		b->cpu = usft_tbuf_cpu_ptr();
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
	if (ring_punch && b->size) {
		/*
		 * Pages go back: the next thread starts at position 0 with
		 * nothing of this one's left but a first page made ready.
		 */
		punch(b, 0, b->size);
		b->populated = ring_file && populate(b, 0, FIRST_CHUNK) ? 0 : FIRST_CHUNK;
	}
	__atomic_store_n(&b->state, TBUF_FREE, __ATOMIC_RELEASE);
}

/* the slot headers' fixed fields (a fresh pool, or a child's new file) */
static void init_headers(struct usft_tbuf *hdrs, unsigned int n, size_t ring, char *rings,
			 size_t prof_bytes, char *profs)
{
	for (unsigned int i = 0; i < n; i++) {
		struct usft_tbuf *b = &hdrs[i];

		b->state = TBUF_FREE;
		b->size = ring;
		b->wmask = ring ? ring / 8 - 1 : 0;
		b->data = rings ? (uint64_t *)(rings + (size_t)i * ring) : NULL;
		b->cpu = &cpu_unknown;
		b->task = -1;
		b->populated = ring_file ? 0 : b->populated;
		if (prof_bytes) {
			b->prof = (struct usft_prof_ent *)(profs + (size_t)i * prof_bytes);
			b->prof_mask = prof_bytes / sizeof(struct usft_prof_ent) - 1;
		}
	}
}

/* out of the way of the program's own low descriptor numbers */
static int high_fd(int fd)
{
	int hi = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 512) : -1;

	if (hi < 0)
		return fd;
	close(fd);
	return hi;
}

/*
 * A new ring file "rings.PID.XXXXXX" in ring_dir, @bytes long (sparse).
 * Return: its descriptor, or -errno.
 */
static int ring_file_create(size_t bytes)
{
	int fd, n;

	if (ring_anon) {
		/* an attached process: the recorder gets the descriptor itself */
		ring_path[0] = 0;
		fd = memfd_create("usft-rings", MFD_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (ftruncate(fd, (off_t)bytes)) {
			int e = errno;

			close(fd);
			return -e;
		}
		return high_fd(fd);
	}
	n = snprintf(ring_path, sizeof(ring_path), "%s/" USFT_RING_FILE_PREFIX "%d.XXXXXX",
		     ring_dir, (int)getpid());
	if (n <= 0 || (size_t)n >= sizeof(ring_path))
		return -ENAMETOOLONG;
	fd = mkostemp(ring_path, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)bytes)) {
		int e = errno;

		unlink(ring_path);
		close(fd);
		return -e;
	}
	return high_fd(fd);
}

static void ring_file_header(struct usft_ring_file *f, unsigned int n, size_t ring,
			     size_t hdr_off, size_t data_off)
{
	memcpy(f->magic, USFT_RING_MAGIC, 8);
	f->version = USFT_RING_VERSION;
	f->pid = (uint32_t)getpid();
	f->tbuf_size = (uint32_t)sizeof(struct usft_tbuf);
	f->nr_slots = n;
	f->ring_bytes = ring;
	f->hdr_off = hdr_off;
	f->data_off = data_off;
	__atomic_store_n(&f->state, USFT_RING_LIVE, __ATOMIC_RELEASE);
}

struct usft_ring_file *usft_tbuf_ring_file(void)
{
	return ring_file;
}

const char *usft_tbuf_ring_path(void)
{
	return ring_file ? ring_path : NULL;
}

int usft_tbuf_ring_fd(void)
{
	return ring_file && ring_fd_ours() ? ring_fd : -1;
}

/* drop_fd is still the recorder's socket (a program may close any number) */
static bool drop_fd_ours(void)
{
	struct stat st;
	int fd = __atomic_load_n(&drop_fd, __ATOMIC_ACQUIRE);

	return fd >= 0 && !fstat(fd, &st) && st.st_dev == drop_dev && st.st_ino == drop_ino;
}

bool usft_tbuf_ring_drop_held(void)
{
	return drop_fd_ours();
}

void usft_tbuf_ring_drop(int fd)
{
	struct stat st;
	int old = drop_fd;
	bool ours = old >= 0 && drop_fd_ours();	/* not a number the program reused */

	/* forgotten before it is closed: a fork meanwhile never sends on it */
	__atomic_store_n(&drop_fd, -1, __ATOMIC_RELEASE);
	if (ours)
		close(old);
	if (fd < 0)
		return;
	fd = high_fd(fd);
	if (fstat(fd, &st)) {
		close(fd);
		return;
	}
	drop_dev = st.st_dev;
	drop_ino = st.st_ino;
	__atomic_store_n(&drop_fd, fd, __ATOMIC_RELEASE);
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/*
 * Fork child of an attached process: its new memfd and a pidfd of itself
 * to the recorder, one packet (a header, "pid=N\n"), before it records
 * anything.  In flight, the descriptors keep the file alive even if the
 * child dies at once.  Never waits: a full or closed socket (the recorder
 * gone) leaves the child recording, not crash-safe.
 */
static void drop_child_rings(int memfd)
{
	struct usft_ctl_hdr h = { .magic = USFT_CTL_MAGIC, .version = USFT_CTL_VERSION,
				  .op = USFT_CTL_CHILD };
	union usft_ctl_cmsg u;
	char text[32];
	struct iovec iov[2] = { { &h, sizeof(h) }, { text, 0 } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
	int fds[2] = { memfd, -1 }, nfd = 1, e = errno;

	if (!drop_fd_ours())
		return;
	fds[1] = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (fds[1] >= 0)
		nfd = 2;
	iov[1].iov_len = (size_t)snprintf(text, sizeof(text), "pid=%d\n", (int)getpid());
	h.len = (uint32_t)iov[1].iov_len;
	usft_ctl_put_fds(&m, &u, fds, nfd);
	while (sendmsg(drop_fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
	if (fds[1] >= 0)
		close(fds[1]);
	errno = e;
}

void usft_tbuf_ring_done(void)
{
	if (!ring_file)
		return;
	__atomic_store_n(&ring_file->state, USFT_RING_ENDED, __ATOMIC_RELEASE);
	if (ring_path[0])
		unlink(ring_path);
}

void usft_tbuf_ring_live(void)
{
	if (!ring_file || ring_file->state == USFT_RING_LIVE)
		return;
	ring_file->events = ring_file->lost = ring_file->no_slot = ring_file->threads = 0;
	__atomic_store_n(&ring_file->state, USFT_RING_LIVE, __ATOMIC_RELEASE);
}

/*
 * Fork child: the shared mapping is the parent's too.  The child maps a
 * file of its own at the same address (the threads' pointers stay
 * valid); if that fails, private memory there (it records, but not
 * crash-safe).
 */
static void atfork_child_rings(void)
{
	size_t hdr_off = (size_t)((char *)pool - (char *)ring_file);
	size_t data_off = (size_t)((char *)pool[0].data - (char *)ring_file);
	void *base = ring_file, *p = MAP_FAILED;
	int fd;

	if (ring_fd >= 0)
		close(ring_fd);
	fd = ring_file_create(ring_map_bytes);
	if (fd >= 0)
		p = mmap(base, ring_map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	if (p == MAP_FAILED) {
		if (fd >= 0) {
			if (ring_path[0])
				unlink(ring_path);
			close(fd);
		}
		fd = -1;
		mmap(base, ring_map_bytes, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	}
	ring_fd = fd;
	ring_fd_note();
	prepare_next = 0;
	init_headers(pool, nr_slots, pool_ring, (char *)ring_file + data_off, pool_prof_bytes,
		     pool_profs);
	ring_file_header(ring_file, nr_slots, pool_ring, hdr_off, data_off);
	if (fd < 0)
		ring_file = NULL;	/* private from now on */
	else if (ring_anon)
		drop_child_rings(fd);
}

/* fork child: only the forking thread exists; its old events are the parent's */
void usft_tbuf_atfork_child(void)
{
	struct usft_tbuf *self = usft_tbuf_own();

	usft_tid_fork_reset();	/* before its own handler may have run */

	if (ring_file) {
		atfork_child_rings();
		if ((unsigned long)self > 1)
			self->state = TBUF_LIVE;
	}
	for (unsigned int i = 0; i < nr_slots; i++) {
		struct usft_tbuf *b = usft_tbuf_slot(i);

		if (b != self && b->state != TBUF_FREE)
			b->state = TBUF_FREE;
	}
	if ((unsigned long)self > 1) {
		self->head = self->commit = self->consumed = 0;
		self->limit = 0;
		if (ring_punch && !ring_file)
			self->populated = 0;	/* positions start again (private) */
		self->lost = self->lost_seen = 0;
		self->nest = self->reserving = self->prof_busy = 0;
		/* a pending entry was made before the fork: the parent writes it */
		self->pend_w1 = 0;
		self->task = -1;
		self->comm_valid = 0;
		self->tid = usft_gettid();
		self->cpu = usft_tbuf_cpu_ptr();
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

#define PAGE_UP(x)	(((x) + 4095) & ~(size_t)4095)

/*
 * Shared rings: header page, slot headers and rings in one file mapping.
 * Return: the slot headers, NULL (the caller falls back to private rings).
 */
static struct usft_tbuf *shared_pool(unsigned int n, size_t ring)
{
	size_t hdr_off = 4096, data_off = hdr_off + PAGE_UP(n * sizeof(struct usft_tbuf));
	size_t bytes = data_off + (size_t)n * ring;
	void *p;
	int fd = ring_file_create(bytes);

	if (fd < 0)
		return NULL;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		unlink(ring_path);
		close(fd);
		return NULL;
	}
	ring_fd = fd;
	ring_file = p;
	ring_map_bytes = bytes;
	ring_fd_note();
	/* the headers (written by every claim) must not fault on a full tmpfs */
	if (madvise(p, data_off, MADV_POPULATE_WRITE) && fallocate(fd, 0, 0, (off_t)data_off)) {
		munmap(p, bytes);
		unlink(ring_path);
		close(fd);
		ring_file = NULL;
		ring_fd = -1;
		return NULL;
	}
	ring_file_header(ring_file, n, ring, hdr_off, data_off);
	return (struct usft_tbuf *)((char *)p + hdr_off);
}

/*
 * The slot headers, rings and profile tables for *@n threads, halving *@n
 * until the reservations fit (strict overcommit).  Return: the headers,
 * NULL when not even four fit.
 */
static struct usft_tbuf *pool_reserve(bool shared, unsigned int *n, size_t ring,
				      size_t prof_bytes, char **rings, char **profs)
{
	struct usft_tbuf *hdrs;

	for (; *n >= 4; *n /= 2) {
		if (shared) {
			hdrs = shared_pool(*n, ring);
			*rings = hdrs ? (char *)ring_file + ring_file->data_off : NULL;
		} else {
			hdrs = reserve(*n * sizeof(*hdrs), 4096);
			*rings = ring ? reserve(ring * *n, HUGE_BYTES) : NULL;
		}
		*profs = prof_bytes ? reserve(prof_bytes * *n, 4096) : NULL;
		if (hdrs && (!ring || *rings) && (!prof_bytes || *profs))
			return hdrs;
		if (hdrs && shared) {
			munmap(ring_file, ring_map_bytes);
			unlink(ring_path);
			close(ring_fd);
			ring_file = NULL;
			ring_fd = -1;
		} else if (hdrs) {
			munmap(hdrs, *n * sizeof(*hdrs));
		}
		if (*rings && !shared)
			munmap(*rings, ring * *n);
		if (*profs)
			munmap(*profs, prof_bytes * *n);
	}
	*rings = *profs = NULL;
	return NULL;
}

int usft_tbuf_pool_init(const struct usft_pool_opts *o)
{
	size_t ring, prof_bytes;
	char *rings = NULL, *profs = NULL;
	struct usft_tbuf *hdrs = NULL;
	unsigned int max_threads = o->max_threads;
	bool shared = false;

	if (pool)
		return 0;
	usft_tid_init();
	/* ring * max_threads must not wrap (a ring of 2^56 bytes did) */
	if (o->ring_bytes > USFT_RING_MAX_BYTES || max_threads > USFT_MAX_THREADS ||
	    o->prof_entries > USFT_RING_MAX_BYTES / sizeof(struct usft_prof_ent))
		return -EINVAL;
	ring = o->ring_bytes ? round_pow2(o->ring_bytes) : 0;
	prof_bytes = o->prof_entries ?
		     round_pow2(o->prof_entries * sizeof(struct usft_prof_ent)) : 0;
	if (!max_threads)
		max_threads = 256;
	pool_lossless = o->lossless;
#if __has_include("asm/prefetch.h")
	usft_tbuf_prefetch_ok = arch_prefetch_w_usable();
#endif
	pool_stalled = false;
	ring_keep = o->ring_keep ? o->ring_keep : USFT_RING_KEEP_DEFAULT;
	ring_punch = ring > ring_keep;
	if (ring && o->ring_dir && *o->ring_dir &&
	    snprintf(ring_dir, sizeof(ring_dir), "%s", o->ring_dir) < (int)sizeof(ring_dir))
		shared = true;
	else if (ring && o->ring_anon)
		shared = ring_anon = true;
	hdrs = pool_reserve(shared, &max_threads, ring, prof_bytes, &rings, &profs);
	if (!hdrs && shared) {
		/* no file (a read-only or full directory): private rings, said once */
		fprintf(stderr, "usft: cannot make shared ring buffers in %s (%s): recording with "
			"private ones, lost if the process is killed\n",
			ring_anon ? "a memory file" : ring_dir, strerror(errno));
		max_threads = o->max_threads ? o->max_threads : 256;
		hdrs = pool_reserve(false, &max_threads, ring, prof_bytes, &rings, &profs);
	}
	if (!hdrs)
		return -ENOMEM;
	/*
	 * No MADV_HUGEPAGE: a thread's first write would wait while a 2 MiB
	 * page is zeroed (35 ms seen); 4 KiB pages, faulted in ahead by the
	 * writer, cost a ring write nothing measurable (docs/tracers.md).
	 */
	if (pthread_key_create(&tbuf_key, tbuf_thread_exit))
		return -EAGAIN;
	init_headers(hdrs, max_threads, ring, rings, prof_bytes, profs);
	pool_ring = ring;
	pool_prof_bytes = prof_bytes;
	pool_profs = profs;
	/*
	 * The first thread to trace (in practice the main thread) takes slot
	 * 0 (claim_hint starts there): on request its whole ring is faulted
	 * in now, so a long run never takes a page fault in a callback.
	 */
	if (o->prefault_first && ring && !populate(&hdrs[0], 0, ring))
		hdrs[0].populated = ring;
	nr_slots = max_threads;
	__atomic_store_n(&pool, hdrs, __ATOMIC_RELEASE);
	return 0;
}
