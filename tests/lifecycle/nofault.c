// SPDX-License-Identifier: MIT
/*
 * strncpy_from_user_nofault() (core/nofault.c): the kernel's semantics,
 * no system call on its path, never a fault, and the program's own
 * SIGSEGV/SIGBUS handling exactly as without usft.  The cases that change
 * dispositions or masks, install seccomp filters or die run in a forked
 * child; those that start threads in the test's process (criterion's own
 * child), which qemu-user cannot do in a forked child.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <usft/uaccess.h>
#include "test_common.h"

#define FAIL(code, ...) do { fprintf(stderr, "nofault: " __VA_ARGS__); return code; } while (0)

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1	/* ASan's own SIGSEGV handler reports and exits instead */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

static long page;

/* two pages: the first readable, the second not; returns the first */
static notrace char *guarded(void)
{
	char *p;

	page = sysconf(_SC_PAGESIZE);
	p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mprotect(p + page, page, PROT_NONE))
		return NULL;
	memset(p, 'a', page);
	return p;
}

static notrace int semantics(void)
{
	char dst[16], *g = guarded();
	long r;

	if (!g)
		FAIL(2, "mmap\n");
	errno = 1234;
	r = strncpy_from_user_nofault(dst, "abc", sizeof(dst));
	if (r != 4 || strcmp(dst, "abc") || errno != 1234)
		FAIL(3, "\"abc\": %ld \"%s\" errno %d\n", r, dst, errno);
	r = strncpy_from_user_nofault(dst, "", sizeof(dst));
	if (r != 1 || dst[0])
		FAIL(4, "\"\": %ld\n", r);
	r = strncpy_from_user_nofault(dst, "abcdefgh", 4);
	if (r != 4 || strcmp(dst, "abc"))
		FAIL(5, "cut: %ld \"%s\"\n", r, dst);
	if (strncpy_from_user_nofault(dst, "abc", 0) != 0)
		FAIL(6, "count 0\n");
	r = strncpy_from_user_nofault(dst, NULL, sizeof(dst));
	if (r != -EFAULT || dst[0] || errno != 1234)
		FAIL(7, "NULL: %ld errno %d\n", r, errno);
	r = strncpy_from_user_nofault(dst, g + page, sizeof(dst));
	if (r != -EFAULT || dst[0])
		FAIL(8, "PROT_NONE: %ld\n", r);
	/* "aa" and then the bad page: what was read, NUL-terminated */
	r = strncpy_from_user_nofault(dst, g + page - 2, sizeof(dst));
	if (r != -EFAULT || strcmp(dst, "aa"))
		FAIL(9, "across the bad page: %ld \"%s\"\n", r, dst);
	r = strncpy_from_user_nofault(dst, (void *)-4096L, sizeof(dst));
	if (r != -EFAULT)
		FAIL(10, "kernel address: %ld\n", r);
	return 0;
}

/* process_vm_readv (the old way) fails with EPERM from now on */
static notrace int forbid_vm_readv(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	       prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) ? -1 : 0;
}

/* no process_vm_readv: the copy still works, so it made no such call */
static notrace int no_syscall(void)
{
	char dst[16], *g = guarded();
	long r;

	if (!g)
		FAIL(2, "mmap\n");
	if (forbid_vm_readv())
		return 77;	/* no seccomp (qemu-user): skipped */
	r = strncpy_from_user_nofault(dst, "hello", sizeof(dst));
	if (r != 6 || strcmp(dst, "hello"))
		FAIL(3, "copy without process_vm_readv: %ld \"%s\"\n", r, dst);
	r = strncpy_from_user_nofault(dst, g + page - 2, sizeof(dst));
	if (r != -EFAULT || strcmp(dst, "aa"))
		FAIL(4, "partial without process_vm_readv: %ld \"%s\"\n", r, dst);
	return 0;
}

