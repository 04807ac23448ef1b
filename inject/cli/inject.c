// SPDX-License-Identifier: MIT
/*
 * inject/cli/inject.c - load the runtime into a running process (inject.h;
 * the safety argument is docs/attach.md).
 *
 *  1. probe (nothing touched): the process exists, we may trace it, nobody
 *     traces it already, same architecture, a dynamic loader and libc,
 *     patchable sites in what it maps.
 *  2. stop: PTRACE_SEIZE every thread (no signal sent, its parent sees
 *     nothing), PTRACE_INTERRUPT each, wait for each stop; threads that
 *     appear meanwhile are seized through PTRACE_O_TRACECLONE.
 *  3. with every thread stopped: rewrite the compiler NOPs the runtime
 *     would rewrite itself (inject_arch_site_nop()), moving any thread whose
 *     pc is inside one to its end.
 *  4. pick one thread at a safe point (waiting in a system call that no
 *     libc lock is held across, or in the program's own code), release every
 *     other, and make it call dlopen(runtime) and usft_attach_start(), the
 *     return trapping back to us; then its registers exactly as they were.
 *  5. detach: its interrupted system call restarts as after any ptrace stop.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "elf/elf.h"
#include "inject.h"

#define MAX_THREADS 4096
#define CALL_TIMEOUT_MS 10000

struct map {
	unsigned long lo, hi, off;
	char perm[5];
	char path[PATH_MAX];
};

struct maps {
	struct map *m;
	size_t n;
};

static void fail(struct inject_result *res, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(struct inject_result *res, int code, const char *fmt, ...)
{
	va_list ap;

	res->code = code;
	va_start(ap, fmt);
	vsnprintf(res->msg, sizeof(res->msg), fmt, ap);
	va_end(ap);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

void usft_attach_step(const char *what)
{
	static int on = -1;
	static struct timespec first, last;
	struct timespec ts;
	const char *v;

	if (on < 0) {
		on = (v = getenv("USFT_ATTACH_TIMES")) && !strcmp(v, "1");
		clock_gettime(CLOCK_MONOTONIC, &first);
		last = first;
	}
	if (!on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(stderr, "usft: step %-28s %8.3f ms (at %8.3f ms)\n", what,
		(ts.tv_sec - last.tv_sec) * 1e3 + (ts.tv_nsec - last.tv_nsec) / 1e6,
		(ts.tv_sec - first.tv_sec) * 1e3 + (ts.tv_nsec - first.tv_nsec) / 1e6);
	last = ts;
}

/* ---- /proc ------------------------------------------------------------- */

static int read_maps(pid_t pid, struct maps *out)
{
	char path[64], line[PATH_MAX + 256];
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	out->m = NULL;
	out->n = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct map m = { 0 };
		int pos = 0;

		if (sscanf(line, "%lx-%lx %4s %lx %*s %*s %n", &m.lo, &m.hi, m.perm, &m.off, &pos) < 4)
			continue;
		if (pos > 0)
			snprintf(m.path, sizeof(m.path), "%s", line + pos);
		m.path[strcspn(m.path, "\n")] = 0;
		if (out->n == cap) {
			void *p = realloc(out->m, (cap = cap ? cap * 2 : 64) * sizeof(m));

			if (!p)
				break;
			out->m = p;
		}
		out->m[out->n++] = m;
	}
	fclose(f);
	return 0;
}

/* a "Name:\tvalue" line of /proc/PID[/task/TID]/status */
static bool status_field(const char *file, const char *key, char *out, size_t len)
{
	char line[512];
	size_t kl = strlen(key);
	FILE *f = fopen(file, "re");
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			char *v = line + kl + 1;

			while (*v == '\t' || *v == ' ')
				v++;
			v[strcspn(v, "\n")] = 0;
			snprintf(out, len, "%s", v);
			found = true;
		}
	}
	fclose(f);
	return found;
}

static int list_tids(pid_t pid, pid_t *tids, int max)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((d = readdir(dir)) && n < max)
		if (d->d_name[0] != '.')
			tids[n++] = (pid_t)atoi(d->d_name);
	closedir(dir);
	return n;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* the file as the target sees it (its root may differ from ours) */
static void target_path(pid_t pid, const char *p, char *out, size_t len)
{
	if (snprintf(out, len, "/proc/%d/root%s", (int)pid, p) >= (int)len)
		out[0] = 0;
}

/* ---- probe --------------------------------------------------------------- */

static unsigned short file_machine(const char *path, bool *has_interp)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	unsigned short m = 0;
	GElf_Ehdr eh;
	size_t nph;
	Elf *e;

	*has_interp = false;
	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && gelf_getehdr(e, &eh)) {
		m = eh.e_machine;
		if (!elf_getphdrnum(e, &nph))
			for (size_t i = 0; i < nph; i++) {
				GElf_Phdr ph;

				if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
					*has_interp = true;
			}
	}
	if (e)
		elf_end(e);
	close(fd);
	return m;
}

/* the load bias of the object mapped from @path (its offset-0 mapping) */
static unsigned long map_base(const struct maps *mp, const char *path)
{
	for (size_t i = 0; i < mp->n; i++)
		if (!strcmp(mp->m[i].path, path) && mp->m[i].off == 0)
			return mp->m[i].lo;
	return 0;
}

/* each distinct file mapped executable, once */
static bool first_exec_map(const struct maps *mp, size_t i)
{
	if (mp->m[i].perm[2] != 'x' || mp->m[i].path[0] != '/')
		return false;
	for (size_t k = 0; k < i; k++)
		if (mp->m[k].perm[2] == 'x' && !strcmp(mp->m[k].path, mp->m[i].path))
			return false;
	return true;
}

