// SPDX-License-Identifier: MIT
/*
 * core/text.c - the generic half of text patching: write windows over text
 * pages, cross-thread serialisation and a signal rendezvous.
 *
 * Pages are opened RWX (never RW: another thread may be executing them) for
 * the duration of one batch and restored to their own protection after it;
 * after every batch no page is writable and executable.  The protection to
 * restore comes from the object's program headers or the trampoline
 * window, never from what a page happens to have at the time.
 *
 * Under a W^X policy that refuses mprotect(PROT_WRITE|PROT_EXEC) the bytes
 * go through /proc/self/mem instead (option text_write): the kernel writes
 * them through its own mapping of the page (access_remote_vm() with
 * FOLL_FORCE, as a debugger plants a breakpoint), so no mapping of the
 * process is ever writable and executable.  Every text store of usft goes
 * through usft_text_write(), which picks the route.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "compat/prefault.h"
#include "core/internal.h"
#include "core/text.h"
#include "mem/execmem.h"

struct open_page {
	unsigned long page;
	int prot;
};
#ifdef USFT_DEBUG_YIELDS
/* give the CPU away, spin a little or go on, in a fixed rotation */
void usft_debug_step(void)
{
	static unsigned long steps;
	unsigned long n = __atomic_add_fetch(&steps, 1, __ATOMIC_RELAXED);

	if (n % 3 == 0)
		sched_yield();
	else if (n % 3 == 1)
		for (unsigned long i = 0; i < (n * 2654435761UL) % 2048; i++)
			__asm__ volatile("" ::: "memory");
}
#endif

static struct open_page *open_pages;
static size_t nr_open, cap_open;
static long page_size;

/* ---- the /proc/self/mem route ---------------------------------------- */

static int mem_fd = -1;		/* /proc/self/mem of mem_pid */
static pid_t mem_pid;
static bool mem_route;		/* text_write=auto: a policy refused mprotect, sticky */
static bool mem_checked;	/* mem_fd checked against getpid() in this batch */

/*
 * A /proc/PID/mem descriptor is bound to the address space it was opened
 * on: one inherited over fork() would write into the parent.  The child
 * drops it (and a fork that bypasses the atfork handlers, a raw clone(), is
 * caught by the getpid() check once per batch).
 */
static void mem_fork_child(void)
{
	if (mem_fd >= 0)
		close(mem_fd);
	mem_fd = -1;
	mem_checked = false;
}

__attribute__((constructor)) static void mem_atfork_init(void)
{
	pthread_atfork(NULL, NULL, mem_fork_child);
}

/*
 * Open /proc/self/mem and prove it writes: the byte at @probe written over
 * with itself (compare-then-write of an equal byte; it only un-shares the
 * page as the first real write would).  Return: 0 or -errno.
 */
static int mem_open(unsigned long probe)
{
	unsigned char b;

	if (mem_fd >= 0 && mem_checked)
		return 0;
	if (mem_fd >= 0 && mem_pid != getpid())
		mem_fork_child();	/* inherited without the atfork handler */
	if (mem_fd < 0) {
		int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);

		if (fd < 0)
			return -errno;
		b = *(volatile unsigned char *)probe;
		if (pwrite(fd, &b, 1, (off_t)probe) != 1) {
			int err = errno ? errno : EIO;

			close(fd);
			return -err;
		}
		mem_fd = fd;
		mem_pid = getpid();
	}
	mem_checked = true;
	return 0;
}

/* are text bytes written through /proc/self/mem now? */
bool usft_text_procmem(void)
{
	return usft_opts.text_write == USFT_TEXT_WRITE_PROCMEM ||
	       (usft_opts.text_write == USFT_TEXT_WRITE_AUTO && mem_route);
}

/*
 * mprotect() refused with @err: may the policy be worked around?  With
 * text_write=auto, switch to /proc/self/mem for good (said once).
 */
static bool mem_fallback(unsigned long page, int err)
{
	int ret;

	if ((err != EACCES && err != EPERM) || usft_opts.text_write != USFT_TEXT_WRITE_AUTO)
		return false;
	ret = mem_open(page);
	if (ret) {
		pr_debug("usft: /proc/self/mem cannot write text either (%s)\n", strerror(-ret));
		return false;
	}
	if (!mem_route)
		pr_info("usft: the system refuses text that is writable and executable "
			"(mprotect(PROT_WRITE|PROT_EXEC): %s); text is written through "
			"/proc/self/mem instead (option text_write)\n", strerror(err));
	mem_route = true;
	return true;
}