/* a thread that blocks SIGSEGV: the copy must not fault (the system call instead) */
static notrace int blocked_thread(void)
{
	sigset_t s;
	char dst[8];

	sigemptyset(&s);
	sigaddset(&s, SIGSEGV);
	if (pthread_sigmask(SIG_BLOCK, &s, NULL))
		FAIL(2, "pthread_sigmask\n");
	if (strncpy_from_user_nofault(dst, (void *)16, sizeof(dst)) != -EFAULT)
		FAIL(3, "blocked: not -EFAULT\n");
	/* unblocked: the in-process copy, still no fault */
	if (pthread_sigmask(SIG_UNBLOCK, &s, NULL) ||
	    strncpy_from_user_nofault(dst, (void *)16, sizeof(dst)) != -EFAULT)
		FAIL(4, "unblocked: not -EFAULT\n");
	/* SIGBUS blocked with sigprocmask */
	sigemptyset(&s);
	sigaddset(&s, SIGBUS);
	if (sigprocmask(SIG_BLOCK, &s, NULL) ||
	    strncpy_from_user_nofault(dst, (void *)16, sizeof(dst)) != -EFAULT)
		FAIL(5, "SIGBUS blocked: not -EFAULT\n");
	return 0;
}

static notrace void *thread_copy(void *arg)
{
	char dst[8];

	(void)arg;
	return (void *)(long)(strncpy_from_user_nofault(dst, (void *)16, sizeof(dst)) == -EFAULT);
}

/* a thread started with every signal blocked (inherited): asks once, then falls back */
static notrace int inherited_mask(void)
{
	sigset_t all, old;
	pthread_t t;
	void *ok;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (pthread_create(&t, NULL, thread_copy, NULL))
		FAIL(2, "pthread_create\n");
	pthread_join(t, &ok);
	if (!ok)
		FAIL(3, "copy in a thread born with SIGSEGV blocked\n");
	return 0;
}

/* what longjmp()/siglongjmp() become under _FORTIFY_SOURCE (no public prototype) */
extern void __longjmp_chk(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));
static int fortified;

/* siglongjmp back to a mask that blocks SIGSEGV: the cached state is forgotten */
static notrace int longjmp_mask(void)
{
	static sigjmp_buf env;
	static volatile int round;
	sigset_t s;
	char dst[8];

	sigemptyset(&s);
	sigaddset(&s, SIGSEGV);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	if (!sigsetjmp(env, 1)) {
		pthread_sigmask(SIG_UNBLOCK, &s, NULL);
		if (strncpy_from_user_nofault(dst, (void *)16, sizeof(dst)) != -EFAULT)
			FAIL(2, "open: not -EFAULT\n");
		round = 1;
		if (fortified)
			__longjmp_chk(env, 1);
		siglongjmp(env, 1);
	}
	if (round != 1)
		FAIL(3, "no longjmp\n");
	if (strncpy_from_user_nofault(dst, (void *)16, sizeof(dst)) != -EFAULT)
		FAIL(4, "after siglongjmp to a blocked mask: not -EFAULT\n");
	return 0;
}

/* ---- the program's own faults -------------------------------------------- */

static sigjmp_buf fault_env;
static volatile int got_sig, got_code, mask_had_usr1;
static void *volatile got_addr;

static notrace void prog_handler(int sig, siginfo_t *si, void *uc)
{
	sigset_t cur;

	got_sig = sig;
	got_code = si->si_code;
	got_addr = si->si_addr;
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	mask_had_usr1 = sigismember(&cur, SIGUSR1) == 1 && sigismember(&cur, sig) == 1;
	siglongjmp(fault_env, 1);
}

static notrace int install_prog_handler(int sig, int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = prog_handler;
	sa.sa_flags = SA_SIGINFO | flags;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR1);
	return sigaction(sig, &sa, NULL);
}

static char *volatile low_addr = (char *)16;	/* never mapped */

static notrace __attribute__((noinline)) int touch(volatile char *p)
{
	return *p;
}