static int target_probe(pid_t pid, struct usft_target *t, struct inject_result *res,
			bool count_sites)
{
	char file[128], val[256], exe[PATH_MAX];
	unsigned int ruid = 0, euid = 0;
	struct maps mp;
	bool interp;
	ssize_t n;

	memset(t, 0, sizeof(*t));
	memset(res, 0, sizeof(*res));
	t->pid = pid;
	snprintf(file, sizeof(file), "/proc/%d/status", (int)pid);
	if (pid <= 0 || (kill(pid, 0) && errno == ESRCH) || !status_field(file, "Uid", val, sizeof(val))) {
		fail(res, USFT_EXIT_NOPROC, "no process %d (check the pid: ps -p %d)", (int)pid,
		     (int)pid);
		return res->code;
	}
	if (status_field(file, "Tgid", exe, sizeof(exe)) && atoi(exe) != pid) {
		fail(res, USFT_EXIT_NOPROC, "%d is a thread of process %s: give the process id",
		     (int)pid, exe);
		return res->code;
	}
	sscanf(val, "%u %u", &ruid, &euid);
	t->uid = euid;
	t->start_time = usft_proc_start_time(pid);
	if (geteuid() != 0 && (euid != geteuid() || ruid != geteuid())) {
		fail(res, USFT_EXIT_PERM, "process %d belongs to uid %u, not to you (uid %u): "
		     "run usft as that user or as root", (int)pid, euid, (unsigned int)geteuid());
		return res->code;
	}
	if (status_field(file, "TracerPid", val, sizeof(val)) && atoi(val) != 0) {
		char cf[64], comm[64] = "?";

		snprintf(cf, sizeof(cf), "/proc/%d/status", atoi(val));
		status_field(cf, "Name", comm, sizeof(comm));
		fail(res, USFT_EXIT_TRACED, "process %d is already traced by process %s (%s): "
		     "detach that debugger or tracer first", (int)pid, val, comm);
		return res->code;
	}
	snprintf(file, sizeof(file), "/proc/%d/exe", (int)pid);
	n = readlink(file, t->exe, sizeof(t->exe) - 1);
	if (n <= 0) {
		fail(res, errno == EACCES ? USFT_EXIT_PERM : USFT_EXIT_NOPROC,
		     "cannot read /proc/%d/exe: %s%s", (int)pid, strerror(errno),
		     errno == EACCES ? " (another user's process, or a kernel thread)" : "");
		return res->code;
	}
	t->exe[n] = 0;
	if (read_maps(pid, &mp)) {
		fail(res, USFT_EXIT_PERM, "cannot read /proc/%d/maps: %s", (int)pid, strerror(errno));
		return res->code;
	}
	target_path(pid, t->exe, exe, sizeof(exe));
	{
		unsigned short m = file_machine(exe, &interp);

		if (m && m != inject_arch_machine()) {
			fail(res, USFT_EXIT_ARCH, "process %d (%s) is built for another architecture "
			     "(ELF machine %u; this usft injects into %u): use the usft of that "
			     "architecture", (int)pid, t->exe, m, inject_arch_machine());
			free(mp.m);
			return res->code;
		}
	}
	for (size_t i = 0; i < mp.n; i++) {
		const char *b = base_name(mp.m[i].path);

		if (!strncmp(b, "libc.so.", 8) && !t->libc[0]) {
			snprintf(t->libc, sizeof(t->libc), "%s", mp.m[i].path);
			t->libc_base = map_base(&mp, mp.m[i].path);
		}
		if (!strcmp(b, USFT_PRELOAD_NAME))
			t->has_runtime = true;
		if (!strncmp(b, "libusft.so", 10))
			t->has_libusft = true;
	}
	if ((!t->libc[0] || !t->libc_base) && interp) {
		fail(res, USFT_EXIT_GONE, "process %d (%s) has not loaded its libc yet (starting, "
		     "or in the middle of an exec): try again", (int)pid, t->exe);
		free(mp.m);
		return res->code;
	}
	if (!t->libc[0] || !t->libc_base) {
		fail(res, USFT_EXIT_STATIC, "process %d (%s) has no dynamic loader and libc "
		     "(a static binary?): usft can only attach to dynamically linked programs; "
		     "start it under `usft record` or link it with -lusft instead", (int)pid, t->exe);
		free(mp.m);
		return res->code;
	}
	for (size_t i = 0; count_sites && i < mp.n; i++) {
		unsigned long *addrs = NULL;
		size_t ns = 0;
		char p[PATH_MAX + 32];

		if (!first_exec_map(&mp, i) || !strcmp(base_name(mp.m[i].path), USFT_PRELOAD_NAME))
			continue;
		target_path(pid, mp.m[i].path, p, sizeof(p));
		if (!usft_read_sites(p, &addrs, &ns))
			t->nr_sites += ns;
		free(addrs);
	}
	free(mp.m);
	if (count_sites && !t->nr_sites) {
		fail(res, USFT_EXIT_NOSITES, "process %d (%s) has no patchable functions: nothing "
		     "to trace (build it with the patch flags: pkg-config --variable=patch_cflags "
		     "usft); nothing was changed", (int)pid, t->exe);
		return res->code;
	}
	return 0;
}

int usft_target_probe(pid_t pid, struct usft_target *t, struct inject_result *res)
{
	return target_probe(pid, t, res, true);
}

int usft_target_check(pid_t pid, struct usft_target *t, struct inject_result *res)
{
	return target_probe(pid, t, res, false);
}

/* ---- symbols in the target ------------------------------------------------- */

static unsigned long target_sym(pid_t pid, const char *path, unsigned long base, const char *name)
{
	struct usft_elf_info info;
	char p[PATH_MAX + 32];
	unsigned long a = 0;

	target_path(pid, path, p, sizeof(p));
	if (usft_elf_read(p, &info))
		return 0;
	for (size_t i = 0; i < info.nr_syms && !a; i++)
		if (!strcmp(info.syms[i].name, name))
			a = info.syms[i].addr + (info.is_dyn ? base : 0);
	usft_elf_free(&info);
	return a;
}

/* ---- threads ------------------------------------------------------------------- */

struct thread {
	pid_t tid;
	bool seized, stopped, released, gone;
	int candidate;			/* 2: in a safe system call, 1: own code, 0: no */
	struct inject_regs *regs;	/* saved at the stop */
};

struct stopped {
	pid_t pid;
	struct thread *t;
	int n;
};