static __no_tsan void text_store(unsigned long addr, const void *src, size_t len)
{
	if (len == 8 && !(addr & 7)) {
		uint64_t v;

		memcpy(&v, src, 8);
		__atomic_store_n((uint64_t *)addr, v, __ATOMIC_RELEASE);
	} else if (len == 4 && !(addr & 3)) {
		uint32_t v;

		memcpy(&v, src, 4);
		__atomic_store_n((uint32_t *)addr, v, __ATOMIC_RELEASE);
	} else {
		/* byte by byte: the INT3 protocol orders each one */
		for (size_t i = 0; i < len; i++)
			((volatile unsigned char *)addr)[i] = ((const unsigned char *)src)[i];
	}
}

/*
 * usft_text_write() - store @len bytes at @addr, text opened with
 * usft_text_open() in this batch.  With mprotect an aligned 4 or 8 bytes
 * are one atomic store (release), anything else a byte at a time; through
 * /proc/self/mem one pwrite() (the kernel's copy_to_user_page(): see
 * docs/design.md for what it guarantees a concurrent fetch), skipped when
 * the bytes are already there.  Return: 0 or -EPERM (nothing or part
 * written: the caller's batch fails).
 */
int usft_text_write(unsigned long addr, const void *src, size_t len)
{
	size_t done = 0;

	if (!usft_text_procmem()) {
		text_store(addr, src, len);
		return 0;
	}
	if (!memcmp((const void *)addr, src, len))
		return 0;
	if (mem_open(addr))
		return -EPERM;
	while (done < len) {
		ssize_t n = pwrite(mem_fd, (const char *)src + done, len - done,
				   (off_t)(addr + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			pr_err("usft: writing %zu byte(s) of text at %#lx through /proc/self/mem "
			       "failed (%s)\n", len, addr, n ? strerror(errno) : "short write");
			return -EPERM;
		}
		done += (size_t)n;
	}
	usft_count(nr_procmem_writes);
	return 0;
}

int usft_page_prot(unsigned long page)
{
	struct usft_object *obj;

	if (usft_execmem_contains(page))
		return PROT_READ | PROT_EXEC;
	for (obj = usft_objects; obj; obj = obj->next)
		for (unsigned int i = 0; i < obj->nr_segs; i++)
			if (page >= obj->segs[i].lo && page < obj->segs[i].hi)
				return obj->segs[i].prot;
	return PROT_READ | PROT_EXEC;
}

/*
 * Opens [@addr, @addr + @len): the pages not open yet, in groups of
 * adjacent pages of one protection, one mprotect() per group (a batch
 * over 10^5 sites opens its text in a few calls, not one per page).  Each
 * page is recorded before its mprotect(), so that usft_text_close_all()
 * restores it even after a failure that changed part of the group.
 */
static int open_group(unsigned long first, size_t pages, int prot)
{
	int ret, err;

	if (!pages || usft_text_procmem())
		return 0;	/* a policy refused an earlier group: nothing to open */
	USFT_TEXT_STEP();
	ret = mprotect((void *)first, pages * page_size, prot | PROT_WRITE | PROT_EXEC);
	USFT_TEXT_STEP();
	if (!ret) {
		/* a batch opens only pages it writes: their faults at once */
		usft_prefault_write((void *)first, pages * page_size);
		return 0;
	}
	err = errno;
	if (mem_fallback(first, err))
		return 0;	/* the pages recorded so far close as usual */
	errno = err;
	return -EPERM;
}

int usft_text_open(unsigned long addr, size_t len)
{
	unsigned long p, end, first = 0;
	size_t group = 0;
	int group_prot = 0;

	if (!page_size)
		page_size = sysconf(_SC_PAGESIZE);
	if (usft_text_procmem())
		return mem_open(addr) ? -EPERM : 0;	/* nothing to open */
	p = addr & ~(page_size - 1);
	end = addr + len;
	for (; p < end; p += page_size) {
		size_t i;
		int prot;

		/*
		 * A batch opens its sites in address order: the page is most
		 * often the last one opened.  Only then the scan (a lookup per
		 * site over every open page made start-up quadratic in sites).
		 */
		if (nr_open && open_pages[nr_open - 1].page == p)
			continue;
		for (i = 0; i < nr_open; i++)
			if (open_pages[i].page == p)
				break;
		if (i < nr_open) {
			if (open_group(first, group, group_prot))
				return -EPERM;
			group = 0;
			continue;
		}
		if (nr_open == cap_open) {
			size_t cap = cap_open ? cap_open * 2 : 64;
			struct open_page *n = realloc(open_pages, cap * sizeof(*n));

			if (!n)
				return -EPERM;	/* the group's pages are recorded: closed as usual */
			open_pages = n;
			cap_open = cap;
		}
		prot = usft_page_prot(p);
		if (group && prot != group_prot) {
			if (open_group(first, group, group_prot))
				return -EPERM;
			group = 0;
		}
		if (!group) {
			first = p;
			group_prot = prot;
		}
		group++;
		open_pages[nr_open].page = p;
		open_pages[nr_open].prot = prot;
		nr_open++;
	}
	return open_group(first, group, group_prot);
}

/*
 * A W^X policy (SELinux execmem/execmod, PaX MPROTECT, a seccomp filter
 * that refuses mprotect() with PROT_WRITE|PROT_EXEC) refuses what every
 * batch starts with: opening a text page writable while it stays
 * executable.  Asked before anything is changed, so that the call can
 * return -EPERM with the records, the counters and the text as they were,
 * instead of failing inside the batch (ftrace_bug(): the kill switch).
 */
int usft_text_writable(unsigned long ip)
{
	static int said;
	int err;

	if (nr_open)
		return 0;	/* inside a batch: its pages are open already */
	if (!usft_text_open(ip, 1))
		return usft_text_close_all();
	err = errno;
	usft_text_close_all();
	if (err != EACCES && err != EPERM)
		return 0;	/* not a policy (ENOMEM, ...): the batch says what fails */
	usft_count(nr_wx_refused);
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		pr_err("usft: the system refuses to make text writable while it is executable "
		       "(%s: %s): a W^X policy such as SELinux execmem/execmod, PaX MPROTECT "
		       "or a seccomp filter, and /proc/self/mem %s; nothing is patched and "
		       "every call that would patch returns EPERM. Allow W+X mappings for this "
		       "program (e.g. setsebool allow_execmem/allow_execmod, or let the seccomp "
		       "filter pass mprotect with PROT_WRITE|PROT_EXEC), or writes to "
		       "/proc/self/mem (a mounted /proc, proc_mem.force_override=always)\n",
		       usft_opts.text_write == USFT_TEXT_WRITE_PROCMEM ? "/proc/self/mem" :
		       "mprotect(PROT_WRITE|PROT_EXEC)", strerror(err),
		       usft_opts.text_write == USFT_TEXT_WRITE_MPROTECT ?
		       "is not tried (option text_write=mprotect)" : "cannot write it either");
	return -EPERM;
}

/*
 * Restoring a page's protection must not fail silently: a page left
 * writable and executable is exactly what usft promises never to leave.
 * Retry (the failures seen are transient, e.g. ENOMEM splitting a VMA),
 * and report -EPERM if a page still could not be restored: the caller
 * goes to ftrace_bug() and no byte is written again.
 */
static int restore_pages(unsigned long first, size_t pages, int prot)
{
	for (int tries = 0; tries < 5; tries++)
		if (!mprotect((void *)first, pages * page_size, prot))
			return 0;
	return -1;
}

int usft_text_close_all(void)
{
	int ret = 0;
	size_t i, j;

	/* adjacent pages of one protection: one mprotect() (usft_text_open()) */
	for (i = 0; i < nr_open; i = j) {
		for (j = i + 1; j < nr_open && open_pages[j].prot == open_pages[i].prot &&
				open_pages[j].page == open_pages[j - 1].page + page_size; j++)
			;
		USFT_TEXT_STEP();
		if (!restore_pages(open_pages[i].page, j - i, open_pages[i].prot))
			continue;
		/* page by page: as many as possible restored, the rest named */
		for (size_t k = i; k < j; k++) {
			if (!restore_pages(open_pages[k].page, 1, open_pages[k].prot))
				continue;
			pr_err("usft: cannot restore the protection of page %#lx (%d)\n",
			       open_pages[k].page, errno);
			ret = -EPERM;
		}
	}
	nr_open = 0;
	mem_checked = false;
	return ret;
}

/* ---- sync ----------------------------------------------------------- */

static int sync_core_ok;
static pid_t rv_pid;		/* the process the runtime initialised in (fork: the child) */
static void rv_atfork_child(void);

/* once (the tasks code registers first, ftrace_dyn_arch_init() asks again) */
void usft_sync_init(void)
{
	if (!rv_pid) {
		rv_pid = getpid();
		pthread_atfork(NULL, NULL, rv_atfork_child);
	}
	if (!sync_core_ok &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0)
		sync_core_ok = 1;
}

bool usft_sync_core_registered(void)
{
	return sync_core_ok;
}

static __no_tsan void sync_nop(ucontext_t *uc, void *arg)
{
}

void usft_sync_core(void)
{
	usft_count(nr_syncs);
	USFT_TEXT_STEP();
	if (sync_core_ok && usft_opts.sync == USFT_SYNC_MEMBARRIER) {
		if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0)
			return;
	}
	/*
	 * Returning from a signal handler is serialising (IRET, ERET).  A
	 * thread asleep in the kernel is not signalled when the process is
	 * registered for SYNC_CORE: the CPU it wakes on either ran a thread
	 * that was signalled after the write, or switches mm (serialising),
	 * or comes from a kernel thread that borrowed this mm, which the
	 * registration makes the scheduler serialise (membarrier's own
	 * rules; docs/design.md).  Unregistered, every thread is signalled.
	 */
	usft_threads_rendezvous(sync_nop, NULL, sync_core_ok ? usft_any_pc : NULL);
}

