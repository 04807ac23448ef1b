// SPDX-License-Identifier: MIT
/*
 * mem/execmem.c - trampoline windows (kernel: execmem_alloc() with
 * EXECMEM_FTRACE / EXECMEM_BPF ranges).
 *
 * A window is private anonymous memory mapped PROT_READ|PROT_EXEC, so it
 * is copied on fork like text and never writable outside a batch.  Near
 * windows are placed with MAP_FIXED_NOREPLACE probes walking away from the
 * text they serve until one lands in reach.
 *
 * Reuse.  A chunk is freed after a tasks-RCU grace period, which covers a
 * thread between a trampoline's TASK_MARK and TASK_EXIT but not one stopped
 * on the instructions before the mark (the first one) or after the exit (the
 * final ret, ftrace_regs_caller's jump to a direct target): the kernel's
 * tasks-RCU sees a preempted task, usft cannot.  So freed chunks are only
 * handed out again once a reclaim scan proved no thread can be there: every
 * thread runs a rendezvous handler that reports where it was interrupted,
 * and the scan is clean when no thread is inside trampoline memory at all
 * (nor in a signal handler that interrupted trampoline code, see
 * core/signal.c); then every chunk freed before it is safe.  A thread that
 * blocks the rendezvous signal, or sleeps in the kernel (it is not
 * signalled: no EINTR), counts by the pc of the system call it waits in
 * (/proc/<tid>/syscall), and makes the scan dirty while it runs.  Scans
 * run once QUARANTINE chunks wait, and retry a few times; meanwhile fresh
 * memory is used.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "core/internal.h"
#include "core/text.h"
#include "mem/execmem.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define WINDOW_SIZE	(1UL << 20)
#define QUARANTINE	64

struct chunk {
	struct chunk *next;
	unsigned long addr;
	size_t size;
	bool safe;		/* a reclaim scan ran after it was freed */
};

struct usft_window {
	struct usft_window *next;
	unsigned long start;
	size_t size;
	size_t used;
	bool far;
	struct chunk *free_head, *free_tail;
	unsigned long nr_free;
	unsigned long nr_unsafe;	/* freed since the last clean scan */
	unsigned long next_scan;	/* nr_unsafe that warrants the next scan */
};

static struct usft_window *windows;
static pthread_mutex_t execmem_lock = PTHREAD_MUTEX_INITIALIZER;

bool usft_window_contains(struct usft_window *w, unsigned long addr)
{
	return w && addr >= w->start && addr < w->start + w->size;
}

struct usft_window *usft_execmem_window_of(unsigned long addr)
{
	for (struct usft_window *w = smp_load_acquire(&windows); w; w = w->next)
		if (usft_window_contains(w, addr))
			return w;
	return NULL;
}

bool usft_execmem_contains(unsigned long addr)
{
	return usft_execmem_window_of(addr) != NULL;
}

static bool in_reach(unsigned long start, size_t size, unsigned long lo, unsigned long hi,
		     unsigned long reach)
{
	unsigned long wlo = start, whi = start + size;
	unsigned long a = wlo < lo ? wlo : lo, b = whi > hi ? whi : hi;

	return b - a < reach;
}

static struct usft_window *new_window(unsigned long addr, bool far)
{
	struct usft_window *w = calloc(1, sizeof(*w));

	if (!w) {
		munmap((void *)addr, WINDOW_SIZE);
		return NULL;
	}
	/* fill with trapping instructions so stray jumps trap instead of sliding */
	if (!mprotect((void *)addr, WINDOW_SIZE, PROT_READ | PROT_WRITE)) {
		execmem_fill_trapping_insns((void *)addr, WINDOW_SIZE);
		if (mprotect((void *)addr, WINDOW_SIZE, PROT_READ | PROT_EXEC) &&
		    mprotect((void *)addr, WINDOW_SIZE, PROT_READ | PROT_EXEC)) {
			/* a window that cannot become executable is no window */
			munmap((void *)addr, WINDOW_SIZE);
			free(w);
			return NULL;
		}
	}
	w->start = addr;
	w->size = WINDOW_SIZE;
	w->far = far;
	w->next = windows;
	smp_store_release(&windows, w);
	return w;
}