static struct thread *find_thread(struct stopped *s, pid_t tid)
{
	for (int i = 0; i < s->n; i++)
		if (s->t[i].tid == tid)
			return &s->t[i];
	return NULL;
}

static struct thread *add_thread(struct stopped *s, pid_t tid)
{
	struct thread *t = &s->t[s->n++];

	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->regs = calloc(1, inject_arch_regs_size());
	return t;
}

const char *usft_proc_stat(pid_t pid, char *buf, size_t len)
{
	char path[64], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p + 1 : NULL;
}

/* @tid is exiting (a zombie: its notification may wait for the others) */
static bool thread_dead(pid_t tid)
{
	char buf[512];
	const char *p = usft_proc_stat(tid, buf, sizeof(buf));

	return !p || p[1] == 'Z' || p[1] == 'X';
}

unsigned long long usft_proc_start_time(pid_t pid)
{
	char buf[1024];
	const char *p = usft_proc_stat(pid, buf, sizeof(buf));
	unsigned long long v = 0;

	/* state is field 3, starttime field 22 */
	if (!p || sscanf(p, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
			 "%*d %*d %*d %*d %llu", &v) != 1)
		return 0;
	return v;
}

bool usft_proc_gone(pid_t pid)
{
	return thread_dead(pid);
}

/* the next ptrace event of @tid into *@status; Return: 0, -ESRCH (it is
 * exiting), -ETIMEDOUT or -errno */
static int wait_stop(pid_t tid, int *status, long deadline)
{
	for (int spin = 0;; spin++) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);

		if (r == tid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		if ((spin & 15) == 15 && thread_dead(tid))
			return -ESRCH;
		usleep(200);
	}
}

static bool is_event_stop(int status)
{
	return WIFSTOPPED(status) && (status >> 16) == PTRACE_EVENT_STOP;
}

/* resume @t after a stop, passing on a signal that stop was for */
static void resume(pid_t tid, int status)
{
	int sig = 0;

	if (WIFSTOPPED(status) && !(status >> 16) && WSTOPSIG(status) != SIGTRAP)
		sig = WSTOPSIG(status);
	ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig);
}

/* collect the exit of every seized thread that died (a zombie we trace) */
static void reap_dead(struct stopped *s)
{
	for (int i = 0; i < s->n; i++) {
		struct thread *t = &s->t[i];
		int st;

		if (t->seized && !t->gone && thread_dead(t->tid) &&
		    waitpid(t->tid, &st, __WALL | WNOHANG) == t->tid &&
		    (WIFEXITED(st) || WIFSIGNALED(st)))
			t->gone = true;
	}
}

/*
 * Where a thread is that has not stopped yet: its state letter from
 * /proc/TID/stat ('?' when gone), and "state S, wchan W, syscall N" in @why.
 */
/* the first line of /proc/PID/task/TID/@name into @out ("?" when unreadable) */
static void task_file(pid_t pid, pid_t tid, const char *name, char *out, size_t len)
{
	char path[96];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, out, len - 1);
		close(fd);
	}
	if (n <= 0)
		snprintf(out, len, "?");
	else
		out[n] = 0;
}

static char thread_where(pid_t pid, pid_t tid, char *why, size_t len)
{
	char stat[512], wchan[64], sc[256], *p;
	char state = '?';

	task_file(pid, tid, "stat", stat, sizeof(stat));
	task_file(pid, tid, "wchan", wchan, sizeof(wchan));
	task_file(pid, tid, "syscall", sc, sizeof(sc));
	p = strrchr(stat, ')');
	if (p && p[1] == ' ')
		state = p[2];
	sc[strcspn(sc, " \n")] = 0;
	snprintf(why, len, "state %c, wchan %.40s, system call %.20s", state, wchan, sc);
	return state;
}

/* @tid has exited (a zombie or dead thread) or is no longer listed */
static bool thread_exiting(pid_t pid, pid_t tid)
{
	char why[160], state = thread_where(pid, tid, why, sizeof(why));

	return state == 'Z' || state == 'X' || state == '?';
}

/*
 * Seize and stop every thread.  A thread that takes a signal before its
 * interrupt stop gets a signal-delivery-stop first: that signal is passed
 * on and the thread stopped again.  A thread that has not stopped after
 * 5 s fails the attach, unless it is runnable or in an uninterruptible
 * kernel wait (R, D: a loaded machine, a page fault's I/O; it stops once it
 * gets to run or the wait ends), which gets up to 30 s.  The message says
 * where it was.  Return: 0, or an exit code.
 */