/* ---- rendezvous ------------------------------------------------------ */

/*
 * Thread lists have no fixed size: they grow with the process's thread
 * count.  The acknowledgement array is written by the handlers, and one
 * stopped in a debugger may write into an array of an earlier round
 * (rv_drain() gives up on it), so an array that is replaced is never freed
 * (they double, so the old ones together are smaller than the current).
 */
struct rv_list {
	int *v;
	int cap;
};
struct rv_ackv {
	int cap;
	int v[];
};
static void (*rv_fn)(ucontext_t *, void *);
static void *rv_arg;
static struct rv_ackv *rv_acks;
static int rv_nacks;
static int rv_signo;
static struct sigaction rv_old;
static pthread_mutex_t rv_lock = PTHREAD_MUTEX_INITIALIZER;
static int rv_owner;		/* the thread holding rv_lock, 0: none */
static int rv_go, rv_left;	/* usft_stop_machine(): release, handlers gone */
static int rv_active;		/* threads inside rv_handler for one of our signals */
static struct rv_list rv_skipped;	/* threads that block the signal */
static int rv_nskipped;
static int rv_nskipped_awake;	/* of them, not asleep in the kernel */

static void rv_lock_take(void)
{
	pthread_mutex_lock(&rv_lock);
	__atomic_store_n(&rv_owner, (int)syscall(SYS_gettid), __ATOMIC_RELAXED);
}