struct usft_window *usft_window_near(unsigned long lo, unsigned long hi, unsigned long reach)
{
	struct usft_window *w;
	unsigned long step = 16UL << 20, base;
	int pass, i;

	pthread_mutex_lock(&execmem_lock);
	for (w = windows; w; w = w->next)
		if (!w->far && in_reach(w->start, w->size, lo, hi, reach) &&
		    w->used + 4096 <= w->size)
			goto out;
	/* below the text first, then above it */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < 128; i++) {
			void *p;

			if (pass == 0) {
				if (lo < (unsigned long)(i + 1) * step + WINDOW_SIZE)
					break;
				base = ((lo - WINDOW_SIZE) & ~(step - 1)) - (unsigned long)i * step;
			} else {
				base = ((hi + step) & ~(step - 1)) + (unsigned long)i * step;
			}
			if (!in_reach(base, WINDOW_SIZE, lo, hi, reach))
				break;
			p = mmap((void *)base, WINDOW_SIZE, PROT_READ | PROT_EXEC,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			if ((unsigned long)p != base) {	/* old kernel: hint only */
				munmap(p, WINDOW_SIZE);
				continue;
			}
			w = new_window(base, false);
			goto out;
		}
	}
	w = NULL;
out:
	pthread_mutex_unlock(&execmem_lock);
	return w;
}

struct usft_window *usft_window_far(void)
{
	struct usft_window *w;
	void *p;

