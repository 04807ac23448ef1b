// SPDX-License-Identifier: MIT
/*
 * tracee-server: a server-like program for `usft record -P` / `usft attach`
 * (tests/e2e/attach.py, make demo).  Until SIGTERM (or SIGINT):
 *   - N worker threads compute checksums of known value in a loop;
 *   - one thread waits in accept(), one in poll() (on a pipe), one in
 *     nanosleep(), each counting every EINTR it sees;
 *   - one thread blocks every signal and computes (a traced function:
 *     usft must patch it without the INT3s that would kill that thread);
 *   - one thread sits inside a SIGUSR1 handler, computing and sleeping;
 * then prints "rounds=R bad=B eintr_poll=.. eintr_sleep=.. eintr_accept=.."
 * and exits 0 when every result was right and no call saw EINTR.
 *   tracee-server [WORKERS]    (default 3); writes "ready" to stdout.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static unsigned long rounds, bad, eintr_poll, eintr_sleep, eintr_accept;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) unsigned long mix(unsigned long x)
{
	x ^= x >> 13;
	x *= 0x9e3779b97f4a7c15UL;
	return x ^ (x >> 29);
}

__attribute__((noinline)) unsigned long checksum(unsigned long seed, int n)
{
	unsigned long s = seed;

	for (int i = 0; i < n; i++)
		s = mix(s + (unsigned long)i);
	return s;
}

__attribute__((noinline)) unsigned long fib(int n)
{
	return n < 2 ? (unsigned long)n : fib(n - 1) + fib(n - 2);
}

/* one unit of checkable work: the same answers every time */
__attribute__((noinline)) int work(void)
{
	static unsigned long want_sum;
	unsigned long sum = checksum(42, 200);

	if (!want_sum)
		__atomic_store_n(&want_sum, sum, __ATOMIC_RELAXED);
	return fib(15) == 610 && sum == __atomic_load_n(&want_sum, __ATOMIC_RELAXED);
}

static void count(int ok)
{
	pthread_mutex_lock(&lock);
	rounds++;
	bad += !ok;
	pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
	while (!stop)
		count(work());
	return arg;
}

/*
 * Run only by the thread that blocks every signal, SIGTRAP included: a
 * batch that changed its site with an INT3 would kill the process (the
 * kernel forces a blocked trap's default action), so usft writes such
 * batches with one atomic store per site (docs/reliability.md).  Aligned
 * so that its site lies in one 16-byte block in every build.
 */
__attribute__((noinline, aligned(16))) unsigned long blocked_sum(int n)
{
	unsigned long s = 0;

	for (int i = 0; i < n; i++)
		s = s * 31 + (unsigned long)i;
	return s;
}

/* not a constant: the calls must not be folded away */
static volatile int blocked_n = 1000;

static void *blocker(void *arg)
{
	unsigned long want = blocked_sum(blocked_n);
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	while (!stop) {
		count(blocked_sum(blocked_n) == want);
		usleep(100);
	}
	return arg;
}

static void *sleeper(void *arg)
{
	while (!stop) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		if (nanosleep(&ts, NULL) && errno == EINTR)
			__atomic_add_fetch(&eintr_sleep, 1, __ATOMIC_RELAXED);
	}
	return arg;
}

static int pipefd[2];

static void *poller(void *arg)
{
	while (!stop) {
		struct pollfd p = { pipefd[0], POLLIN, 0 };
		int r = poll(&p, 1, -1);

		if (r < 0 && errno == EINTR)
			__atomic_add_fetch(&eintr_poll, 1, __ATOMIC_RELAXED);
		if (r > 0) {
			char c;

			if (read(pipefd[0], &c, 1) == 1 && c == 'q')
				break;
		}
	}
	return arg;
}

static int lfd = -1;

static void *acceptor(void *arg)
{
	while (!stop) {
		int c = accept(lfd, NULL, NULL);

		if (c >= 0) {
			char q;

			if (read(c, &q, 1) == 1 && q == 'q') {
				close(c);
				break;
			}
			close(c);
		} else if (errno == EINTR) {
			__atomic_add_fetch(&eintr_accept, 1, __ATOMIC_RELAXED);
		}
	}
	return arg;
}

static void in_handler(int sig)
{
	/* stays in the handler until the end: computing and sleeping */
	while (!stop) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };

		count(work());
		nanosleep(&ts, NULL);
	}
	(void)sig;
}

static void *handler_thread(void *arg)
{
	struct sigaction sa = { .sa_handler = in_handler };

	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	return arg;
}

/*
 * A process-directed SIGTERM runs on_term() on any thread that does not
 * block it: the kernel's complete_signal() passes over the main thread
 * when a signal is already pending for it (the runtime's rendezvous, say).
 * So main waits on a semaphore any thread can post, not in pause(), which
 * only a handler run on main itself would end.
 */
static sem_t term_sem;

static void on_term(int sig)
{
	stop = 1;
	sem_post(&term_sem);
	(void)sig;
}

int main(int argc, char **argv)
{
	int nw = argc > 1 ? atoi(argv[1]) : 3;
	pthread_t t[64];
	struct sigaction sa = { .sa_handler = on_term };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int n = 0, c;

	if (nw < 1 || nw > 32)
		nw = 3;
	if (sem_init(&term_sem, 0, 0))
		return 2;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (pipe(pipefd))
		return 2;
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 4) ||
	    getsockname(lfd, (struct sockaddr *)&a, &al))
		return 2;
	for (int i = 0; i < nw; i++)
		pthread_create(&t[n++], NULL, worker, NULL);
	pthread_create(&t[n++], NULL, blocker, NULL);
	pthread_create(&t[n++], NULL, sleeper, NULL);
	pthread_create(&t[n++], NULL, poller, NULL);
	pthread_create(&t[n++], NULL, acceptor, NULL);
	pthread_create(&t[n++], NULL, handler_thread, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (!stop)
		sem_wait(&term_sem);	/* EINTR: look at stop again */
	/* wake the waiters */
	if (write(pipefd[1], "q", 1) != 1)
		return 2;
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c >= 0 && !connect(c, (struct sockaddr *)&a, sizeof(a)) && write(c, "q", 1) != 1)
		return 2;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("rounds=%lu bad=%lu eintr_poll=%lu eintr_sleep=%lu eintr_accept=%lu\n", rounds, bad,
	       eintr_poll, eintr_sleep, eintr_accept);
	return bad || eintr_poll || eintr_sleep || eintr_accept ? 1 : 0;
}
