// SPDX-License-Identifier: MIT
/*
 * main.c - boot: set up the caches, the run queues and init, then start
 * one thread per CPU (named cpuN; with --pin, bound to CPU N as the
 * kernel's per-CPU threads are) and wait for SIGINT/SIGTERM or --seconds.
 *
 *   toykernel [--cpus N] [--hz HZ] [--seconds S] [--ticks T] [--pin] [--console]
 *
 * --ticks T stops once every CPU has taken T ticks (however long that takes
 * on a loaded machine); --seconds S after S seconds.
 *
 * Run it under usft and mount its tracefs:
 *
 *   usft record -p nop -- toykernel &      or: usft attach $(pidof toykernel)
 *   usft mount $(pidof toykernel) /tmp/tracing
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "toykernel.h"

/* any thread may run it (a process-directed signal): main waits on this */
static sem_t stop_sem;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&toy_stopping, true);
	sem_post(&stop_sem);
}

static bool pin;

static void *cpu_thread(void *arg)
{
	int cpu = (int)(long)arg;
	char name[16];
	cpu_set_t set;

	snprintf(name, sizeof(name), "cpu%d", cpu);
	pthread_setname_np(pthread_self(), name);
	/*
	 * Not by default: on a machine shared with other work, a thread bound
	 * to a busy CPU can wait for tens of milliseconds, and a trace window
	 * would miss that toy CPU entirely.
	 */
	if (pin) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);	/* best effort */
	}
	cpu_startup_entry(cpu);
	return NULL;
}

/* init/main.c: the caches, the run queues, then init (pid 1) */
__toy static void start_kernel(int ncpus)
{
	kmem_cache_init();
	vfs_init();
	fork_init();
	sched_init(ncpus);
	init_task_start();
}

static void usage(FILE *f)
{
	fprintf(f, "usage: toykernel [--cpus N] [--hz HZ] [--seconds S] [--ticks T] [--pin] [--console]\n"
		   "  a toy kernel to trace: CPU threads run a scheduler, system calls,\n"
		   "  a slab allocator, softirqs and RCU under kernel function names\n");
}

int main(int argc, char **argv)
{
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	double seconds = 0;
	unsigned long ticks = 0;
	pthread_t th[TOY_MAX_CPUS];
	struct sigaction sa = { .sa_handler = on_signal };

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--cpus") && i + 1 < argc)
			ncpus = atol(argv[++i]);
		else if (!strcmp(argv[i], "--hz") && i + 1 < argc)
			toy_hz = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--ticks") && i + 1 < argc)
			ticks = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--pin"))
			pin = true;
		else if (!strcmp(argv[i], "--console"))
			toy_console = true;
		else {
			usage(strcmp(argv[i], "--help") ? stderr : stdout);
			return strcmp(argv[i], "--help") ? 2 : 0;
		}
	}
	if (ncpus < 1 || ncpus > TOY_MAX_CPUS || toy_hz < 1 || toy_hz > 10000) {
		fprintf(stderr, "toykernel: --cpus takes 1..%d, --hz 1..10000\n", TOY_MAX_CPUS);
		return 2;
	}
	sem_init(&stop_sem, 0, 0);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	start_kernel((int)ncpus);
	printf("toykernel: pid %d, %ld cpus, HZ=%d\n", getpid(), ncpus, toy_hz);
	fflush(stdout);

	for (long cpu = 0; cpu < ncpus; cpu++)
		pthread_create(&th[cpu], NULL, cpu_thread, (void *)cpu);
	if (seconds > 0) {
		struct timespec ts = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };

		while (nanosleep(&ts, &ts) && !atomic_load(&toy_stopping))
			;
		atomic_store(&toy_stopping, true);
	}
	while (ticks && !atomic_load(&toy_stopping)) {
		struct timespec ts = { 0, 10000000 };
		long cpu = 0;

		while (cpu < ncpus && cpu_rq((int)cpu)->ticks >= ticks)
			cpu++;
		if (cpu == ncpus)
			atomic_store(&toy_stopping, true);
		nanosleep(&ts, NULL);
	}
	while (!atomic_load(&toy_stopping))
		sem_wait(&stop_sem);	/* not pause(): the handler may run on a cpu thread */
	for (long cpu = 0; cpu < ncpus; cpu++)
		pthread_join(th[cpu], NULL);
	for (long cpu = 0; cpu < ncpus; cpu++)
		printf("cpu%ld: %lu ticks, %lu context switches\n", cpu, cpu_rq((int)cpu)->ticks,
		       cpu_rq((int)cpu)->nr_switches);
	printf("forks: %lu\n", atomic_load(&total_forks));
	return 0;
}
