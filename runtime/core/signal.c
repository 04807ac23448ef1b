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
 * The claim is checked again before each use (usft_claim_signal()): a
 * handler installed behind the interposers is noticed and chained to.
 * bsd_signal(), sysv_signal(), sigset(), sigignore() and siginterrupt()
 * are interposed too (glibc's go to its internal __sigaction directly).
 * Everything here is async-signal-safe, as POSIX makes sigaction().
 *
 * Known limit: a handler left with siglongjmp() does not come back through
 * the wrapper, so the depth stays one higher on that thread; recursion
 * protection still works, with the bits of a deeper context.
 */
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "core/internal.h"
#include "core/text.h"
#include "mem/execmem.h"

#ifndef _NSIG
#define _NSIG 65
#endif

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static sigaction_fn real_sigaction_fn;
#ifdef __SANITIZE_THREAD__
static sigaction_fn own_sigaction_fn;	/* libc's: usft's own handlers */
#endif
static int own_sigaction(int sig, const struct sigaction *act);
static struct sigaction user_act[_NSIG];
static bool wrapped[_NSIG];
static struct sigaction *claimed[_NSIG];
int usft_nr_tramp_irq;	/* handlers running that interrupted trampoline code */

/*
 * The interposers' lock.  sigaction() is async-signal-safe (POSIX), so a
 * handler may call it while the code it interrupted is inside it on the
 * same thread: a mutex would deadlock there.  The lock is a spinlock taken
 * with every signal blocked on the taking thread, so no handler can run on
 * a thread that holds it; another thread waits at most for a few system
 * calls of the holder (which nothing can interrupt).
 */
static int sig_lock;

static __no_tsan void sig_lock_take(sigset_t *saved)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, saved);
	while (__atomic_exchange_n(&sig_lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&sig_lock, __ATOMIC_RELAXED))
			syscall(SYS_sched_yield);
}

static __no_tsan void sig_lock_drop(const sigset_t *saved)
{
	int e = errno;

	__atomic_store_n(&sig_lock, 0, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_SETMASK, saved, NULL);
	errno = e;
}

/* fork() from another thread inside the lock: the child has no holder */
static void sig_lock_fork_child(void)
{
	__atomic_store_n(&sig_lock, 0, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void sig_lock_init(void)
{
	struct sigaction dummy;

	/* resolve both sigactions now: dlsym is not async-signal-safe */
	usft_real_sigaction(SIGKILL, NULL, &dummy);
#ifdef __SANITIZE_THREAD__
	own_sigaction(SIGKILL, NULL);
#endif
	pthread_atfork(NULL, NULL, sig_lock_fork_child);
}

/* libc's own sigaction (NULL: not found) */
static sigaction_fn libc_sigaction(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);

	return libc ? (sigaction_fn)dlsym(libc, "sigaction") : NULL;
}

/*
 * usft_real_sigaction() - the next sigaction() after usft's interposer: libc's,
 * or in a ThreadSanitizer build TSan's interceptor.  Every disposition is
 * read through it, and the program's own are set through it (TSan wraps
 * them and defers their asynchronous signals as it would without usft).
 * TSan's read gives the kernel's disposition, or the program's handler
 * where the kernel holds TSan's wrapper, so both routes read back alike.
 */
__no_tsan int usft_real_sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
	sigaction_fn fn = __atomic_load_n(&real_sigaction_fn, __ATOMIC_ACQUIRE);

	if (!fn) {
		fn = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
		if (!fn)
			fn = libc_sigaction();	/* loaded after libc (a preload's dependency) */
		if (!fn) {
			errno = ENOSYS;
			return -1;
		}
		__atomic_store_n(&real_sigaction_fn, fn, __ATOMIC_RELEASE);
	}
	return fn(sig, act, oact);
}

/*
 * usft's own handlers (claimed signals, mirrors, hooks) go in with libc's
 * sigaction in every build.  Under ThreadSanitizer the next one is TSan's
 * interceptor, which defers an asynchronous signal while its thread is
 * inside an intercepted call: a thread waiting in pthread_mutex_lock() for
 * ftrace_lock would answer the rendezvous only after the updater, which
 * holds that lock and waits for the answer, gave up (2 s).  The rendezvous
 * callbacks are not instrumented.  Without TSan this is the same function.
 */