	pthread_mutex_lock(&execmem_lock);
	for (w = windows; w; w = w->next)
		if (w->far && w->used + 4096 <= w->size)
			goto out;
	p = mmap(NULL, WINDOW_SIZE, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	w = p == MAP_FAILED ? NULL : new_window((unsigned long)p, true);
out:
	pthread_mutex_unlock(&execmem_lock);
	return w;
}

/* ---- reclaim scans ----------------------------------------------------- */

#define SCAN_TRIES	3
/*
 * The pcs the handlers report, sized for the process's threads before each
 * scan.  A handler stopped in a debugger may still write into an earlier
 * array, so a replaced one is never freed (they double).
 */
struct scan_pcs {
	int cap;
	unsigned long v[];
};
static struct scan_pcs *scan_pc;
static unsigned long *blocked_pc;	/* read by this thread only */
static int blocked_cap;
static int scan_n, scan_dirty;

/* rendezvous handler: where was this thread? */
static void scan_thread(ucontext_t *uc, void *arg)
{
	struct scan_pcs *p = __atomic_load_n(&scan_pc, __ATOMIC_ACQUIRE);
	int i = __atomic_fetch_add(&scan_n, 1, __ATOMIC_RELAXED);

	(void)arg;
	if (p && i < p->cap && !usft_task.tramp_irq)
		__atomic_store_n(&p->v[i], usft_uc_pc(uc), __ATOMIC_RELAXED);
	else
		__atomic_store_n(&scan_dirty, 1, __ATOMIC_RELAXED);
}

/* room for the pcs of every thread (and some created meanwhile) */
static int scan_reserve(void)
{
	int n = usft_nr_threads(), cap = 2 * (n > 0 ? n : 1) + 64;

	if (!scan_pc || scan_pc->cap < cap) {
		struct scan_pcs *p = calloc(1, sizeof(*p) + cap * sizeof(p->v[0]));

		if (!p)
			return -ENOMEM;
		p->cap = cap;
		__atomic_store_n(&scan_pc, p, __ATOMIC_RELEASE);	/* the old one stays */
	}
	if (blocked_cap < cap) {
		unsigned long *b = realloc(blocked_pc, cap * sizeof(*b));

		if (!b)
			return -ENOMEM;
		blocked_pc = b;
		blocked_cap = cap;
	}
	return 0;
}

static bool in_any_window(unsigned long pc)
{
	for (struct usft_window *w = windows; w; w = w->next)
		if (usft_window_contains(w, pc))
			return true;
	return false;
}

/* execmem_lock held.  Return: true when every freed chunk is safe now. */
static bool reclaim_scan(void)
{
	for (int t = 0; t < SCAN_TRIES; t++) {
		bool dirty;
		int n, nb;

		if (scan_reserve())
			return false;	/* cannot tell: not clean */

		__atomic_store_n(&scan_n, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&scan_dirty, 0, __ATOMIC_RELAXED);
		/* the handlers' stores are ordered before their acks */
		dirty = usft_threads_scan(scan_thread, NULL, usft_any_pc, blocked_pc, blocked_cap,
					  &nb) != 0 ||
			usft_task.tramp_irq;
		dirty |= __atomic_load_n(&scan_dirty, __ATOMIC_RELAXED);
		n = __atomic_load_n(&scan_n, __ATOMIC_RELAXED);
		for (int i = 0; !dirty && i < n && i < scan_pc->cap; i++)
			dirty = in_any_window(__atomic_load_n(&scan_pc->v[i], __ATOMIC_RELAXED));
		/*
		 * A thread that blocks the signal counts where it waits in a
		 * system call; running (or inside a handler on its way out) it
		 * could be anywhere: try again.
		 */
		for (int i = 0; !dirty && i < nb; i++)
			dirty = !blocked_pc[i] || in_any_window(blocked_pc[i]);
		/*
		 * A thread not signalled may be inside a handler that interrupted
		 * trampoline code (it returns there): its tramp_irq is its own,
		 * but usft_run_handler() counts such handlers process-wide.
		 */
		if (nb && __atomic_load_n(&usft_nr_tramp_irq, __ATOMIC_ACQUIRE))
			dirty = true;
		usft_count(nr_reclaim_scans);
		if (!dirty) {
			for (struct usft_window *w = windows; w; w = w->next) {
				for (struct chunk *c = w->free_head; c; c = c->next)
					c->safe = true;
				w->nr_unsafe = 0;
				w->next_scan = 0;
			}
			return true;
		}
		sched_yield();
	}
	return false;
}

static unsigned long take_safe_chunk(struct usft_window *w, size_t size)
{
	for (struct chunk **pp = &w->free_head; *pp; pp = &(*pp)->next) {
		struct chunk *c = *pp;
		unsigned long addr;

		if (c->size != size || !c->safe)
			continue;
		*pp = c->next;
		if (w->free_tail == c) {
			w->free_tail = NULL;
			for (struct chunk *t = w->free_head; t; t = t->next)
				w->free_tail = t;
		}
		w->nr_free--;
		addr = c->addr;
		free(c);
		return addr;
	}
	return 0;
}

unsigned long usft_execmem_alloc(struct usft_window *w, size_t size)
{
	unsigned long addr;

	size = (size + 63) & ~63UL;
	pthread_mutex_lock(&execmem_lock);
	addr = take_safe_chunk(w, size);
	if (!addr && w->nr_unsafe >= QUARANTINE && w->nr_unsafe >= w->next_scan) {
		if (reclaim_scan())
			addr = take_safe_chunk(w, size);
		else	/* a thread stays in trampoline memory: not at every allocation */
			w->next_scan = w->nr_unsafe + QUARANTINE;
	}
	if (!addr && w->used + size <= w->size) {
		addr = w->start + w->used;
		w->used += size;
	}
	pthread_mutex_unlock(&execmem_lock);
	return addr;
}

void usft_execmem_free(struct usft_window *w, unsigned long addr, size_t size)
{
	struct chunk *c = malloc(sizeof(*c));

	if (!c)
		return;	/* leak rather than reuse early */
	c->next = NULL;
	c->addr = addr;
	c->size = (size + 63) & ~63UL;
	c->safe = false;
	pthread_mutex_lock(&execmem_lock);
	if (w->free_tail)
		w->free_tail->next = c;
	else
		w->free_head = c;
	w->free_tail = c;
	w->nr_free++;
	w->nr_unsafe++;
	pthread_mutex_unlock(&execmem_lock);
}