/* the program's handler sees its fault as without usft: signal, code, address, mask */
static notrace int own_fault(int before)
{
	char dst[8], *g = guarded();
	struct sigaction now;

	if (!g)
		FAIL(2, "mmap\n");
	if (before && install_prog_handler(SIGSEGV, 0))
		FAIL(3, "sigaction\n");
	if (strncpy_from_user_nofault(dst, (void *)16, sizeof(dst)) != -EFAULT)
		FAIL(4, "copy\n");	/* usft's handler is claimed now */
	if (!before && install_prog_handler(SIGSEGV, 0))
		FAIL(5, "sigaction\n");
	for (int i = 0; i < 3; i++) {
		got_sig = 0;
		if (!sigsetjmp(fault_env, 1))
			touch(g + page + i);
		if (got_sig != SIGSEGV || got_code != SEGV_ACCERR || got_addr != g + page + i ||
		    !mask_had_usr1)
			FAIL(6, "round %d: sig %d code %d addr %p (want %p) mask %d\n", i, got_sig,
			     got_code, got_addr, (void *)(g + page + i), mask_had_usr1);
		/* usft's copy still works between the program's faults */
		if (strncpy_from_user_nofault(dst, g + page, sizeof(dst)) != -EFAULT)
			FAIL(7, "copy between faults\n");
	}
	/* what sigaction() reports is the program's handler */
	if (sigaction(SIGSEGV, NULL, &now) || now.sa_sigaction != prog_handler ||
	    !sigismember(&now.sa_mask, SIGUSR1))
		FAIL(8, "sigaction() does not report the program's handler\n");
	return 0;
}

static notrace int own_fault_before(void) { return own_fault(1); }
static notrace int own_fault_after(void) { return own_fault(0); }

/* SA_RESETHAND: once, then the default action */
static notrace __attribute__((unused)) int resethand(void)
{
	char dst[8], *g = guarded();
	struct sigaction now;

	strncpy_from_user_nofault(dst, (void *)16, sizeof(dst));
	if (!g || install_prog_handler(SIGSEGV, SA_RESETHAND))
		FAIL(2, "setup\n");
	got_sig = 0;
	if (!sigsetjmp(fault_env, 1))
		touch(g + page);
	if (got_sig != SIGSEGV)
		FAIL(3, "the one-shot handler did not run\n");
	if (sigaction(SIGSEGV, NULL, &now) || (now.sa_flags & SA_SIGINFO) ||
	    now.sa_handler != SIG_DFL)
		FAIL(4, "the disposition is not SIG_DFL after SA_RESETHAND\n");
	touch(g + page);	/* dies with SIGSEGV, as without usft */
	return 5;
}

/* SIGBUS of a truncated file mapping: the copy returns -EFAULT; the program's own dies */
static notrace __attribute__((unused)) int sigbus(void)
{
	char path[] = "/tmp/usft-nofault-XXXXXX", dst[8];
	int fd = mkstemp(path);
	char *m;

	page = sysconf(_SC_PAGESIZE);
	if (fd < 0 || ftruncate(fd, page))
		FAIL(2, "tmp file\n");
	m = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	unlink(path);
	if (m == MAP_FAILED || ftruncate(fd, 0))
		FAIL(3, "mmap\n");
	if (strncpy_from_user_nofault(dst, m, sizeof(dst)) != -EFAULT)
		FAIL(4, "copy from a truncated mapping: not -EFAULT\n");
	touch(m);	/* dies with SIGBUS, as without usft */
	return 5;
}

static notrace __attribute__((unused)) int default_segv(void)
{
	char dst[8];

	strncpy_from_user_nofault(dst, (void *)16, sizeof(dst));
	touch(low_addr);
	return 5;
}

static notrace __attribute__((unused)) int ignored_segv(void)
{
	char dst[8];

	signal(SIGSEGV, SIG_IGN);
	strncpy_from_user_nofault(dst, (void *)16, sizeof(dst));
	kill(getpid(), SIGSEGV);	/* sent and ignored: nothing happens */
	touch(low_addr);		/* a fault cannot be ignored: death */
	return 5;
}

static notrace __attribute__((unused)) int sent_segv(void)
{
	char dst[8];

	strncpy_from_user_nofault(dst, (void *)16, sizeof(dst));
	kill(getpid(), SIGSEGV);
	return 5;
}

/* in a signal handler (the handler's mask is not tracked): no fault either */
static volatile long in_handler_ret;

static notrace void usr1_copy(int sig)
{
	char dst[8];

	in_handler_ret = strncpy_from_user_nofault(dst, (void *)16, sizeof(dst));
}

/* a handler that unblocks SIGSEGV: after it returns the mask blocks it again */
static notrace void usr2_unblock(int sig)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGSEGV);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}

