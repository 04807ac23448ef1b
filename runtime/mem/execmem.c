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
 * Each window is followed by its data twin: USFT_EXECMEM_TWIN bytes of
 * private PROT_READ|PROT_WRITE memory, mapped with it, so the chunk at
 * addr owns [addr + USFT_EXECMEM_TWIN, + size) too, for as long as it owns
 * addr (usft_execmem_twin()).  A trampoline keeps there the words that
 * change while threads may run it, and reads them RIP-relative: one
 * aligned 8-byte store updates them on any text route, where a word in
 * the executable page written through /proc/self/mem is copied by the
 * kernel's memcpy(), which may store it a byte at a time.
 *
 * Reuse.  A freed chunk waits in a FIFO quarantine; only once QUARANTINE
 * chunks wait does the check core registered (usft_execmem_set_reclaim(),
 * core/tramp_alloc.c: no thread can be inside any window) run, and a clean
 * one makes every chunk freed before it reusable.  Meanwhile fresh memory
 * is used.
 *
 * A leaf: nothing here knows of objects, options, threads or text batches
 * (core/tramp_alloc.c is that policy).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "compat/compiler.h"
#include "mem/execmem.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define WINDOW_SIZE	(1UL << 20)
#define MAP_SIZE	(WINDOW_SIZE + USFT_EXECMEM_TWIN)	/* the window and its twin */
_Static_assert(USFT_EXECMEM_TWIN == WINDOW_SIZE, "the twin mirrors the window");
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
	size_t filled;		/* bytes from start filled with trapping insns (whole pages) */
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

unsigned long usft_execmem_twin(unsigned long addr)
{
	return addr + USFT_EXECMEM_TWIN;
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
		munmap((void *)addr, MAP_SIZE);
		return NULL;
	}
	/* the data twin: writable, never executable */
	if (mprotect((void *)(addr + WINDOW_SIZE), USFT_EXECMEM_TWIN, PROT_READ | PROT_WRITE)) {
		munmap((void *)addr, MAP_SIZE);
		free(w);
		return NULL;
	}
	/*
	 * Its pages are filled with trapping instructions as allocations reach
	 * them (fill_to()), not here: a window is 1 MiB and a program's
	 * trampolines use a few pages of it, and each page touched costs a
	 * fault (in a VM an exit too) and stays resident.
	 */
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
				if (lo < (unsigned long)(i + 1) * step + MAP_SIZE)
					break;
				base = ((lo - MAP_SIZE) & ~(step - 1)) - (unsigned long)i * step;
			} else {
				base = ((hi + step) & ~(step - 1)) + (unsigned long)i * step;
			}
			if (!in_reach(base, WINDOW_SIZE, lo, hi, reach))
				break;
			p = mmap((void *)base, MAP_SIZE, PROT_READ | PROT_EXEC,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			if ((unsigned long)p != base) {	/* old kernel: hint only */
				munmap(p, MAP_SIZE);
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
	p = mmap(NULL, MAP_SIZE, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	w = p == MAP_FAILED ? NULL : new_window((unsigned long)p, true);
out:
	pthread_mutex_unlock(&execmem_lock);
	return w;
}

/* ---- reuse ------------------------------------------------------------- */

static usft_execmem_reclaim_fn reclaim_fn;

void usft_execmem_set_reclaim(usft_execmem_reclaim_fn fn)
{
	__atomic_store_n(&reclaim_fn, fn, __ATOMIC_RELEASE);
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
	usft_execmem_reclaim_fn fn = __atomic_load_n(&reclaim_fn, __ATOMIC_ACQUIRE);

	/* no check (nothing registered): freed chunks are never reused */
	if (!fn || !fn(in_any_window))
		return false;
	for (struct usft_window *w = windows; w; w = w->next) {
		for (struct chunk *c = w->free_head; c; c = c->next)
			c->safe = true;
		w->nr_unsafe = 0;
		w->next_scan = 0;
	}
	return true;
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

/*
 * Fill @w's pages up to the one holding byte @end - 1 with trapping
 * instructions, so stray jumps trap instead of sliding (kernel:
 * execmem_fill_trapping_insns() when execmem memory is made).  Only pages
 * no allocation ever reached: no thread can be running in them.  Where
 * they cannot be made writable (a policy), they stay as they are, as a
 * window that could not be filled at all did before.  execmem_lock held.
 * Return: false when they were made writable and could not be made
 * executable again: nothing may be placed there.
 */
static bool fill_to(struct usft_window *w, size_t end)
{
	static size_t page;
	size_t to;
	void *at;

	if (!page)
		page = (size_t)sysconf(_SC_PAGESIZE);
	to = (end + page - 1) & ~(page - 1);
	if (to <= w->filled)
		return true;
	if (to > w->size)
		to = w->size;
	at = (void *)(w->start + w->filled);
	if (!mprotect(at, to - w->filled, PROT_READ | PROT_WRITE)) {
		execmem_fill_trapping_insns(at, to - w->filled);
		if (mprotect(at, to - w->filled, PROT_READ | PROT_EXEC) &&
		    mprotect(at, to - w->filled, PROT_READ | PROT_EXEC))
			return false;
	}
	w->filled = to;
	return true;
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
		if (fill_to(w, w->used + size)) {
			addr = w->start + w->used;
			w->used += size;
		} else {
			/* its fresh pages cannot be executable: no more from it */
			w->used = w->size;
		}
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