static void rv_lock_give(void)
{
	__atomic_store_n(&rv_owner, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&rv_lock);
}

/* fork: the child's one thread holds nothing (a rendezvous another thread
 * of the parent ran is not the child's: its exec must not wait for it) */
static void rv_atfork_child(void)
{
	pthread_mutex_init(&rv_lock, NULL);
	rv_owner = 0;
	rv_pid = getpid();
}

static __no_tsan void rv_park(ucontext_t *uc, void *arg)
{
	(void)uc;
	(void)arg;
}

static __no_tsan void rv_handler(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	if (si->si_code == SI_TKILL && si->si_pid == getpid()) {
		void (*fn)(ucontext_t *, void *);
		struct rv_ackv *acks;
		int n;

		/* in here every signal is blocked: see rv_signal_all() */
		__atomic_add_fetch(&rv_active, 1, __ATOMIC_SEQ_CST);
		fn = smp_load_acquire(&rv_fn);
		if (!fn)
			goto out_active;	/* a late signal of a finished rendezvous */
		fn(uc, rv_arg);
		n = __atomic_fetch_add(&rv_nacks, 1, __ATOMIC_SEQ_CST);
		acks = __atomic_load_n(&rv_acks, __ATOMIC_ACQUIRE);
		if (acks && n < acks->cap)
			__atomic_store_n(&acks->v[n], (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
		if (fn == rv_park) {
			/* usft_stop_machine(): stay here until the caller is done */
			while (!__atomic_load_n(&rv_go, __ATOMIC_ACQUIRE))
				syscall(SYS_sched_yield);
			__atomic_fetch_add(&rv_left, 1, __ATOMIC_RELEASE);
		}
out_active:
		__atomic_sub_fetch(&rv_active, 1, __ATOMIC_RELEASE);
	} else {
		usft_run_handler(&rv_old, sig, si, uc);
	}
	errno = saved;
}

/* the rendezvous signal (option sync_signal) */
int usft_rv_signo(void)
{
	return rv_signo ? rv_signo : usft_opts.sync_signal ? usft_opts.sync_signal : SIGRTMIN + 7;
}

static int rv_install(void)
{
	struct sigaction sa;

	/* every time: the program may have replaced it behind the interposer */
	if (!rv_signo)
		rv_signo = usft_opts.sync_signal ? usft_opts.sync_signal : SIGRTMIN + 7;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = rv_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	return usft_claim_signal(rv_signo, &sa, &rv_old);
}

static int rv_list_reserve(struct rv_list *l, int n)
{
	int cap = l->cap ? l->cap : 64;
	int *v;

	if (n <= l->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	v = realloc(l->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v = v;
	l->cap = cap;
	return 0;
}

/* the threads of the process into @l (NULL: only count them) */
static int list_tids(struct rv_list *l)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int tid = atoi(de->d_name);

		if (tid <= 0)
			continue;
		if (l && rv_list_reserve(l, n + 1)) {
			closedir(d);
			return -ENOMEM;
		}
		if (l)
			l->v[n] = tid;
		n++;
	}
	closedir(d);
	return n;
}

static int tid_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

/* room for the acks of @n threads (a late signal of an earlier round adds one) */
static int rv_acks_reserve(int n)
{
	struct rv_ackv *a = rv_acks;
	int cap = 2 * n + 64;

	if (a && a->cap >= cap)
		return 0;
	a = calloc(1, sizeof(*a) + cap * sizeof(a->v[0]));
	if (!a)
		return -ENOMEM;
	a->cap = cap;
	__atomic_store_n(&rv_acks, a, __ATOMIC_RELEASE);	/* the old one stays: see above */
	return 0;
}

/*
 * What /proc/self/task/<tid>/status says of thread @tid: its blocked
 * signals (SigBlk) and whether it sleeps in the kernel (State other than
 * R: in a system call, a page fault, stopped).  Return: false if unknown.
 */
static bool thread_status(int tid, unsigned long long *blocked, bool *sleeping)
{
	char path[64], line[256];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	*blocked = 0;
	*sleeping = false;
	while (found < 2 && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "State:", 6)) {
			const char *c = line + 6;

			while (*c == ' ' || *c == '\t')
				c++;
			*sleeping = *c && *c != 'R';
			found++;
		} else if (!strncmp(line, "SigBlk:", 7)) {
			*blocked = strtoull(line + 7, NULL, 16);
			found++;
		}
	}
	fclose(f);
	return found == 2;
}