static int stop_all(struct stopped *s, struct inject_result *res)
{
	long deadline = now_ms() + 5000, hard = deadline + 25000;
	bool more = true;

	while (more) {
		pid_t tids[MAX_THREADS];
		int n = list_tids(s->pid, tids, MAX_THREADS);

		more = false;
		if (n <= 0) {
			fail(res, USFT_EXIT_GONE, "process %d exited during the attach", (int)s->pid);
			return res->code;
		}
		for (int i = 0; i < n; i++) {
			struct thread *t = find_thread(s, tids[i]);

			if (t && t->seized)
				continue;
			if (!t) {
				if (s->n == MAX_THREADS) {
					fail(res, USFT_EXIT_FAIL, "more than %d threads", MAX_THREADS);
					return res->code;
				}
				t = add_thread(s, tids[i]);
			}
			if (ptrace(PTRACE_SEIZE, t->tid, NULL,
				   (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC))) {
				int e = errno;

				/*
				 * A thread that exited and is not reaped yet (its
				 * exit_state set: ptrace_attach() says EPERM), e.g.
				 * one an exec's de_thread() just ended, is gone too.
				 */
				if (e == ESRCH || (e == EPERM && thread_exiting(s->pid, t->tid))) {
					t->gone = true;
					t->seized = true;
					continue;
				}
				errno = e;
				fail(res, USFT_EXIT_PERM, "cannot trace thread %d of process %d: %s%s",
				     (int)t->tid, (int)s->pid, strerror(errno),
				     errno == EPERM ? " (another tracer, a ptrace_scope that forbids "
				     "it - see /proc/sys/kernel/yama/ptrace_scope - or missing "
				     "CAP_SYS_PTRACE)" : "");
				return res->code;
			}
			t->seized = true;
			more = true;
			ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
		}
		for (int i = 0; i < s->n; i++) {
			struct thread *t = &s->t[i];
			int st;

			while (t->seized && !t->stopped && !t->gone) {
				int r = wait_stop(t->tid, &st, now_ms() + 100 < deadline ?
						  now_ms() + 100 : deadline);

				if (r == -ETIMEDOUT && now_ms() < deadline) {
					/*
					 * A thread in exec waits in the kernel for the
					 * others to die, and a traced one is dead only
					 * once its tracer reaped it: reap those.
					 */
					reap_dead(s);
					continue;
				}
				if (r == -ETIMEDOUT) {
					char why[160], state = thread_where(s->pid, t->tid, why,
									    sizeof(why));

					if ((state == 'R' || state == 'D') && now_ms() < hard) {
						deadline = now_ms() + 100 < hard ? now_ms() + 100 : hard;
						continue;
					}
					fail(res, USFT_EXIT_FAIL, "thread %d did not stop within %ld s "
					     "(%s)", (int)t->tid,
					     now_ms() < hard ? 5L : 30L, why);
					return res->code;
				}
				if (r || WIFEXITED(st) || WIFSIGNALED(st)) {
					t->gone = true;
					break;
				}
				if (is_event_stop(st)) {
					t->stopped = true;
				} else if ((st >> 8) == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
					fail(res, USFT_EXIT_GONE, "process %d called exec during the "
					     "attach: try again", (int)s->pid);
					return res->code;
				} else if ((st >> 8) == (SIGTRAP | (PTRACE_EVENT_CLONE << 8))) {
					/* the new thread is seized already; it reports its own stop */
					unsigned long nt = 0;

					ptrace(PTRACE_GETEVENTMSG, t->tid, NULL, &nt);
					if (nt && !find_thread(s, (pid_t)nt) && s->n < MAX_THREADS) {
						struct thread *c = add_thread(s, (pid_t)nt);

						c->seized = true;
					}
					ptrace(PTRACE_CONT, t->tid, NULL, NULL);
					ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
					more = true;
				} else {
					resume(t->tid, st);
					ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
				}
			}
		}
	}
	for (int i = 0; i < s->n; i++) {
		struct thread *t = &s->t[i];

		if (t->stopped && inject_arch_save(t->tid, t->regs)) {
			if (errno == ESRCH)
				fail(res, USFT_EXIT_GONE, "process %d exited during the attach",
				     (int)s->pid);
			else
				fail(res, USFT_EXIT_FAIL, "cannot read the registers of thread %d: %s",
				     (int)t->tid, strerror(errno));
			return res->code;
		}
	}
	return 0;
}

/* let a stopped thread go: registers as saved, nothing delivered */
static void release(struct thread *t)
{
	if (t->stopped && !t->gone && !t->released)
		ptrace(PTRACE_DETACH, t->tid, NULL, NULL);
	t->released = true;
}

static void release_all(struct stopped *s)
{
	for (int i = 0; i < s->n; i++)
		if (s->t[i].seized && !s->t[i].gone && !s->t[i].released) {
			if (!s->t[i].stopped) {
				/* seized, stop not seen yet: detach needs a stop */
				int st;

				ptrace(PTRACE_INTERRUPT, s->t[i].tid, NULL, NULL);
				if (!wait_stop(s->t[i].tid, &st, now_ms() + 1000) && WIFSTOPPED(st))
					s->t[i].stopped = true;
			}
			release(&s->t[i]);
		}
}

/* ---- the safe point -------------------------------------------------------------- */

/*
 * System calls a thread waits in without holding a lock that dlopen() or
 * the runtime's start could need: waiting for input, time or a child.
 * Anything else (futex: maybe a libc lock; a thread inside libc computing)
 * is not chosen while a better thread exists.
 */
static bool safe_syscall(long nr)
{
	static const long safe[] = {
#ifdef SYS_nanosleep
		SYS_nanosleep,
#endif
#ifdef SYS_clock_nanosleep
		SYS_clock_nanosleep,
#endif
#ifdef SYS_poll
		SYS_poll,
#endif
#ifdef SYS_ppoll
		SYS_ppoll,
#endif
#ifdef SYS_select
		SYS_select,
#endif
#ifdef SYS_pselect6
		SYS_pselect6,
#endif
#ifdef SYS_epoll_wait
		SYS_epoll_wait,
#endif
#ifdef SYS_epoll_pwait
		SYS_epoll_pwait,
#endif
#ifdef SYS_accept
		SYS_accept,
#endif
#ifdef SYS_accept4
		SYS_accept4,
#endif
#ifdef SYS_wait4
		SYS_wait4,
#endif
#ifdef SYS_waitid
		SYS_waitid,
#endif
#ifdef SYS_pause
		SYS_pause,
#endif
	};

	for (size_t i = 0; i < sizeof(safe) / sizeof(safe[0]); i++)
		if (safe[i] == nr)
			return true;
	return false;
}

