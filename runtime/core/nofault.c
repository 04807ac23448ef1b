// SPDX-License-Identifier: MIT
/*
 * core/nofault.c - strncpy_from_user_nofault() (mm/maccess.c) without a
 * system call: the kernel's exception-table idea in a process.
 *
 * The copy (arch/<arch>/nofault.S) has one load that may fault, at
 * usft_nofault_load.  usft claims SIGSEGV and SIGBUS (core/signal.c, as it
 * claims SIGTRAP) the first time a copy is asked for; its handler resumes
 * a fault raised by the kernel at that instruction at usft_nofault_fixup,
 * which returns what was copied, and passes every other fault to the
 * program's handler with that handler's own mask and flags (the claim
 * mirrors them, see usft_claim_signal_mirrored()), or takes the default
 * action the kernel would have taken.
 *
 * A synchronous fault that the thread blocks (or ignores) is not delivered:
 * the kernel kills the process (force_sig_fault()).  So the copy is only
 * used by a thread whose mask is known to leave SIGSEGV and SIGBUS open,
 * and known without a system call: usft_task.fault_mask caches it, set by
 * one rt_sigprocmask query the first time a thread copies, and kept by the
 * interposers below of every libc call that changes the mask
 * (pthread_sigmask, sigprocmask), or forgotten (the next copy asks again)
 * by those that change it inside libc (siglongjmp, setcontext, sigblock,
 * ...).  In a signal handler (usft_task.sig_depth) the mask is the
 * handler's, and the copy is not used.  Not used, the string is read with
 * one process_vm_readv() of the process itself, as before.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>
#include <usft/uaccess.h>
#include "core/internal.h"
#include "core/text.h"

/* arch/<arch>/nofault.S: bytes copied, or -1 - bytes copied on a fault */
long usft_nofault_strncpy(char *dst, const char *src, long count);
extern const char usft_nofault_load[], usft_nofault_fixup[];

static struct sigaction prog_segv, prog_bus;	/* the program's handlers (the chain) */
typedef int (*mask_fn)(int, const sigset_t *, sigset_t *);
static mask_fn real_pthread_sigmask, real_sigprocmask;	/* libc's */
static int nofault_ready;	/* 1: claimed; -1: claim failed, always the system call */

/* ---- the fault handler ----------------------------------------------- */

static struct sigaction *chain_of(int sig)
{
	return sig == SIGSEGV ? &prog_segv : &prog_bus;
}