static __no_tsan int own_sigaction(int sig, const struct sigaction *act)
{
#ifdef __SANITIZE_THREAD__
	sigaction_fn fn = __atomic_load_n(&own_sigaction_fn, __ATOMIC_ACQUIRE);

	if (!fn) {
		fn = libc_sigaction();
		if (!fn) {
			errno = ENOSYS;
			return -1;
		}
		__atomic_store_n(&own_sigaction_fn, fn, __ATOMIC_RELEASE);
	}
	return fn(sig, act, NULL);
#else
	return usft_real_sigaction(sig, act, NULL);
#endif
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
	bool ran = true, tramp = uc && usft_execmem_contains(usft_uc_pc(uc));

	if (tramp) {
		usft_task.tramp_irq |= bit;
		__atomic_add_fetch(&usft_nr_tramp_irq, 1, __ATOMIC_SEQ_CST);
	} else {
		usft_task.tramp_irq &= ~bit;
	}
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
	usft_fault_mask_restored(uc);	/* the mask sigreturn puts back (core/nofault.c) */
	usft_task.sig_depth--;
	usft_task.tramp_irq &= ~bit;
	if (tramp)
		__atomic_sub_fetch(&usft_nr_tramp_irq, 1, __ATOMIC_RELEASE);
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

/* is @a usft's @handler, as installed? */
static bool is_ours(const struct sigaction *a, const struct sigaction *handler)
{
	return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == handler->sa_sigaction &&
	       !(a->sa_flags & SA_RESETHAND);
}

/**
 * usft_claim_signal() - install @handler for @sig now and keep it; what the
 * program installs later is stored in *@chain (the handler to chain to).
 * Called again before every use of the signal: the disposition is read back
 * from the kernel, and a handler the program installed behind the
 * interposers (a raw rt_sigaction system call, a libc path that does not
 * call sigaction() through the PLT) is taken as the new *@chain and usft's
 * handler is installed again.  A disposition is never trusted blindly.
 * Return: 0 or -errno.
 */
int usft_claim_signal(int sig, const struct sigaction *handler, struct sigaction *chain)
{
	static bool warned[_NSIG];
	struct sigaction old;
	sigset_t saved;
	int ret = 0;

	if (sig <= 0 || sig >= _NSIG)
		return -EINVAL;
	sig_lock_take(&saved);
	if (usft_real_sigaction(sig, NULL, &old)) {
		ret = -errno;
		goto out;
	}
	if (claimed[sig] == chain && is_ours(&old, handler))
		goto out;
	if (own_sigaction(sig, handler)) {
		ret = -errno;
		goto out;
	}
	if (claimed[sig] == chain) {
		/* replaced behind our back: that is the program's handler now */
		*chain = old;
		if (!warned[sig]) {
			warned[sig] = true;
			pr_warn("usft: the handler of signal %d was replaced without sigaction() "
				"(a raw rt_sigaction system call?); usft installed its own again "
				"and passes the program's signals to the new one\n", sig);
		}
		goto out;
	}
	/* chain to what the program had, unwrapped */
	*chain = wrapped[sig] ? user_act[sig] : old;
	wrapped[sig] = false;
	claimed[sig] = chain;
out:
	sig_lock_drop(&saved);
	return ret;
}

/*
 * A claim made with usft_claim_signal_mirrored(): usft's handler carries
 * the program's handler's sa_mask, SA_NODEFER and SA_ONSTACK, so that when
 * it chains to that handler, the handler runs with the mask and on the
 * stack it asked for (the fault signals: a stack overflow handler needs
 * its alternate stack).  Called with sig_lock held.
 */
static void (*mirror_fn[_NSIG])(int, siginfo_t *, void *);

static void mirror_install(int sig, const struct sigaction *prog)
{
	bool fn = (prog->sa_flags & SA_SIGINFO) ||
		  (prog->sa_handler != SIG_DFL && prog->sa_handler != SIG_IGN);
	struct sigaction w;

	memset(&w, 0, sizeof(w));
	w.sa_sigaction = mirror_fn[sig];
	w.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&w.sa_mask);
	if (fn) {
		w.sa_mask = prog->sa_mask;
		w.sa_flags = SA_SIGINFO | (prog->sa_flags & (SA_NODEFER | SA_ONSTACK));
	}
	own_sigaction(sig, &w);
}

int usft_claim_signal_mirrored(int sig, void (*fn)(int, siginfo_t *, void *),
			       struct sigaction *chain)
{
	struct sigaction sa;
	sigset_t saved;
	int ret;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	ret = usft_claim_signal(sig, &sa, chain);
	if (ret)
		return ret;
	sig_lock_take(&saved);
	mirror_fn[sig] = fn;
	mirror_install(sig, chain);
	sig_lock_drop(&saved);
	return 0;
}

