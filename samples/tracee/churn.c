// SPDX-License-Identifier: MIT
/*
 * tracee-churn: a process that keeps changing under an attach
 * (tests/e2e/attach.py churn): two worker threads with checkable results,
 * a thread that forks children (which compute and exit), a thread that
 * dlopens and dlcloses libm and, in turn, the two traced libraries of
 * tracee-reload (the second lands where the first was: a traced object
 * goes and another comes at its address), and every second the main
 * thread execs itself again (same pid) with the generation counted.
 *   tracee-churn [GEN [MS [LAST]]]   a new image every MS ms (default
 *   1000; 0: never; below 0: -MS ms, the main thread busy instead of
 *   asleep: a fast one execs while the runtime's rendezvous runs for the
 *   traced libraries, which must not kill the new image), the last one
 *   generation LAST (default: none), which stops by itself after MS;
 *   prints "ready GEN PID" per image; runs until
 *   SIGTERM, then prints "ok gen=G bad=B children=C loads=L" and exits 0
 *   when every result was right.  A child that fails exits 1 (counted bad).
 *   CHURN_EXEC=syscall execs with syscall(SYS_execve), CHURN_EXEC=dlsym
 *   through the execve() that dlsym() finds right before, CHURN_EXEC=mix
 *   with execl(), then those two, in turn by generation (default: execl()).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static unsigned long bad, children, loads;

__attribute__((noinline)) unsigned long churn_fib(int n)
{
	return n < 2 ? (unsigned long)n : churn_fib(n - 1) + churn_fib(n - 2);
}

__attribute__((noinline)) int churn_work(void)
{
	return churn_fib(12) == 144;
}

static void *worker(void *arg)
{
	while (!stop)
		if (!churn_work()) {
			fprintf(stderr, "worker: wrong result\n");
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		}
	return arg;
}

static void *forker(void *arg)
{
	while (!stop) {
		pid_t p = fork();
		int st;

		if (p == 0)
			_exit(churn_work() ? 0 : 1);
		if (p > 0 && waitpid(p, &st, 0) == p) {
			__atomic_add_fetch(&children, 1, __ATOMIC_RELAXED);
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				fprintf(stderr, "child %d: status %#x\n", (int)p, st);
				__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
			}
		}
		usleep(2000);
	}
	return arg;
}

/* dlopen @lib, call @entry(1), which must return @want, dlclose */
static void load_call(const char *lib, const char *entry, int want)
{
	void *h = dlopen(lib, RTLD_NOW);
	int (*fn)(int) = h ? (int (*)(int))dlsym(h, entry) : NULL;

	if (!fn || fn(1) != want) {
		fprintf(stderr, "dlopen %s: %s\n", lib, h ? "wrong result" : dlerror());
		__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
	}
	if (h)
		dlclose(h);
	__atomic_add_fetch(&loads, 1, __ATOMIC_RELAXED);
}

static void *loader(void *arg)
{
	while (!stop) {
		void *h = dlopen("libm.so.6", RTLD_NOW);
		double (*fn)(double) = h ? (double (*)(double))dlsym(h, "sqrt") : NULL;

		if (!fn || fn(16.0) != 4.0) {
			fprintf(stderr, "dlopen libm: %s\n", h ? "no sqrt" : dlerror());
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		}
		if (h)
			dlclose(h);
		load_call("libtracee-reload-a.so", "a_entry", 11);
		load_call("libtracee-reload-b.so", "b_entry", 21);
		usleep(1000);
	}
	return arg;
}

static void on_term(int sig)
{
	stop = sig;
}

int main(int argc, char **argv)
{
	int gen = argc > 1 ? atoi(argv[1]) : 0;
	int ms = argc > 2 ? atoi(argv[2]) : 1000;
	int last = argc > 3 ? atoi(argv[3]) : -1;
	struct sigaction sa = { .sa_handler = on_term };
	struct timespec ts = { 0, 1000 * 1000 };
	pthread_t t[6];
	int nt = ms < 0 ? 6 : 4;
	char next[16];

	sigaction(SIGTERM, &sa, NULL);
	printf("ready %d %d\n", gen, (int)getpid());
	fflush(stdout);
	pthread_create(&t[0], NULL, worker, NULL);
	pthread_create(&t[1], NULL, worker, NULL);
	pthread_create(&t[2], NULL, forker, NULL);
	/* busy mode: more loads, more rendezvous */
	for (int i = 3; i < nt; i++)
		pthread_create(&t[i], NULL, loader, NULL);
	/* a new image every MS ms, while the others run */
	if (ms < 0) {
		/* busy until the exec: the runtime's rendezvous finds this thread
		 * running (not asleep), and signals it, right up to the exec */
		struct timespec t0, now;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do
			clock_gettime(CLOCK_MONOTONIC, &now);
		while (!stop && (now.tv_sec - t0.tv_sec) * 1000 +
			(now.tv_nsec - t0.tv_nsec) / 1000000 < -ms);
	}
	for (int i = 0; ms >= 0 && (i < ms || ms == 0) && !stop; i++)
		nanosleep(&ts, NULL);
	if (!stop && !bad && gen != last) {
		extern char **environ;
		const char *how = getenv("CHURN_EXEC");
		char *nargv[] = { argv[0], next, argc > 2 ? argv[2] : "1000",
				  argc > 3 ? argv[3] : NULL, NULL };

		snprintf(next, sizeof(next), "%d", gen + 1);
		if (how && !strcmp(how, "mix"))
			how = (const char *[]){ "execl", "syscall", "dlsym" }[gen % 3];
		if (how && !strcmp(how, "syscall")) {
			syscall(SYS_execve, "/proc/self/exe", nargv, environ);
		} else if (how && !strcmp(how, "dlsym")) {
			int (*ex)(const char *, char *const[], char *const[]) =
				(int (*)(const char *, char *const[], char *const[]))
				dlsym(RTLD_DEFAULT, "execve");

			if (ex)
				ex("/proc/self/exe", nargv, environ);
		} else {
			execl("/proc/self/exe", argv[0], next, argc > 2 ? argv[2] : "1000",
			      argc > 3 ? argv[3] : (char *)NULL, (char *)NULL);
		}
	}
	stop = 1;
	for (int i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	printf("ok gen=%d bad=%lu children=%lu loads=%lu\n", gen, bad, children, loads);
	return bad ? 1 : 0;
}