static unsigned long syscall_pc(int tid);

int usft_nr_threads(void)
{
	return list_tids(NULL);
}

static void thread_comm(int tid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
	comm[0] = 0;
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, (int)len, f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
}

/*
 * usft's own threads (the tracers' writer and control server) block every
 * signal and never run the program's code, so no site can trap them.
 */
static bool usft_own_thread(int tid)
{
	char comm[32];

	thread_comm(tid, comm, sizeof(comm));
	return !strcmp(comm, "usft-writer") || !strcmp(comm, "usft-control");
}

/*
 * usft_signal_blocker() - the first thread other than the caller and
 * usft's own that blocks @signo now (SigBlk), with its name in @comm.
 * Return: its tid, 0 when none does, or -errno.
 */
int usft_signal_blocker(int signo, char *comm, size_t len)
{
	return usft_signal_blocker_awake(signo, NULL, false, comm, len);
}

/*
 * usft_signal_blocker_awake() - usft_signal_blocker(); with @skip_sleepers,
 * a thread asleep in a system call whose user pc @sleeper_ok accepts (NULL:
 * any) is not counted.
 */
int usft_signal_blocker_awake(int signo, bool (*sleeper_ok)(unsigned long pc),
			      bool skip_sleepers, char *comm, size_t len)
{
	static struct rv_list l;
	int self = (int)syscall(SYS_gettid), n, tid = 0;

	rv_lock_take();
	n = list_tids(&l);
	for (int i = 0; i < n && !tid; i++) {
		unsigned long long blocked;
		bool sleeping;
		unsigned long pc;

		if (l.v[i] == self || !thread_status(l.v[i], &blocked, &sleeping) ||
		    !((blocked >> (signo - 1)) & 1) || usft_own_thread(l.v[i]))
			continue;
		if (skip_sleepers && sleeping && (pc = syscall_pc(l.v[i])) &&
		    (!sleeper_ok || sleeper_ok(pc)))
			continue;
		tid = l.v[i];
	}
	rv_lock_give();
	if (n < 0)
		return n;
	if (tid && comm && len)
		thread_comm(tid, comm, len);
	return tid;
}

