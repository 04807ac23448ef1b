// SPDX-License-Identifier: MIT
/*
 * An LD_PRELOAD interposer for the e2e tests (not a tracee): every
 * pthread_create() called from usft's libraries (libusft.so, and
 * libusft-preload.so, where `usft record`'s writer and rings live) fails with EAGAIN (a thread limit, a
 * sandbox), so the traced process has no writer thread.  nanosleep() calls
 * and futex waits made by those libraries are counted: a producer waiting for a writer that does
 * not exist would sleep there.  At exit a process that refused a thread
 * appends "refused=N sleeps=M" to $NOTHREAD_OUT.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static unsigned long refused, sleeps;

static int from_libusft(const void *pc)
{
	Dl_info info;

	return dladdr(pc, &info) && info.dli_fname && strstr(info.dli_fname, "/libusft");
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

	if (from_libusft(__builtin_return_address(0)) || from_libusft((const void *)fn)) {
		__atomic_add_fetch(&refused, 1, __ATOMIC_RELAXED);
		return EAGAIN;
	}
	if (!real)
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			dlsym(RTLD_NEXT, "pthread_create");
	return real(t, attr, fn, arg);
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
	static int (*real)(const struct timespec *, struct timespec *);

	if (from_libusft(__builtin_return_address(0)))
		__atomic_add_fetch(&sleeps, 1, __ATOMIC_RELAXED);
	if (!real)
		real = (int (*)(const struct timespec *, struct timespec *))dlsym(RTLD_NEXT,
										  "nanosleep");
	return real(req, rem);
}

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_futex && from_libusft(__builtin_return_address(0)) &&
	    ((int)a[1] & FUTEX_CMD_MASK) == FUTEX_WAIT)
		__atomic_add_fetch(&sleeps, 1, __ATOMIC_RELAXED);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

__attribute__((destructor(101))) static void nothread_report(void)
{
	const char *path = getenv("NOTHREAD_OUT");
	char line[64];
	int fd, n;

	if (!path || !*path || !__atomic_load_n(&refused, __ATOMIC_RELAXED))
		return;		/* not a traced process */
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "refused=%lu sleeps=%lu\n",
		     __atomic_load_n(&refused, __ATOMIC_RELAXED),
		     __atomic_load_n(&sleeps, __ATOMIC_RELAXED));
	if (write(fd, line, (size_t)n) < 0)
		n = 0;
	close(fd);
}
