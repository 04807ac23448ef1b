/* SPDX-License-Identifier: MIT */
/*
 * core/text.h - opening text pages for one batch and cross-thread sync.
 */
#ifndef USFT_CORE_TEXT_H
#define USFT_CORE_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <ucontext.h>

/*
 * USFT_TEXT_STEP() - a point between two steps of the text patcher.  Debug
 * builds (cmake -DUSFT_DEBUG_YIELDS=ON) yield the CPU or spin briefly there
 * to widen the windows other threads can hit (the torture suite); otherwise
 * it is nothing.  Never on the site -> trampoline -> callback path.
 */
#ifdef USFT_DEBUG_YIELDS
void usft_debug_step(void);
#define USFT_TEXT_STEP() usft_debug_step()
#else
#define USFT_TEXT_STEP() do { } while (0)
#endif

/* Make [addr, addr+len) writable (RWX: other threads keep executing it)
 * until usft_text_close_all().  Return: 0 or -EPERM. */
int usft_text_open(unsigned long addr, size_t len);
/*
 * usft_text_writable() - may text be opened now (the page of @ip, opened
 * and closed again)?  Asked before a call changes anything.  Return: 0, or
 * -EPERM (a W^X policy refuses it, said once with the cause and the fix).
 */
int usft_text_writable(unsigned long ip);
/*
 * usft_text_write() - store bytes into text opened with usft_text_open():
 * every text store of usft goes through it (mprotect route: an atomic
 * store for an aligned 4 or 8 bytes, else byte by byte; W^X route: one
 * pwrite() to /proc/self/mem).  Return: 0 or -EPERM.
 */
int usft_text_write(unsigned long addr, const void *src, size_t len);
/* does usft_text_write() go through /proc/self/mem now (option text_write)? */
bool usft_text_procmem(void);
/* Restore every page opened since the last close. Return: 0 or -EPERM. */
int usft_text_close_all(void);
/* The protection a page has outside batches. */
int usft_page_prot(unsigned long page);

/* Every other thread passes a core-serialising point (membarrier SYNC_CORE). */
void usft_sync_core(void);
void usft_sync_init(void);
bool usft_sync_core_registered(void);	/* membarrier SYNC_CORE registered */

/*
 * usft_threads_rendezvous() - run @fn in a signal handler on every other
 * thread of the process (tgkill, then wait for each to acknowledge or exit).
 * A thread asleep in the kernel at a user pc that @sleeper_ok accepts is
 * left alone (no EINTR for it); NULL: every thread is signalled.
 * Return: number of threads that did not answer within the timeout.
 */
int usft_threads_rendezvous(void (*fn)(ucontext_t *uc, void *arg), void *arg,
			    bool (*sleeper_ok)(unsigned long pc));
/* a @sleeper_ok that accepts every pc */
bool usft_any_pc(unsigned long pc);
/* The first other thread that blocks @signo (its tid, 0, or -errno), its name in @comm;
 * usft's own threads (usft-writer, usft-control) never run a site and are skipped. */
int usft_signal_blocker(int signo, char *comm, size_t len);
int usft_signal_blocker_awake(int signo, bool (*sleeper_ok)(unsigned long pc),
			      bool skip_sleepers, char *comm, size_t len);

/* usft_uc_pc(uc): the interrupted program counter of a signal context */
#include "asm/uc_regs.h"	/* not asm/ptrace.h: that would shadow the uapi header */
int usft_threads_scan(void (*fn)(ucontext_t *uc, void *arg), void *arg,
		      bool (*sleeper_ok)(unsigned long pc),
		      unsigned long *blocked_pc, int max, int *nblocked);
int usft_stop_machine(int (*fn)(void *arg), void *arg, int *fn_ret);
int usft_nr_threads(void);
/* usft_rv_signo() - the signal of the thread rendezvous (option sync_signal) */
int usft_rv_signo(void);

#endif