/*
 * Signal every other thread that does not block the rendezvous signal and
 * wait until each ran @fn and acknowledged (or exited).  A thread asleep in
 * the kernel whose user pc (/proc/<tid>/syscall) @sleeper_ok accepts is not
 * signalled: it cannot be at any instruction but that pc until it wakes,
 * and a signal would make a system call that is never restarted (poll,
 * epoll_wait, select, nanosleep, ...) fail with EINTR in a program that
 * has no handler of its own.  Its pc is kept in rv_sleeper_pc[].  Called
 * with rv_lock held.  Return: threads that did not answer within two
 * seconds; *@nacked: how many did.
 */
static unsigned long *rv_sleeper_pc;
static int rv_nsleepers, rv_sleeper_cap;

static int rv_sleepers_reserve(int n)
{
	unsigned long *v;

	if (n <= rv_sleeper_cap)
		return 0;
	v = realloc(rv_sleeper_pc, n * sizeof(*v));	/* no handler reads it */
	if (!v)
		return -ENOMEM;
	rv_sleeper_pc = v;
	rv_sleeper_cap = n;
	return 0;
}

static int rv_signal_all(void (*fn)(ucontext_t *uc, void *arg), void *arg,
			 bool (*sleeper_ok)(unsigned long pc), int *nacked)
{
	static struct rv_list tids_l, sent_l, acked_l;
	int self = (int)syscall(SYS_gettid), pid = getpid();
	int n, nsent = 0, missing = 0, *tids, *sent;
	struct timespec t0, now;

	n = list_tids(&tids_l);
	if (n < 0 || rv_list_reserve(&sent_l, n) || rv_list_reserve(&rv_skipped, n) ||
	    rv_acks_reserve(n) || rv_list_reserve(&acked_l, rv_acks->cap) ||
	    rv_sleepers_reserve(n)) {
		/* no thread reached: every caller takes that as "not safe" */
		pr_warn("usft: no memory for the thread rendezvous (%d threads)\n", n);
		*nacked = 0;
		return n > 1 ? n - 1 : 1;
	}
	tids = tids_l.v;
	sent = sent_l.v;
	rv_nskipped = 0;
	rv_nskipped_awake = 0;
	rv_nsleepers = 0;
	rv_arg = arg;
	rv_nacks = 0;
	smp_store_release(&rv_fn, fn);
	for (int i = 0; i < n; i++) {
		unsigned long long blocked = 0;
		bool sleeping = false;

		if (tids[i] == self)
			continue;
		thread_status(tids[i], &blocked, &sleeping);
		/*
		 * A thread that blocks the signal would never answer; it is
		 * skipped; its pc is reported to usft_threads_scan() callers.
		 */
		if ((blocked >> (rv_signo - 1)) & 1) {
			rv_skipped.v[rv_nskipped++] = tids[i];
			rv_nskipped_awake += !sleeping;
			pr_debug("usft: thread %d blocks signal %d; not part of the rendezvous\n",
				 tids[i], rv_signo);
			continue;
		}
		if (sleeper_ok && sleeping) {
			unsigned long pc = syscall_pc(tids[i]);

			if (pc && sleeper_ok(pc)) {
				rv_sleeper_pc[rv_nsleepers++] = pc;
				usft_count(nr_rv_sleepers);
				continue;
			}
		}
		if (syscall(SYS_tgkill, pid, tids[i], rv_signo) == 0)
			sent[nsent++] = tids[i];
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int nack = __atomic_load_n(&rv_nacks, __ATOMIC_ACQUIRE);

		/* sorted copy of the acks so far: n log n, not n^2, with many threads */
		if (nack > rv_acks->cap)
			nack = rv_acks->cap;
		for (int k = 0; k < nack; k++)
			acked_l.v[k] = __atomic_load_n(&rv_acks->v[k], __ATOMIC_ACQUIRE);
		qsort(acked_l.v, nack, sizeof(int), tid_cmp);
		missing = 0;
		for (int i = 0; i < nsent; i++) {
			bool acked = nack && bsearch(&sent[i], acked_l.v, nack, sizeof(int), tid_cmp);

			if (!acked && syscall(SYS_tgkill, pid, sent[i], 0) == 0)
				missing++;
		}
		if (!missing)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) > 2000000000L) {
			pr_warn("usft: %d thread(s) did not answer the rendezvous signal %d (blocked?)\n",
				missing, rv_signo);
			break;
		}
		sched_yield();
	}
	*nacked = __atomic_load_n(&rv_nacks, __ATOMIC_ACQUIRE);
	return missing;
}