static bool blocks_sigsegv(pid_t pid, pid_t tid)
{
	char file[96], val[64];
	unsigned long long mask;

	snprintf(file, sizeof(file), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (!status_field(file, "SigBlk", val, sizeof(val)))
		return true;
	mask = strtoull(val, NULL, 16);
	return mask & (1ULL << (SIGSEGV - 1));
}

static bool in_main_text(const struct maps *mp, const char *exe, unsigned long pc)
{
	for (size_t i = 0; i < mp->n; i++)
		if (pc >= mp->m[i].lo && pc < mp->m[i].hi)
			return mp->m[i].perm[2] == 'x' && !strcmp(mp->m[i].path, exe);
	return false;
}

/*
 * A thread in restart_syscall continues a wait the kernel interrupted
 * (-ERESTART_RESTARTBLOCK: a nanosleep, clock_nanosleep or poll with a
 * timeout, but also a futex wait, which may be a libc lock's): safe only
 * when its pc, right after the system call instruction, is inside libc's
 * nanosleep or poll wrappers.  Every attach leaves such a thread there
 * (step 8 of docs/attach.md), so without this a program whose threads all
 * sleep could be attached once only.
 */
static bool restarts_safe_wait(const struct usft_target *tg, unsigned long pc,
			       struct usft_elf_info *libc, int *libc_state)
{
	const struct usft_elf_sym *sym;
	char p[PATH_MAX + 32];

	if (*libc_state == 0) {
		target_path(tg->pid, tg->libc, p, sizeof(p));
		*libc_state = usft_elf_read(p, libc) ? -1 : 1;
	}
	if (*libc_state < 0 || pc < tg->libc_base)
		return false;
	sym = usft_elf_find_sym(libc, pc - (libc->is_dyn ? tg->libc_base : 0));
	return sym && (strstr(sym->name, "nanosleep") || strstr(sym->name, "poll"));
}

static struct thread *choose(struct stopped *s, const struct maps *mp,
			     const struct usft_target *tg)
{
	struct usft_elf_info libc;
	struct thread *best = NULL;
	int libc_state = 0;

	for (int i = 0; i < s->n; i++) {
		struct thread *t = &s->t[i];
		long nr;

		t->candidate = 0;
		if (!t->stopped || t->gone || blocks_sigsegv(s->pid, t->tid))
			continue;
		nr = inject_arch_syscall(t->regs);
		if (nr >= 0 && (safe_syscall(nr) ||
				(nr == SYS_restart_syscall &&
				 restarts_safe_wait(tg, inject_arch_pc(t->regs), &libc, &libc_state))))
			t->candidate = 2;
		else if (nr < 0 && in_main_text(mp, tg->exe, inject_arch_pc(t->regs)))
			t->candidate = 1;
		if (t->candidate && (!best || t->candidate > best->candidate))
			best = t;
	}
	if (libc_state > 0)
		usft_elf_free(&libc);
	return best;
}

/* ---- sites ------------------------------------------------------------------------ */

static int cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/*
 * For every site of every object the target maps: @fn(site address, its
 * bytes in the file, its bytes in the target), which may change the latter
 * (Return: 1) to be written back.  The bytes are read once per object
 * segment (file and target), not per site, and what changed is written
 * back in runs: one pwrite per run of pages that hold a changed site, the
 * bytes between the sites being the ones just read (every thread is
 * stopped: nothing else writes them), so no page without a change is
 * written.  Return: sites visited; *@failed: changed sites not written.
 */
typedef int (*site_fn)(unsigned long addr, const unsigned char *file, unsigned char *cur,
		       void *arg);

struct seg_sites {
	int memfd;
	unsigned long bias, lo, len;	/* [lo, lo + len): first site .. end of the last */
	unsigned char *file, *mem;
	const unsigned long *addr;	/* link-time addresses, sorted */
	size_t n;
};

/* write back the changed sites of @g (flags in @dirty); Return: sites not written */
static unsigned long write_runs(const struct seg_sites *g, const bool *dirty, int len)
{
	unsigned long page = (unsigned long)sysconf(_SC_PAGESIZE), failed = 0;
	size_t k = 0;

	while (k < g->n) {
		unsigned long start, end;
		size_t nr = 0;

		if (!dirty[k]) {
			k++;
			continue;
		}
		start = g->addr[k];
		end = start + len;
		for (; k < g->n; k++) {
			if (!dirty[k])
				continue;
			/* the next change is on the run's last page or the one after */
			if ((g->addr[k] + g->bias) / page > (end - 1 + g->bias) / page + 1)
				break;
			end = g->addr[k] + len;
			nr++;
		}
		if (pwrite(g->memfd, g->mem + (start - g->lo), end - start,
			   (off_t)(start + g->bias)) != (ssize_t)(end - start))
			failed += nr;
	}
	return failed;
}

static unsigned long segment_sites(struct seg_sites *g, int fd, unsigned long file_off,
				   site_fn fn, void *arg, unsigned long *failed)
{
	int len = inject_arch_site_len();
	unsigned long visited = 0;
	bool *dirty;

	g->file = malloc(g->len);
	g->mem = malloc(g->len);
	dirty = calloc(g->n, sizeof(*dirty));
	if (g->file && g->mem && dirty &&
	    pread(fd, g->file, g->len, (off_t)file_off) == (ssize_t)g->len &&
	    pread(g->memfd, g->mem, g->len, (off_t)(g->lo + g->bias)) == (ssize_t)g->len) {
		bool any = false;

		for (size_t k = 0; k < g->n; k++) {
			unsigned long o = g->addr[k] - g->lo;

			if (k && g->addr[k] < g->addr[k - 1] + len)
				continue;	/* a duplicate, or overlapping: never write twice */
			dirty[k] = fn(g->addr[k] + g->bias, g->file + o, g->mem + o, arg) > 0;
			any |= dirty[k];
			visited++;
		}
		if (any)
			*failed += write_runs(g, dirty, len);
	}
	free(dirty);
	free(g->file);
	free(g->mem);
	return visited;
}

static unsigned long for_each_site(pid_t pid, int memfd, site_fn fn, void *arg,
				   unsigned long *failed)
{
	int len = inject_arch_site_len();
	unsigned long n = 0;
	struct maps mp;

	*failed = 0;
	if (read_maps(pid, &mp))
		return 0;
	for (size_t i = 0; i < mp.n; i++) {
		char p[PATH_MAX + 32];
		unsigned long *addrs = NULL, bias;
		size_t ns = 0, nph;
		GElf_Ehdr eh;
		Elf *e;
		int fd;

		if (!first_exec_map(&mp, i) || !strcmp(base_name(mp.m[i].path), USFT_PRELOAD_NAME))
			continue;
		target_path(pid, mp.m[i].path, p, sizeof(p));
		if (usft_read_sites(p, &addrs, &ns) || !ns) {
			free(addrs);
			continue;
		}
		qsort(addrs, ns, sizeof(*addrs), cmp_ulong);
		fd = open(p, O_RDONLY | O_CLOEXEC);
		e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
		if (e && gelf_getehdr(e, &eh) && !elf_getphdrnum(e, &nph)) {
			bias = eh.e_type == ET_DYN ? map_base(&mp, mp.m[i].path) : 0;
			/* each loaded segment: the sites it holds, read at once */
			for (size_t h = 0; h < nph; h++) {
				struct seg_sites g = { .memfd = memfd, .bias = bias };
				GElf_Phdr ph;
				size_t a = 0, b;

				if (!gelf_getphdr(e, (int)h, &ph) || ph.p_type != PT_LOAD ||
				    ph.p_filesz < (unsigned long)len)
					continue;
				while (a < ns && addrs[a] < ph.p_vaddr)
					a++;
				for (b = a; b < ns && addrs[b] + len <= ph.p_vaddr + ph.p_filesz; b++)
					;
				if (b == a)
					continue;
				g.addr = addrs + a;
				g.n = b - a;
				g.lo = addrs[a];
				g.len = addrs[b - 1] + len - g.lo;
				n += segment_sites(&g, fd, g.lo - ph.p_vaddr + ph.p_offset, fn, arg,
						   failed);
			}
		}
		if (e)
			elf_end(e);
		if (fd >= 0)
			close(fd);
		free(addrs);
	}
	free(mp.m);
	return n;
}

static int restore_sites(struct usft_target *tg, struct inject_result *res);

struct fix_ctx {
	struct stopped *s;
	bool restore;
};

static int fix_site(unsigned long addr, const unsigned char *file, unsigned char *cur, void *arg)
{
	struct fix_ctx *c = arg;
	unsigned char nop[16];
	int len = inject_arch_site_nop(file, nop);

	if (!len)
		return 0;
	if (c->restore) {
		/* only a site that is the disabled NOP again gets the compiler's bytes */
		if (memcmp(cur, nop, len))
			return 0;
		memcpy(cur, file, len);
		return 1;
	}
	if (memcmp(cur, file, len))
		return 0;	/* not the compiler's bytes any more: the runtime's now */
	memcpy(cur, nop, len);
	/* a thread between the old single-byte NOPs resumes after the new one */
	for (int i = 0; i < c->s->n; i++) {
		struct thread *t = &c->s->t[i];
		unsigned long pc = inject_arch_pc(t->regs);

		if (t->stopped && !t->gone && pc > addr && pc < addr + len) {
			inject_arch_set_pc(t->regs, addr + len);
			inject_arch_restore(t->tid, t->regs);
		}
	}
	return 1;
}

static int open_mem(pid_t pid)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/mem", (int)pid);
	return open(p, O_RDWR | O_CLOEXEC);
}