/* the program's @act for an unclaimed @sig, wrapped (sig_lock held); Return: 0 or -1 (errno) */
static __no_tsan int install_user(int sig, const struct sigaction *act)
{
	struct sigaction w;

	if (!(act->sa_flags & SA_SIGINFO) &&
	    (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN)) {
		if (usft_real_sigaction(sig, act, NULL))
			return -1;
		wrapped[sig] = false;
		return 0;
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
		return -1;
	}
	return 0;
}

/*
 * Signal hooks (usft_signal_hook()): usft's handler runs the hook, then the
 * program's disposition, which is kept in hook_chain[] as a claimed
 * signal's.  The handler the kernel sees carries the program's mask and its
 * SA_RESTART, SA_ONSTACK and SA_NODEFER, re-installed each time the program
 * changes its disposition, so its handler runs as it would without usft.
 */
static void (*hook_fn[_NSIG])(int);
static struct sigaction hook_chain[_NSIG];

static void hook_handler(int sig, siginfo_t *si, void *uc)
{
	void (*fn)(int) = __atomic_load_n(&hook_fn[sig], __ATOMIC_ACQUIRE);
	struct sigaction a = hook_chain[sig];
	int e = errno;

	if (fn)
		fn(sig);
	errno = e;
	if (a.sa_flags & SA_RESETHAND) {
		/* the kernel would have reset it now: SIG_DFL from here on */
		memset(&hook_chain[sig], 0, sizeof(hook_chain[sig]));
		hook_chain[sig].sa_handler = SIG_DFL;
	}
	/* SIG_DFL and SIG_IGN: the hook took the signal (docs/design.md) */
	usft_run_handler(&a, sig, si, uc);
}

/* usft's handler for hooked @sig with the flags of the program's (sig_lock held) */
static __no_tsan int hook_install(int sig)
{
	const struct sigaction *p = &hook_chain[sig];
	bool handler = (p->sa_flags & SA_SIGINFO) ||
		       (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN);
	struct sigaction w;

	memset(&w, 0, sizeof(w));
	w.sa_sigaction = hook_handler;
	w.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&w.sa_mask);
	if (handler) {
		w.sa_mask = p->sa_mask;
		w.sa_flags = SA_SIGINFO | (p->sa_flags & (SA_RESTART | SA_ONSTACK | SA_NODEFER));
	}
	return own_sigaction(sig, &w) ? -errno : 0;
}

/* the signals usft_signal_hook() refuses: faults, usft's own (Return: why, or NULL) */
static const char *hook_refused(int sig)
{
	int rv = usft_opts.sync_signal ? usft_opts.sync_signal : SIGRTMIN + 7;

	if (sig == SIGKILL || sig == SIGSTOP)
		return "cannot be caught";
	if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGSYS)
		return "a fault: taking it would run the faulting instruction again";
	if (sig == SIGTRAP || sig == rv)
		return "usft's own (text patching)";
	return NULL;
}

USFT_API __no_tsan int usft_signal_hook(int sig, void (*fn)(int sig), const char **why)
{
	struct sigaction old;
	const char *no;
	sigset_t saved;
	int ret = 0;

	if (why)
		*why = NULL;
	if (sig <= 0 || sig >= _NSIG || !fn) {
		if (why)
			*why = "no such signal";
		return -EINVAL;
	}
	if ((no = hook_refused(sig))) {
		if (why)
			*why = no;
		return -EINVAL;
	}
	sig_lock_take(&saved);
	if (claimed[sig]) {
		if (why)
			*why = claimed[sig] == &hook_chain[sig] ? "hooked already" : "usft's own";
		ret = -EBUSY;
		goto out;
	}
	if (usft_real_sigaction(sig, NULL, &old)) {
		ret = -errno;
		goto out;
	}
	hook_chain[sig] = wrapped[sig] ? user_act[sig] : old;
	__atomic_store_n(&hook_fn[sig], fn, __ATOMIC_RELEASE);
	ret = hook_install(sig);
	if (ret) {
		hook_fn[sig] = NULL;
		goto out;
	}
	wrapped[sig] = false;
	claimed[sig] = &hook_chain[sig];
out:
	sig_lock_drop(&saved);
	return ret;
}