/*
 * Wait until no thread is inside rv_handler any more.  A thread in there
 * has every signal blocked, so the next rendezvous would take it for one
 * that blocks the signal and skip it (a reclaim scan would then miss where
 * it is).  Called with rv_lock held, after rv_fn went NULL.
 */
static void rv_drain(void)
{
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (__atomic_load_n(&rv_active, __ATOMIC_ACQUIRE)) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) > 100000000L)
			break;	/* a thread stopped in the handler (debugger): do not hang */
		sched_yield();
	}
}


/*
 * The user pc of a thread blocked in a system call (/proc/<tid>/syscall:
 * "nr a0..a5 sp pc"), or 0 when it is running or unknown.
 */
static unsigned long syscall_pc(int tid)
{
	char path[64], line[256], *last;
	unsigned long pc = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f) && strncmp(line, "running", 7) &&
	    (last = strrchr(line, ' ')))
		pc = strtoul(last + 1, NULL, 0);
	fclose(f);
	return pc;
}

bool usft_any_pc(unsigned long pc)
{
	return true;
}

/*
 * usft_threads_scan() - usft_threads_rendezvous(), and where each thread is
 * that did not run @fn: a thread asleep in the kernel (not signalled) or
 * one that blocks the signal, by its pc if it waits in a system call (the
 * pc there cannot change until it returns), else 0 (unknown).
 * Return: as usft_threads_rendezvous(); *@nblocked pcs in @blocked_pc.
 */
int usft_threads_scan(void (*fn)(ucontext_t *uc, void *arg), void *arg,
		      bool (*sleeper_ok)(unsigned long pc),
		      unsigned long *blocked_pc, int max, int *nblocked)
{
	int missing, nacked;

	rv_lock_take();
	if (rv_install()) {
		rv_lock_give();
		return -1;
	}
	missing = rv_signal_all(fn, arg, sleeper_ok, &nacked);
	smp_store_release(&rv_fn, NULL);
	rv_drain();
	*nblocked = 0;
	if (blocked_pc && rv_nsleepers + rv_nskipped > max)
		missing += rv_nsleepers + rv_nskipped - max;	/* not reported: not clean */
	for (int i = 0; i < rv_nsleepers && *nblocked < max; i++)
		blocked_pc[(*nblocked)++] = rv_sleeper_pc[i];
	for (int i = 0; i < rv_nskipped && *nblocked < max; i++)
		blocked_pc[(*nblocked)++] = syscall_pc(rv_skipped.v[i]);
	rv_lock_give();
	return missing;
}

int usft_threads_rendezvous(void (*fn)(ucontext_t *uc, void *arg), void *arg,
			    bool (*sleeper_ok)(unsigned long pc))
{
	int nblocked;

	return usft_threads_scan(fn, arg, sleeper_ok, NULL, 0, &nblocked);
}