/* ---- the call ------------------------------------------------------------------------- */

/*
 * A fault of the thread running our call at a pc that no executable mapping
 * holds: the call itself jumped into nothing (a stale address), not code of
 * the program's; passing it on would kill the process.
 */
static bool call_went_astray(pid_t pid, pid_t tid, int st, struct inject_regs *now)
{
	struct maps mp;
	unsigned long pc;
	bool astray = true;
	int sig = WIFSTOPPED(st) && !(st >> 16) ? WSTOPSIG(st) : 0;

	if ((sig != SIGSEGV && sig != SIGBUS && sig != SIGILL) || inject_arch_save(tid, now) ||
	    read_maps(pid, &mp))
		return false;
	pc = inject_arch_pc(now);
	for (size_t i = 0; i < mp.n; i++)
		if (pc >= mp.m[i].lo && pc < mp.m[i].hi && mp.m[i].perm[2] == 'x')
			astray = false;
	free(mp.m);
	return astray;
}

/*
 * @t calls fn(args): Return: 0 with the result in *@ret, or an exit code.
 * Signals that arrive for @t meanwhile are delivered (their handlers run on
 * top of the call, as on top of any code); a stop for anything else is
 * answered; the call's return traps at pc 0.
 */
static int remote_call(struct stopped *s, struct thread *t, unsigned long fn,
		       const unsigned long *args, int nargs, unsigned long sp, unsigned long *ret,
		       struct inject_result *res)
{
	struct inject_regs *call = calloc(1, inject_arch_regs_size()), *now;
	long deadline = now_ms() + CALL_TIMEOUT_MS;
	int st, r;

	now = calloc(1, inject_arch_regs_size());
	if (!call || !now || inject_arch_call_regs(t->tid, t->regs, call, fn, args, nargs, sp) ||
	    inject_arch_set_call(t->tid, call) || ptrace(PTRACE_CONT, t->tid, NULL, NULL)) {
		if (errno == ESRCH)
			/* killed by another thread's exec or exit_group */
			fail(res, USFT_EXIT_GONE, "thread %d of process %d went away during the "
			     "attach (the process exited or called exec): try again", (int)t->tid,
			     (int)s->pid);
		else
			fail(res, USFT_EXIT_FAIL, "cannot set up the call in thread %d: %s",
			     (int)t->tid, strerror(errno));
		free(call);
		free(now);
		return res->code;
	}
	for (;;) {
		r = wait_stop(t->tid, &st, deadline);
		if (r == -ETIMEDOUT) {
			fail(res, USFT_EXIT_FAIL, "the loader call in thread %d did not return within "
			     "%d s (process %d may be stuck: a lock held by a stopped thread?)",
			     (int)t->tid, CALL_TIMEOUT_MS / 1000, (int)s->pid);
			break;
		}
		if (r || WIFEXITED(st) || WIFSIGNALED(st)) {
			t->gone = true;
			fail(res, USFT_EXIT_GONE, "process %d exited during the attach", (int)s->pid);
			break;
		}
		if ((st >> 8) == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
			t->gone = true;
			fail(res, USFT_EXIT_GONE, "process %d called exec during the attach", (int)s->pid);
			break;
		}
		if ((st >> 8) == (SIGTRAP | (PTRACE_EVENT_CLONE << 8))) {
			unsigned long nt = 0;

			/* the runtime started a thread: not ours to hold */
			ptrace(PTRACE_GETEVENTMSG, t->tid, NULL, &nt);
			if (nt) {
				int cst;

				if (!wait_stop((pid_t)nt, &cst, now_ms() + 1000))
					ptrace(PTRACE_DETACH, (pid_t)nt, NULL, NULL);
			}
			ptrace(PTRACE_CONT, t->tid, NULL, NULL);
			continue;
		}
		if (WIFSTOPPED(st) && WSTOPSIG(st) == SIGSEGV && !(st >> 16) &&
		    !inject_arch_save(t->tid, now) && inject_arch_returned(now, ret)) {
			free(call);
			free(now);
			return 0;
		}
		if (call_went_astray(s->pid, t->tid, st, now)) {
			/* never delivered: the registers go back as they were */
			fail(res, USFT_EXIT_FAIL, "the call in thread %d of process %d faulted "
			     "(signal %d at %#lx, outside any code): nothing was loaded, the thread "
			     "goes on where it was", (int)t->tid, (int)s->pid, WSTOPSIG(st),
			     inject_arch_pc(now));
			break;
		}
		if (is_event_stop(st))
			ptrace(PTRACE_CONT, t->tid, NULL, NULL);
		else
			resume(t->tid, st);
	}
	free(call);
	free(now);
	return res->code;
}