USFT_API __no_tsan int usft_signal_unhook(int sig)
{
	sigset_t saved;
	int ret = 0;

	if (sig <= 0 || sig >= _NSIG)
		return -EINVAL;
	sig_lock_take(&saved);
	if (claimed[sig] != &hook_chain[sig]) {
		ret = -EINVAL;
		goto out;
	}
	claimed[sig] = NULL;
	/* back to the program's own disposition, as if usft had never hooked it */
	if (install_user(sig, &hook_chain[sig]))
		ret = -errno;
	/* a handler still running on another thread reads NULL and only chains */
	__atomic_store_n(&hook_fn[sig], NULL, __ATOMIC_RELEASE);
out:
	sig_lock_drop(&saved);
	return ret;
}

USFT_API __no_tsan int sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
	struct sigaction prev;
	sigset_t saved;
	int ret = 0;

	if (sig <= 0 || sig >= _NSIG || sig == SIGKILL || sig == SIGSTOP)
		return usft_real_sigaction(sig, act, oact);
	sig_lock_take(&saved);
	if (claimed[sig]) {
		prev = *claimed[sig];
		if (act && mirror_fn[sig])
			mirror_install(sig, act);
		if (act) {
			*claimed[sig] = *act;
			if (claimed[sig] == &hook_chain[sig] && hook_install(sig)) {
				hook_chain[sig] = prev;
				ret = -1;
				goto out_unlock;
			}
		}
		goto out;
	}
	if (usft_real_sigaction(sig, NULL, &prev)) {
		ret = -1;
		goto out_unlock;
	}
	if (wrapped[sig])
		prev = user_act[sig];
	if (act && install_user(sig, act)) {
		ret = -1;
		goto out_unlock;
	}
out:
	if (oact)
		*oact = prev;
out_unlock:
	sig_lock_drop(&saved);
	return ret;
}

/*
 * The other libc calls that set a disposition.  glibc implements them with
 * its internal __sigaction, which does not pass through the interposer
 * above, so each is rebuilt here on top of it (semantics of glibc 2.36).
 */
static __no_tsan __sighandler_t set_handler(int sig, __sighandler_t handler, int flags, bool mask_self)
{
	struct sigaction act, old;

	if (handler == SIG_ERR || sig <= 0 || sig >= _NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	act.sa_flags = flags;
	sigemptyset(&act.sa_mask);
	if (mask_self)
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

/* glibc's signal(): BSD semantics (SA_RESTART), through the wrapper above. */
USFT_API __no_tsan __sighandler_t signal(int sig, __sighandler_t handler)
{
	return set_handler(sig, handler, SA_RESTART, true);
}

USFT_API __no_tsan __sighandler_t bsd_signal(int sig, __sighandler_t handler)
{
	return signal(sig, handler);
}

/* System V signal(): one-shot, not blocked while it runs, no restart */
USFT_API __no_tsan __sighandler_t __sysv_signal(int sig, __sighandler_t handler)
{
	return set_handler(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

USFT_API __no_tsan __sighandler_t sysv_signal(int sig, __sighandler_t handler)
{
	return __sysv_signal(sig, handler);
}

/* sigset(): SIG_HOLD blocks the signal; anything else installs and unblocks */
USFT_API __no_tsan __sighandler_t sigset(int sig, __sighandler_t disp)
{
	sigset_t one, old_mask;
	struct sigaction cur;
	__sighandler_t prev;

	if (sig <= 0 || sig >= _NSIG || disp == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sigemptyset(&one);
	sigaddset(&one, sig);
	if (disp == SIG_HOLD) {
		if (sigaction(sig, NULL, &cur) ||
		    pthread_sigmask(SIG_BLOCK, &one, &old_mask))
			return SIG_ERR;
		if (sigismember(&old_mask, sig))
			return SIG_HOLD;
		return cur.sa_flags & SA_SIGINFO ? (__sighandler_t)(void *)cur.sa_sigaction
						 : cur.sa_handler;
	}
	prev = set_handler(sig, disp, 0, false);
	if (prev == SIG_ERR || pthread_sigmask(SIG_UNBLOCK, &one, &old_mask))
		return SIG_ERR;
	return sigismember(&old_mask, sig) ? SIG_HOLD : prev;
}

USFT_API __no_tsan int sigignore(int sig)
{
	return set_handler(sig, SIG_IGN, 0, false) == SIG_ERR ? -1 : 0;
}

USFT_API __no_tsan int siginterrupt(int sig, int flag)
{
	struct sigaction act;

	if (sigaction(sig, NULL, &act))
		return -1;
	if (flag)
		act.sa_flags &= ~SA_RESTART;
	else
		act.sa_flags |= SA_RESTART;
	return sigaction(sig, &act, NULL);
}