static __no_tsan void usft_fault(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	struct sigaction *chain = chain_of(sig), a;
	int saved = errno;

	/* raised by the kernel (si_code > 0) at the copy's load: resume at its fixup */
	if (si->si_code > 0 && usft_uc_pc(uc) == (unsigned long)usft_nofault_load) {
		usft_uc_set_pc(uc, (unsigned long)usft_nofault_fixup);
		return;
	}
	a = *chain;
	if ((a.sa_flags & SA_RESETHAND) &&
	    ((a.sa_flags & SA_SIGINFO) || (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN))) {
		/* the kernel resets the disposition before the handler runs */
		memset(chain, 0, sizeof(*chain));
		chain->sa_handler = SIG_DFL;
	}
	if (usft_run_handler(&a, sig, si, ctx))
		goto out;
	/* a signal someone sent (kill, tgkill) that the program ignores */
	if (si->si_code <= 0 && !(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_IGN)
		goto out;
	/*
	 * The default action, as the kernel takes it: a fault the kernel
	 * raised runs again on return and, with SIG_DFL now, kills as it
	 * would have (an ignored fault is forced to SIG_DFL by the kernel
	 * too); a sent one is sent again and is delivered once this
	 * handler returns.
	 */
	{
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		usft_real_sigaction(sig, &dfl, NULL);
		if (si->si_code <= 0)
			raise(sig);
	}
out:
	errno = saved;
}

/* claim both fault signals, once per process (not on the copy's path after that) */
static int nofault_claim(void)
{
	static int lock;
	int r = __atomic_load_n(&nofault_ready, __ATOMIC_ACQUIRE);

	if (r)
		return r;
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		syscall(SYS_sched_yield);
	r = __atomic_load_n(&nofault_ready, __ATOMIC_RELAXED);
	if (!r && (!real_pthread_sigmask ||
		   dlsym(RTLD_DEFAULT, "pthread_sigmask") == (void *)real_pthread_sigmask)) {
		/*
		 * The program's pthread_sigmask() is libc's, not one that
		 * tells usft (libusft loaded late, as by dlopen(), or after
		 * libc without the preload shim): the mask cannot be
		 * followed, so every copy takes the system call.
		 */
		pr_debug("usft: pthread_sigmask() is not interposed here; strings are read "
			 "with a system call\n");
		r = -1;
		__atomic_store_n(&nofault_ready, r, __ATOMIC_RELEASE);
	}
	if (!r) {
		r = usft_claim_signal_mirrored(SIGSEGV, usft_fault, &prog_segv) ||
		    usft_claim_signal_mirrored(SIGBUS, usft_fault, &prog_bus) ? -1 : 1;
		if (r < 0)
			pr_warn("usft: cannot install the SIGSEGV/SIGBUS handler; strings are "
				"read with a system call\n");
		__atomic_store_n(&nofault_ready, r, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
	return r;
}

/* ---- what the thread's mask is, without a system call ------------------ */

enum { FAULT_MASK_UNKNOWN = 0, FAULT_MASK_OPEN, FAULT_MASK_BLOCKED };

static __no_tsan int mask_state(const sigset_t *m)
{
	return sigismember(m, SIGSEGV) == 1 || sigismember(m, SIGBUS) == 1 ? FAULT_MASK_BLOCKED
									  : FAULT_MASK_OPEN;
}

/* the mask after a sigprocmask(@how, @set) that found @old */
static __no_tsan void mask_track(int how, const sigset_t *set, const sigset_t *old)
{
	sigset_t n = *old;

	if (set) {
		if (how == SIG_SETMASK)
			n = *set;
		else if (how == SIG_BLOCK)
			sigorset(&n, old, set);
		else if (how == SIG_UNBLOCK)
			for (int s = 1; s < NSIG; s++)
				if (sigismember(set, s) == 1)
					sigdelset(&n, s);
	}
	usft_task.fault_mask = mask_state(&n);
}

/*
 * A handler run through usft (usft_run_handler()) returned: the mask is
 * the one the kernel restores from @uc, whatever the handler did to its own.
 */
void usft_fault_mask_restored(const void *uc)
{
	usft_task.fault_mask = uc ? mask_state(&((const ucontext_t *)uc)->uc_sigmask)
				  : FAULT_MASK_UNKNOWN;
}

/* ask the kernel (once per thread, and after a change usft could not follow) */
static int mask_query(void)
{
	unsigned long long m = 0;

	if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &m, sizeof(m)))
		return FAULT_MASK_BLOCKED;
	usft_task.fault_mask = (m >> (SIGSEGV - 1) & 1) || (m >> (SIGBUS - 1) & 1)
			       ? FAULT_MASK_BLOCKED : FAULT_MASK_OPEN;
	return usft_task.fault_mask;
}


/*
 * libc's @name (libusft loaded after libc, a preload's dependency: ask libc
 * itself).  The interposers below and what they call are __no_tsan: TSan's
 * interceptors of these calls reach them (REAL()) before TSan is
 * initialised, from its own sigaction() of its deadly-signal handlers.
 */
static __no_tsan void *next_fn(const char *name)
{
	void *fn = dlsym(RTLD_NEXT, name), *libc;

	if (!fn && (libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY)))
		fn = dlsym(libc, name);
	return fn;
}


__attribute__((constructor)) static __no_tsan void nofault_resolve(void)
{
	/* now: dlsym is not async-signal-safe, and a handler may change its mask */
	real_pthread_sigmask = (mask_fn)next_fn("pthread_sigmask");
	real_sigprocmask = (mask_fn)next_fn("sigprocmask");
}

USFT_API __no_tsan int pthread_sigmask(int how, const sigset_t *set, sigset_t *oldset)
{
	sigset_t old;
	int ret;

	if (!real_pthread_sigmask)
		nofault_resolve();
	if (!real_pthread_sigmask)
		return ENOSYS;
	ret = real_pthread_sigmask(how, set, &old);
	if (!ret) {
		mask_track(how, set, &old);
		if (oldset)
			*oldset = old;
	}
	return ret;
}

USFT_API __no_tsan int sigprocmask(int how, const sigset_t *set, sigset_t *oldset)
{
	sigset_t old;
	int ret;

	if (!real_sigprocmask)
		nofault_resolve();
	if (!real_sigprocmask) {
		errno = ENOSYS;
		return -1;
	}
	ret = real_sigprocmask(how, set, &old);
	if (!ret) {
		mask_track(how, set, &old);
		if (oldset)
			*oldset = old;
	}
	return ret;
}

/*
 * libc calls that set the mask inside libc: the cached state is forgotten
 * first (a thread that never copies a string pays nothing more).  Resolved
 * in the constructor: a handler may call them, and dlsym() is not
 * async-signal-safe.  __longjmp_chk is what longjmp() and siglongjmp()
 * become under _FORTIFY_SOURCE (its stack check passes through this one
 * extra frame: the target is still above it).
 */