/* write @str below @sp in the target; Return: the new stack pointer or 0 */
static unsigned long push_string(int memfd, unsigned long sp, const char *str)
{
	size_t len = strlen(str) + 1;

	sp = (sp - len) & ~15UL;
	if (pwrite(memfd, str, len, (off_t)sp) != (ssize_t)len)
		return 0;
	return sp;
}

/*
 * With every thread stopped: is the image the one the probe saw?  An exec
 * between the probe and the stop (same pid) maps a new libc elsewhere, so
 * an address computed from the probe would send the call into nothing.
 * Also refreshes has_runtime.  Return: 0, or USFT_EXIT_GONE.
 */
static int recheck_image(struct usft_target *tg, struct inject_result *res)
{
	struct maps mp;
	bool libc_same = false;

	if (read_maps(tg->pid, &mp)) {
		fail(res, USFT_EXIT_GONE, "process %d exited during the attach", (int)tg->pid);
		return res->code;
	}
	tg->has_runtime = false;
	for (size_t i = 0; i < mp.n; i++) {
		if (!strcmp(mp.m[i].path, tg->libc) && map_base(&mp, mp.m[i].path) == tg->libc_base)
			libc_same = true;
		if (!strcmp(base_name(mp.m[i].path), USFT_PRELOAD_NAME))
			tg->has_runtime = true;
	}
	free(mp.m);
	if (!libc_same)
		fail(res, USFT_EXIT_GONE, "process %d called exec during the attach (its libc "
		     "moved): try again", (int)tg->pid);
	return res->code;
}

bool usft_target_execd(const struct usft_target *tg)
{
	struct usft_target t = *tg;
	struct inject_result res;

	return recheck_image(&t, &res) != 0;
}

