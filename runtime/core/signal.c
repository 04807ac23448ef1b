// SPDX-License-Identifier: MIT
/*
 * core/signal.c - signal handlers as "interrupt contexts".
 *
 * The kernel's recursion bits are per context (normal, softirq, irq, NMI).
 * In a process the contexts are the thread's normal flow and signal
 * handlers nested on top of it.  usft interposes sigaction() and signal()
 * so every handler the program installs runs inside a small wrapper that
 * counts the nesting depth in usft_task.sig_depth (recursion.c maps depth
 * 1, 2, 3+ to the SOFTIRQ, IRQ and NMI bits).
 *
 * Signals the runtime itself needs (SIGTRAP for the INT3 protocol, the
 * rendezvous signal) are "claimed": usft's handler stays installed and
 * whatever the program installs later becomes the handler usft chains to
 * for signals that are not its own, and is what sigaction() reports back.
 *
 * Known limit: a handler left with siglongjmp() does not come back through
 * the wrapper, so the depth stays one higher on that thread; recursion
 * protection still works, with the bits of a deeper context.
 */
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include "core/internal.h"
#include "core/text.h"
#include "mem/execmem.h"

#ifndef _NSIG
#define _NSIG 65
#endif

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static sigaction_fn real_sigaction_fn;
static struct sigaction user_act[_NSIG];
static bool wrapped[_NSIG];
static struct sigaction *claimed[_NSIG];
static pthread_mutex_t sig_lock = PTHREAD_MUTEX_INITIALIZER;

__no_tsan int usft_real_sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
	sigaction_fn fn = __atomic_load_n(&real_sigaction_fn, __ATOMIC_ACQUIRE);

	if (!fn) {
		fn = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
		if (!fn) {
			/* loaded after libc (a preload's dependency): ask libc itself */
			void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);

			fn = libc ? (sigaction_fn)dlsym(libc, "sigaction") : NULL;
		}
		if (!fn) {
			errno = ENOSYS;
			return -1;
		}
		__atomic_store_n(&real_sigaction_fn, fn, __ATOMIC_RELEASE);
	}
	return fn(sig, act, oact);
}

/*
 * usft_run_handler() - run the program's handler @a for a signal as an
 * interrupt context: sig_depth one higher, and usft_task.tramp_irq noting
 * whether the interrupted code is trampoline memory (it resumes there when
 * the handler returns; mem/execmem.c must not reuse that memory meanwhile).
 * SIG_DFL and SIG_IGN are not run.  Return: whether a handler ran.
 */
bool usft_run_handler(const struct sigaction *a, int sig, siginfo_t *si, void *uc)
{
	unsigned long bit = 1UL << (usft_task.sig_depth & 63);
	bool ran = true;

	if (uc && usft_execmem_contains(usft_uc_pc(uc)))
		usft_task.tramp_irq |= bit;
	else
		usft_task.tramp_irq &= ~bit;
	usft_task.sig_depth++;
	barrier();
	if (a->sa_flags & SA_SIGINFO) {
		if (a->sa_sigaction)
			a->sa_sigaction(sig, si, uc);
		else
			ran = false;
	} else if (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN) {
		a->sa_handler(sig);
	} else {
		ran = false;
	}
	barrier();
	usft_task.sig_depth--;
	usft_task.tramp_irq &= ~bit;
	return ran;
}

static void depth_wrapper(int sig, siginfo_t *si, void *uc)
{
	struct sigaction a = user_act[sig];

	if (a.sa_flags & SA_RESETHAND) {
		/* the kernel reset the disposition; mirror it */
		memset(&user_act[sig], 0, sizeof(user_act[sig]));
		user_act[sig].sa_handler = SIG_DFL;
		wrapped[sig] = false;
	}
	usft_run_handler(&a, sig, si, uc);
}

/**
 * usft_claim_signal() - install @handler for @sig now and keep it; what the
 * program installs later is stored in *@chain (the handler to chain to).
 * Return: 0 or -errno.
 */
int usft_claim_signal(int sig, const struct sigaction *handler, struct sigaction *chain)
{
	struct sigaction old;
	int ret = 0;

	if (sig <= 0 || sig >= _NSIG)
		return -EINVAL;
	pthread_mutex_lock(&sig_lock);
	if (claimed[sig] == chain)
		goto out;
	if (usft_real_sigaction(sig, handler, &old)) {
		ret = -errno;
		goto out;
	}
	/* chain to what the program had, unwrapped */
	*chain = wrapped[sig] ? user_act[sig] : old;
	wrapped[sig] = false;
	claimed[sig] = chain;
out:
	pthread_mutex_unlock(&sig_lock);
	return ret;
}

USFT_API __no_tsan int sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
	struct sigaction prev, w;
	int ret = 0;

	if (sig <= 0 || sig >= _NSIG || sig == SIGKILL || sig == SIGSTOP)
		return usft_real_sigaction(sig, act, oact);
	pthread_mutex_lock(&sig_lock);
	if (claimed[sig]) {
		prev = *claimed[sig];
		if (act)
			*claimed[sig] = *act;
		goto out;
	}
	if (usft_real_sigaction(sig, NULL, &prev)) {
		ret = -1;
		goto out_unlock;
	}
	if (wrapped[sig])
		prev = user_act[sig];
	if (!act)
		goto out;
	if (!(act->sa_flags & SA_SIGINFO) &&
	    (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN)) {
		if (usft_real_sigaction(sig, act, NULL)) {
			ret = -1;
			goto out_unlock;
		}
		wrapped[sig] = false;
		goto out;
	}
	w = *act;
	w.sa_flags |= SA_SIGINFO;
	w.sa_flags &= ~SA_RESETHAND;	/* the wrapper mirrors it */
	w.sa_sigaction = depth_wrapper;
	user_act[sig] = *act;
	wrapped[sig] = true;
	if (act->sa_flags & SA_RESETHAND)
		w.sa_flags |= SA_RESETHAND;
	if (usft_real_sigaction(sig, &w, NULL)) {
		wrapped[sig] = false;
		ret = -1;
		goto out_unlock;
	}
out:
	if (oact)
		*oact = prev;
out_unlock:
	pthread_mutex_unlock(&sig_lock);
	return ret;
}

/* glibc's signal(): BSD semantics (SA_RESTART), through the wrapper above. */
USFT_API __no_tsan __sighandler_t signal(int sig, __sighandler_t handler)
{
	struct sigaction act, old;

	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	act.sa_flags = SA_RESTART;
	sigemptyset(&act.sa_mask);
	sigaddset(&act.sa_mask, sig);
	if (sigaction(sig, &act, &old))
		return SIG_ERR;
	if (old.sa_flags & SA_SIGINFO) {
		union {
			void (*si)(int, siginfo_t *, void *);
			__sighandler_t h;
		} u = { .si = old.sa_sigaction };

		return u.h;
	}
	return old.sa_handler;
}