/*
 * usft_stop_machine() - run @fn while every other thread waits in the
 * rendezvous signal handler (kernel stop_machine(), for text changes the
 * architecture does not allow under a running thread).  @fn must not take
 * locks another thread may hold (no malloc).  A thread that blocks the
 * signal is not stopped: asleep in the kernel it is left so; awake, or a
 * thread that did not answer (a debugger holds it, or it was not scheduled
 * within 2 s), it could run the text @fn changes, so @fn is not run and
 * *@fn_ret is -EBUSY (awake blockers: after about 100 ms of retries).
 * Return: @fn's result through *@fn_ret, and the threads not stopped (-1:
 * the signal could not be installed, @fn not run).
 */
/* one stop: @fn run (*@fn_ret) unless a thread was not held; *@awake: those awake */
static int stop_once(int (*fn)(void *arg), void *arg, int *fn_ret, int *awake)
{
	int missing, nacked;

	rv_lock_take();
	if (rv_install()) {
		rv_lock_give();
		return -1;
	}
	__atomic_store_n(&rv_go, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&rv_left, 0, __ATOMIC_RELAXED);
	missing = rv_signal_all(rv_park, NULL, NULL, &nacked);
	*awake = rv_nskipped_awake;
	if (missing || *awake) {
		*fn_ret = -EBUSY;
	} else {
		*fn_ret = fn(arg);
		usft_counters.nr_stop_machine++;
	}
	__atomic_store_n(&rv_go, 1, __ATOMIC_RELEASE);
	/* the handlers read rv_go: the next stop must not reset it under them */
	while (__atomic_load_n(&rv_left, __ATOMIC_ACQUIRE) < nacked)
		sched_yield();
	smp_store_release(&rv_fn, NULL);
	rv_drain();
	rv_lock_give();
	return missing;
}

int usft_stop_machine(int (*fn)(void *arg), void *arg, int *fn_ret)
{
	int missing = 0, awake = 0;

	/*
	 * A thread blocks the signal while glibc creates or tears it down
	 * (one preempted there stays so): a stop refused only for an awake
	 * blocker is tried again 1, 2, 4 .. 32 ms apart (about 100 ms).  One
	 * that did not answer in 2 s is not: it would cost 2 s each time.
	 */
	for (int tries = 0; tries < 7; tries++) {
		struct timespec ms = { 0, (1L << tries) * 1000000L };

		missing = stop_once(fn, arg, fn_ret, &awake);
		if (missing || !awake)
			break;
		nanosleep(&ms, NULL);
	}
	return missing < 0 ? missing : missing + awake;
}

/*
 * usft_exec_begin() / usft_exec_end() (usft.h): no rendezvous across an
 * exec.  A rendezvous signal pending for the thread that execs survives
 * the exec (pending signals do; handlers do not), and the new image takes
 * it with the default action: it dies.  So the exec runs holding rv_lock
 * (a rendezvous that runs is waited for; the caller answers it meanwhile,
 * or blocks the signal and was not sent it), and with the lock held any
 * instance still pending for the caller (sent by a rendezvous that gave up
 * on it: it blocked the signal by then) is taken with a zero-timeout
 * sigtimedwait(), which changes neither the mask nor a disposition.
 * Nothing is done in a vfork() child (not this process: the lock is the
 * parent's memory and would stay held), nor by the thread that holds the
 * lock itself (a handler of the program's that execs on top of a
 * rendezvous it interrupted), nor before the runtime initialised (no
 * rendezvous yet).
 */
USFT_API int usft_exec_begin(void)
{
	int saved = errno, self = (int)syscall(SYS_gettid);

	if (!__atomic_load_n(&rv_pid, __ATOMIC_ACQUIRE) || getpid() != rv_pid ||
	    __atomic_load_n(&rv_owner, __ATOMIC_RELAXED) == self)
		return 0;
	rv_lock_take();
	if (rv_signo) {
		struct timespec zero = { 0, 0 };
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, rv_signo);
		while (sigtimedwait(&set, NULL, &zero) == rv_signo)
			;
	}
	errno = saved;
	return 1;
}

USFT_API void usft_exec_end(int token)
{
	int saved = errno;

	if (token)
		rv_lock_give();
	errno = saved;
}
