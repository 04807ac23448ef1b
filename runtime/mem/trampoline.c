// SPDX-License-Identifier: MIT
/*
 * mem/trampoline.c - usft_alloc_trampoline(): user code (direct
 * trampolines, benchmark stubs) copied into trampoline windows.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "core/internal.h"
#include "core/text.h"
#include "mem/execmem.h"
#include "asm/ftrace.h"

struct tramp_free {
	struct usft_window *w;
	unsigned long addr;
	size_t len;
};

/*
 * usft_execmem_reserve() - reserve @len bytes of trampoline memory placed per
 * the tramp_placement option relative to @near_ip (0: the main executable);
 * nothing is written.  Caller holds ftrace_lock.  Return: the address (and
 * *@wp) or 0.
 */
unsigned long usft_execmem_reserve(unsigned long near_ip, size_t len, struct usft_window **wp)
{
	struct usft_window *w = NULL;
	unsigned long lo, hi, addr = 0;
	struct usft_object *obj = near_ip ? usft_object_of(near_ip) : usft_main_object();

	lo = hi = near_ip;
	if (obj) {
		lo = obj->text_lo;
		hi = obj->text_hi;
	}
	if (usft_opts.tramp_placement == USFT_TRAMP_NEAR && hi) {
		w = usft_window_near(lo, hi, ARCH_NEAR_REACH);
		addr = w ? usft_execmem_alloc(w, len) : 0;
	}
	if (!addr) {
		w = usft_window_far();
		addr = w ? usft_execmem_alloc(w, len) : 0;
	}
	if (addr)
		*wp = w;
	return addr;
}

int usft_execmem_write(unsigned long addr, const void *code, size_t len)
{
	int ret = usft_text_open(addr, len);

	if (!ret) {
		memcpy((void *)addr, code, len);
		/* arm64: D-cache clean + I-cache invalidate (nothing on x86-64) */
		__builtin___clear_cache((char *)addr, (char *)addr + len);
	}
	ret |= usft_text_close_all();
	usft_sync_core();
	return ret ? -EPERM : 0;
}

/*
 * usft_execmem_place() - copy @code into trampoline memory placed per the
 * tramp_placement option relative to @near_ip (0: the main executable).
 * Caller holds ftrace_lock.  Return: the address (and *@wp) or 0.
 */
unsigned long usft_execmem_place(const void *code, size_t len, unsigned long near_ip,
				 struct usft_window **wp)
{
	unsigned long addr = usft_execmem_reserve(near_ip, len, wp);

	if (addr && usft_execmem_write(addr, code, len)) {
		usft_execmem_free(*wp, addr, len);
		addr = 0;
	}
	return addr;
}

USFT_API void *usft_alloc_trampoline(const void *code, size_t len, unsigned long near_ip)
{
	USFT_API_ENTER(busy);
	struct usft_window *w;
	unsigned long addr;

	if (busy) {
		errno = -busy;
		return NULL;
	}
	if (!code || !len || len > (64UL << 10)) {
		errno = EINVAL;
		return NULL;
	}
	if (ftrace_lazy_init_ro()) {
		errno = ENODEV;
		return NULL;
	}
	pthread_mutex_lock(&ftrace_lock);
	addr = usft_execmem_place(code, len, near_ip, &w);
	pthread_mutex_unlock(&ftrace_lock);
	if (!addr)
		errno = ENOMEM;
	return (void *)addr;
}

static void tramp_free_cb(void *p)
{
	struct tramp_free *f = p;

	usft_execmem_free(f->w, f->addr, f->len);
	free(f);
}

USFT_API void usft_free_trampoline(void *addr, size_t len)
{
	struct tramp_free *f;
	struct usft_window *w;

	if (!addr)
		return;
	w = usft_execmem_window_of((unsigned long)addr);
	if (!w)
		return;
	f = malloc(sizeof(*f));
	if (!f)
		return;	/* leak rather than reuse too early */
	f->w = w;
	f->addr = (unsigned long)addr;
	f->len = len;
	usft_call_rcu_tasks(tramp_free_cb, f);
}
