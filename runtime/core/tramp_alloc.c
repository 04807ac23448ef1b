// SPDX-License-Identifier: MIT
/*
 * core/tramp_alloc.c - the policy over mem/execmem.c's windows: where
 * trampoline memory is placed (the tramp_placement option, the object a
 * site belongs to), how it is filled (a text batch), when freed memory may
 * be reused (a reclaim scan of every thread), and usft_alloc_trampoline()
 * for user code (direct trampolines, benchmark stubs).  mem/ itself knows
 * nothing of objects, options, threads or text batches.
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
 * (/proc/<tid>/syscall), and makes the scan dirty while it runs.  mem/
 * runs a scan once its quarantine of freed chunks is full; meanwhile fresh
 * memory is used.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "core/internal.h"
#include "core/text.h"
#include "mem/execmem.h"
#include "asm/ftrace.h"

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
static __no_tsan void scan_thread(ucontext_t *uc, void *arg)
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

/*
 * tramp_reclaim_scan() - mem/execmem.c's reclaim check, under its lock:
 * every thread reports where it is (a rendezvous), and the scan is clean
 * when none is in trampoline memory (@in_window).  Return: true when clean,
 * so every chunk freed before it may be handed out again.
 */
static bool tramp_reclaim_scan(bool (*in_window)(unsigned long pc))
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
			dirty = in_window(__atomic_load_n(&scan_pc->v[i], __ATOMIC_RELAXED));
		/*
		 * A thread that blocks the signal counts where it waits in a
		 * system call; running (or inside a handler on its way out) it
		 * could be anywhere: try again.
		 */
		for (int i = 0; !dirty && i < nb; i++)
			dirty = !blocked_pc[i] || in_window(blocked_pc[i]);
		/*
		 * A thread not signalled may be inside a handler that interrupted
		 * trampoline code (it returns there): its tramp_irq is its own,
		 * but usft_run_handler() counts such handlers process-wide.
		 */
		if (nb && __atomic_load_n(&usft_nr_tramp_irq, __ATOMIC_ACQUIRE))
			dirty = true;
		usft_count(nr_reclaim_scans);
		if (!dirty)
			return true;
		sched_yield();
	}
	return false;
}

void usft_tramp_alloc_init(void)
{
	usft_execmem_set_reclaim(tramp_reclaim_scan);
}

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
		ret = usft_text_write(addr, code, len);
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
