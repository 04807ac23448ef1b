/* SPDX-License-Identifier: MIT */
/*
 * tracers/tid.h - the calling thread's id, cached per thread: one gettid()
 * syscall per thread lifetime, errno kept, no lock, no allocation, safe in
 * a callback and in a signal handler (a handler that interrupts the first
 * lookup makes its own; both store the same value).  The ring buffers
 * (ring_buffer.c) and the trace arrays (trace_array.c) share it.
 *
 * fork(): the child's one thread has a new id; usft_tid_init() registers
 * usft_tid_fork_reset() as a pthread_atfork() child handler, and code that
 * needs the id inside its own child handler (usft_tbuf_atfork_child())
 * calls usft_tid_fork_reset() first, since handlers run in the order they
 * were registered.  A clone() made without the C library's fork() (no
 * handlers run) keeps the parent's value, as any cached tid would.
 */
#ifndef USFT_TRACERS_TID_H
#define USFT_TRACERS_TID_H

extern __thread int usft_tid_cache __attribute__((tls_model("initial-exec")));

/* the first lookup of a thread (out of line, errno kept) */
int usft_tid_lookup(void);

static inline __attribute__((always_inline)) int usft_gettid(void)
{
	int t = usft_tid_cache;

	return __builtin_expect(t != 0, 1) ? t : usft_tid_lookup();
}

/* forget the cached id (fork child); idempotent */
void usft_tid_fork_reset(void);

/* register the fork reset once (not on the hot path: pthread_atfork() locks) */
void usft_tid_init(void);

#endif /* USFT_TRACERS_TID_H */
