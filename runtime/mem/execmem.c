// SPDX-License-Identifier: MIT
/*
 * mem/execmem.c - trampoline windows (kernel: execmem_alloc() with
 * EXECMEM_FTRACE / EXECMEM_BPF ranges).
 *
 * A window is private anonymous memory mapped PROT_READ|PROT_EXEC, so it
 * is copied on fork like text and never writable outside a batch.  Near
 * windows are placed with MAP_FIXED_NOREPLACE probes walking away from the
 * text they serve until one lands in reach.  Freed chunks wait in a FIFO
 * of at least QUARANTINE entries before they are handed out again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "core/internal.h"
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
};

struct usft_window {
	struct usft_window *next;
	unsigned long start;
	size_t size;
	size_t used;
	bool far;
	struct chunk *free_head, *free_tail;
	unsigned long nr_free;
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
	/* fill with int3 so stray jumps trap instead of sliding */
	if (!mprotect((void *)addr, WINDOW_SIZE, PROT_READ | PROT_WRITE)) {
#if defined(__x86_64__)
		memset((void *)addr, 0xcc, WINDOW_SIZE);
#endif
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

unsigned long usft_execmem_alloc(struct usft_window *w, size_t size)
{
	unsigned long addr = 0;
	struct chunk **pp;

	size = (size + 63) & ~63UL;
	pthread_mutex_lock(&execmem_lock);
	if (w->nr_free > QUARANTINE) {
		for (pp = &w->free_head; *pp; pp = &(*pp)->next) {
			struct chunk *c = *pp;

			if (c->size != size)
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
			goto out;
		}
	}
	if (w->used + size <= w->size) {
		addr = w->start + w->used;
		w->used += size;
	}
out:
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
	pthread_mutex_lock(&execmem_lock);
	if (w->free_tail)
		w->free_tail->next = c;
	else
		w->free_head = c;
	w->free_tail = c;
	w->nr_free++;
	pthread_mutex_unlock(&execmem_lock);
}