static notrace int handler_changes_mask(void)
{
	struct sigaction sa;
	sigset_t s;
	char dst[8];

	strncpy_from_user_nofault(dst, "claim", sizeof(dst));	/* the handler claimed first */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = usr2_unblock;
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&s);
	sigaddset(&s, SIGSEGV);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	raise(SIGUSR2);
	if (strncpy_from_user_nofault(dst, (void *)16, sizeof(dst)) != -EFAULT)
		FAIL(2, "after a handler that unblocked SIGSEGV: not -EFAULT\n");
	return 0;
}

static notrace int in_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = usr1_copy;
	sigfillset(&sa.sa_mask);	/* SIGSEGV blocked in the handler */
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	if (in_handler_ret != -EFAULT)
		FAIL(2, "copy in a handler that blocks SIGSEGV: %ld\n", in_handler_ret);
	return 0;
}

/* light stress: threads copying good and bad pointers while others change masks */
static notrace void *stress_thread(void *arg)
{
	unsigned long seed = (unsigned long)arg, bad = 0;
	char dst[32], *g = guarded();
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGSEGV);
	for (int i = 0; i < 5000; i++) {
		const char *src;
		long r;

		seed = seed * 6364136223846793005UL + 1442695040888963407UL;
		switch ((seed >> 33) % 4) {
		case 0: src = "a good string"; break;
		case 1: src = g + page - 1 - (seed >> 40) % 40; break;	/* runs into the bad page */
		case 2: src = (const char *)(seed >> 20); break;		/* anywhere */
		default:
			pthread_sigmask((seed >> 36) & 1 ? SIG_BLOCK : SIG_UNBLOCK, &s, NULL);
			src = (const char *)16;
			break;
		}
		r = strncpy_from_user_nofault(dst, src, sizeof(dst));
		if (r == -EFAULT)
			bad++;
		else if (r <= 0 || r > (long)sizeof(dst) || strlen(dst) >= sizeof(dst))
			return NULL;
	}
	return (void *)(bad + 1);
}

static notrace int stress(void)
{
	pthread_t t[4];
	void *ok;

	for (long i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, stress_thread, (void *)(i + 1)))
			FAIL(2, "pthread_create\n");
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &ok);
		if (!ok)
			FAIL(3, "thread %d: a copy returned a bad length\n", i);
	}
	return 0;
}

Test(nofault, semantics) { cr_expect_eq(tc_run_child(semantics), 0); }
Test(nofault, no_system_call)
{
	int r = tc_run_child(no_syscall);

	if (r == 77)
		cr_skip_test("no seccomp filters here (qemu-user)");
	cr_expect_eq(r, 0);
}
Test(nofault, thread_blocking_sigsegv) { cr_expect_eq(tc_run_child(blocked_thread), 0); }
/* threads in the test's own process: qemu-user cannot start them in a forked child */
Test(nofault, thread_born_blocking) { cr_expect_eq(inherited_mask(), 0); }
Test(nofault, siglongjmp_to_blocked_mask) { cr_expect_eq(tc_run_child(longjmp_mask), 0); }
Test(nofault, fortified_siglongjmp_to_blocked_mask)
{
	fortified = 1;	/* a program built with -D_FORTIFY_SOURCE: before, killed by SIGSEGV */
	cr_expect_eq(tc_run_child(longjmp_mask), 0);
}
Test(nofault, in_a_handler) { cr_expect_eq(tc_run_child(in_handler), 0); }
Test(nofault, handler_changes_its_mask) { cr_expect_eq(tc_run_child(handler_changes_mask), 0); }
Test(nofault, program_handler_before) { cr_expect_eq(tc_run_child(own_fault_before), 0); }
Test(nofault, program_handler_after) { cr_expect_eq(tc_run_child(own_fault_after), 0); }
Test(nofault, stress) { cr_expect_eq(stress(), 0); }
#if !UNDER_ASAN
Test(nofault, resethand) { cr_expect_eq(tc_run_child(resethand), 128 + SIGSEGV); }
Test(nofault, sigbus) { cr_expect_eq(tc_run_child(sigbus), 128 + SIGBUS); }
Test(nofault, default_action) { cr_expect_eq(tc_run_child(default_segv), 128 + SIGSEGV); }
Test(nofault, ignored_fault_still_kills) { cr_expect_eq(tc_run_child(ignored_segv), 128 + SIGSEGV); }
Test(nofault, sent_signal) { cr_expect_eq(tc_run_child(sent_segv), 128 + SIGSEGV); }
#endif