#define FORGET_FNS(X)								\
	X(int, sigblock, (int mask), (mask))					\
	X(int, sigsetmask, (int mask), (mask))					\
	X(int, sighold, (int sig), (sig))					\
	X(int, sigrelse, (int sig), (sig))					\
	X(int, setcontext, (const ucontext_t *ucp), (ucp))			\
	X(int, swapcontext, (ucontext_t *oucp, const ucontext_t *ucp), (oucp, ucp))
#define FORGET_JMPS(X)								\
	X(siglongjmp, sigjmp_buf) X(longjmp, jmp_buf) X(_longjmp, jmp_buf)	\
	X(__longjmp_chk, jmp_buf)

#define FORGET_PTR(ret, name, params, args) static ret (*real_##name) params;
#define FORGET_JMP_PTR(name, buf) static void (*real_##name)(buf, int);
FORGET_FNS(FORGET_PTR)
FORGET_JMPS(FORGET_JMP_PTR)

#define FORGET_FN(ret, name, params, args)					\
	USFT_API __no_tsan ret name params					\
	{									\
		usft_task.fault_mask = FAULT_MASK_UNKNOWN;			\
		if (!real_##name)						\
			real_##name = (ret (*) params)next_fn(#name);		\
		return real_##name args;					\
	}
#define FORGET_JMP(name, buf)							\
	USFT_API __no_tsan __attribute__((noreturn)) void name(buf env, int val) \
	{									\
		usft_task.fault_mask = FAULT_MASK_UNKNOWN;			\
		if (!real_##name)						\
			real_##name = (void (*)(buf, int))next_fn(#name);	\
		real_##name(env, val);						\
		__builtin_unreachable();					\
	}
FORGET_FNS(FORGET_FN)
FORGET_JMPS(FORGET_JMP)

#define FORGET_RESOLVE(ret, name, params, args)					\
	real_##name = (ret (*) params)next_fn(#name);
#define FORGET_JMP_RESOLVE(name, buf) real_##name = (void (*)(buf, int))next_fn(#name);

__attribute__((constructor)) static __no_tsan void nofault_resolve_forget(void)
{
	FORGET_FNS(FORGET_RESOLVE)
	FORGET_JMPS(FORGET_JMP_RESOLVE)
}

/* ---- the copy ------------------------------------------------------------ */

static pid_t self_pid;

static void nofault_fork_child(void)
{
	self_pid = 0;
}

__attribute__((constructor)) static void nofault_atfork(void)
{
	pthread_atfork(NULL, NULL, nofault_fork_child);
}

/* one process_vm_readv() of the process itself per page: the old way */
static long strncpy_syscall(char *dst, const char *src, long count)
{
	static long page;
	long done = 0;

	if (!page)
		page = sysconf(_SC_PAGESIZE);
	if (!self_pid)
		self_pid = getpid();
	while (done < count) {
		unsigned long a = (unsigned long)src + done;
		long chunk = page - (long)(a & (page - 1));
		struct iovec local, remote;
		ssize_t got;
		char *nul;

		if (chunk > count - done)
			chunk = count - done;
		local.iov_base = dst + done;
		local.iov_len = chunk;
		remote.iov_base = (void *)a;
		remote.iov_len = chunk;
		got = process_vm_readv(self_pid, &local, 1, &remote, 1, 0);
		if (got <= 0) {
			dst[done] = 0;
			return -1 - done;
		}
		nul = memchr(dst + done, 0, got);
		if (nul)
			return nul - dst + 1;
		done += got;
		if (got < chunk) {
			dst[done] = 0;
			return -1 - done;
		}
	}
	return count;
}

USFT_API long strncpy_from_user_nofault(char *dst, const void *unsafe_addr, long count)
{
	int saved = errno;
	long ret;

	if (count <= 0)
		return 0;
	if (!usft_task.sig_depth && usft_task.fault_mask != FAULT_MASK_BLOCKED &&
	    (nofault_ready > 0 || nofault_claim() > 0) &&
	    (usft_task.fault_mask == FAULT_MASK_OPEN || mask_query() == FAULT_MASK_OPEN)) {
		ret = usft_nofault_strncpy(dst, unsafe_addr, count);
		if (ret < 0)
			dst[-1 - ret] = 0;
	} else {
		ret = strncpy_syscall(dst, unsafe_addr, count);
	}
	errno = saved;
	if (ret < 0)
		return -EFAULT;
	if (ret == count && dst[count - 1])
		dst[count - 1] = 0;	/* no NUL in @count bytes: cut, as the kernel */
	return ret;
}