int usft_inject(struct usft_target *tg, const char *lib, struct inject_result *res)
{
	struct stopped s = { .pid = tg->pid };
	struct thread *t = NULL;
	struct fix_ctx fix = { .s = &s };
	unsigned long dlopen_fn, start_fn = 0, sp, ret = 0, args[2], failed = 0;
	bool libc_dlopen = false;
	struct maps mp = { 0 };
	int memfd = -1, code;

	memset(res, 0, sizeof(*res));
	s.t = calloc(MAX_THREADS, sizeof(*s.t));
	if (!s.t) {
		fail(res, USFT_EXIT_FAIL, "out of memory");
		return res->code;
	}
	dlopen_fn = target_sym(tg->pid, tg->libc, tg->libc_base, "dlopen");
	if (!dlopen_fn) {
		/* before glibc 2.34 dlopen() lives in libdl; libc has its own entry */
		dlopen_fn = target_sym(tg->pid, tg->libc, tg->libc_base, "__libc_dlopen_mode");
		libc_dlopen = true;
	}
	if (!dlopen_fn) {
		fail(res, USFT_EXIT_STATIC, "no dlopen in %s of process %d", tg->libc, (int)tg->pid);
		goto out;
	}
	usft_attach_step("dlopen address");
	code = stop_all(&s, res);
	usft_attach_step("threads stopped");
	if (!code)
		code = recheck_image(tg, res);
	if (code)
		goto out;
	/* from here on new threads (the runtime's among them) are not ours to stop */
	for (int i = 0; i < s.n; i++)
		if (s.t[i].stopped && !s.t[i].gone)
			ptrace(PTRACE_SETOPTIONS, s.t[i].tid, NULL, (void *)(long)PTRACE_O_TRACEEXEC);
	memfd = open_mem(tg->pid);
	if (memfd < 0) {
		fail(res, USFT_EXIT_PERM, "cannot open /proc/%d/mem: %s", (int)tg->pid, strerror(errno));
		goto out;
	}
	/* (3) with every thread stopped */
	for_each_site(tg->pid, memfd, fix_site, &fix, &failed);
	usft_attach_step("sites prepared");
	if (failed) {
		fail(res, USFT_EXIT_FAIL, "%lu site(s) of process %d could not be prepared",
		     failed, (int)tg->pid);
		goto out;
	}
	/* (4) a thread at a safe point; the others go on */
	for (int round = 0; round < 50 && !t; round++) {
		free(mp.m);
		read_maps(tg->pid, &mp);
		t = choose(&s, &mp, tg);
		if (t)
			break;
		/* every thread inside libc or a library: let them run a little */
		for (int i = 0; i < s.n; i++)
			if (s.t[i].stopped && !s.t[i].gone) {
				ptrace(PTRACE_CONT, s.t[i].tid, NULL, NULL);
				s.t[i].stopped = false;
			}
		usleep(2000);
		for (int i = 0; i < s.n; i++)
			if (!s.t[i].gone)
				ptrace(PTRACE_INTERRUPT, s.t[i].tid, NULL, NULL);
		for (int i = 0; i < s.n; i++) {
			struct thread *x = &s.t[i];
			int st;

			while (!x->gone && !x->stopped) {
				if (wait_stop(x->tid, &st, now_ms() + 2000) || WIFEXITED(st) ||
				    WIFSIGNALED(st)) {
					x->gone = true;
				} else if (is_event_stop(st)) {
					x->stopped = !inject_arch_save(x->tid, x->regs);
				} else {
					resume(x->tid, st);
					ptrace(PTRACE_INTERRUPT, x->tid, NULL, NULL);
				}
			}
		}
	}
	if (!t) {
		fail(res, USFT_EXIT_FAIL, "no thread of process %d reached a point where it can "
		     "load the runtime (each blocks SIGSEGV, or runs inside libc): nothing was "
		     "loaded", (int)tg->pid);
		goto out;
	}
	/* below the red zone and anything of the thread's; written while every
	 * thread is stopped (no exec can replace the stack under the write) */
	sp = inject_arch_sp(t->regs) - 512;
	if (!tg->has_runtime) {
		sp = push_string(memfd, sp, lib);
		args[0] = sp;
		args[1] = 2 /* RTLD_NOW */ | (libc_dlopen ? 0x80000000UL : 0);
		sp -= 256;
		if (!args[0]) {
			fail(res, USFT_EXIT_FAIL, "cannot write to the stack of thread %d", (int)t->tid);
			goto out_restore;
		}
	}
	usft_attach_step("thread chosen");
	for (int i = 0; i < s.n; i++)
		if (&s.t[i] != t)
			release(&s.t[i]);
	usft_attach_step("others released");
	if (!tg->has_runtime) {
		code = remote_call(&s, t, dlopen_fn, args, 2, sp, &ret, res);
		usft_attach_step("dlopen() in the process");
		if (code)
			goto out_restore;
		if (!ret) {
			fail(res, USFT_EXIT_FAIL, "dlopen(\"%s\") failed in process %d (is the library "
			     "readable there? a static TLS block too small?)", lib, (int)tg->pid);
			goto out_restore;
		}
	}
	free(mp.m);
	read_maps(tg->pid, &mp);
	for (size_t i = 0; i < mp.n && !start_fn; i++)
		if (!strcmp(base_name(mp.m[i].path), USFT_PRELOAD_NAME) && mp.m[i].off == 0)
			start_fn = target_sym(tg->pid, mp.m[i].path, mp.m[i].lo, "usft_attach_start");
	if (!start_fn) {
		fail(res, USFT_EXIT_FAIL, "usft_attach_start not found in process %d", (int)tg->pid);
		goto out_restore;
	}
	usft_attach_step("usft_attach_start address");
	code = remote_call(&s, t, start_fn, NULL, 0, sp, &ret, res);
	usft_attach_step("usft_attach_start()");
	if (!code && (long)ret < 0)
		fail(res, USFT_EXIT_FAIL, "the control socket of process %d did not start: %s",
		     (int)tg->pid, strerror((int)-(long)ret));
out_restore:
	/* (5) exactly as it was; at this signal-delivery stop, so that the
	 * kernel restarts the system call it was in */
	if (!t->gone)
		inject_arch_restore(t->tid, t->regs);
out:
	release_all(&s);
	usft_attach_step("released");
	if (memfd >= 0)
		close(memfd);
	for (int i = 0; i < s.n; i++)
		free(s.t[i].regs);
	free(s.t);
	free(mp.m);
	if (res->code && res->code != USFT_EXIT_GONE) {
		/* a failure because it is dying (SIGKILL takes a moment): say so */
		long until = now_ms() + 200;

		while (!usft_proc_gone(tg->pid) && now_ms() < until)
			usleep(1000);
		if (usft_proc_gone(tg->pid))
			fail(res, USFT_EXIT_GONE, "process %d exited during the attach", (int)tg->pid);
	}
	return res->code;
}

/* a DT_NEEDED of @path names libusft */
static bool needs_libusft(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf_Scn *scn = NULL;
	bool found = false;
	Elf *e;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && !found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && !found; i++) {
			GElf_Dyn dyn;
			const char *n;

			if (gelf_getdyn(d, (int)i, &dyn) && dyn.d_tag == DT_NEEDED &&
			    (n = elf_strptr(e, sh.sh_link, dyn.d_un.d_val)))
				found = !strncmp(n, "libusft.so", 10);
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found;
}

/* LD_PRELOAD of the process's environment names the shim */
static bool preloaded(pid_t pid)
{
	char path[64], buf[65536];
	bool found = false;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	for (char *p = buf; p < buf + n && !found; p += strlen(p) + 1)
		found = !strncmp(p, "LD_PRELOAD=", 11) && strstr(p, USFT_PRELOAD_NAME);
	return found;
}

int usft_restore_sites(struct usft_target *tg, struct inject_result *res)
{
	char exe[PATH_MAX + 32];

	memset(res, 0, sizeof(*res));
	target_path(tg->pid, tg->exe, exe, sizeof(exe));
	/* its own runtime prepared the sites and relies on them: leave them */
	if (needs_libusft(exe) || preloaded(tg->pid))
		return 0;
	return restore_sites(tg, res);
}

static int restore_sites(struct usft_target *tg, struct inject_result *res)
{
	struct stopped s = { .pid = tg->pid };
	struct fix_ctx fix = { .s = &s, .restore = true };
	unsigned long failed = 0;
	int memfd, code;

	memset(res, 0, sizeof(*res));
	s.t = calloc(MAX_THREADS, sizeof(*s.t));
	if (!s.t)
		return USFT_EXIT_FAIL;
	code = stop_all(&s, res);
	usft_attach_step("threads stopped");
	if (!code) {
		memfd = open_mem(tg->pid);
		if (memfd >= 0) {
			for_each_site(tg->pid, memfd, fix_site, &fix, &failed);
			close(memfd);
		}
		usft_attach_step("sites restored");
		if (failed)
			fail(res, USFT_EXIT_FAIL, "%lu site(s) of process %d could not be restored",
			     failed, (int)tg->pid);
	}
	release_all(&s);
	usft_attach_step("released");
	for (int i = 0; i < s.n; i++)
		free(s.t[i].regs);
	free(s.t);
	return res->code;
}

