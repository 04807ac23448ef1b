// SPDX-License-Identifier: MIT
/*
 * An LD_PRELOAD interposer for the e2e tests (not a tracee): the process
 * dies by SIGKILL inside the trace writer's writev() of an EVENTS chunk,
 * at a chosen point, so the crash-safe salvage (inject/cli/salvage.c) is
 * tested where it must decide whether the drain that was under way
 * reached the file:
 *
 *   WRITEKILL=before  before the write of the first EVENTS chunk of a
 *                     thread whose size equals that of the thread's
 *                     previous one (a steady caller writes many chunks of
 *                     one size: the drain must not be taken as written);
 *                     after 200 chunks without one, before the next
 *   WRITEKILL=after   just after the third EVENTS chunk is written (the
 *                     drain must not be appended a second time)
 *   WRITEKILL=short   in a fork child only (not the process the
 *                     interposer was loaded in), at its first EVENTS chunk
 *                     of over 8 KiB: writes the header and the first 4 KiB
 *                     of the body (the short write a kill inside a write
 *                     leaves), waits until another process appended after
 *                     it (1 s at most), then dies (the partial chunk must
 *                     not hide what the others wrote after it)
 *
 * Only writev() calls made from usft's libraries count; the chunk header
 * is read as the trace format defines it (runtime/tracers/trace_format.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

struct hdr {			/* struct usft_chunk_hdr */
	char magic[4];
	uint16_t version, type;
	uint32_t pid, tid;
	uint64_t size, arg;
};

#define EVENTS 2
#define SEEN 256

static struct { uint32_t tid; uint64_t size; } seen[SEEN];
static unsigned int nseen, nevents;
static pid_t first_pid;

__attribute__((constructor)) static void note_pid(void)
{
	first_pid = getpid();
}

/* the header and 4 KiB of the body, then death once the file grew past it */
static void short_write(int fd, const struct iovec *iov, int n,
			ssize_t (*real)(int, const struct iovec *, int))
{
	struct iovec v[2] = { iov[0], { NULL, 4096 } };
	struct stat st;

	if (n < 2 || iov[1].iov_len < 4096)
		return;
	v[1].iov_base = iov[1].iov_base;
	if (real(fd, v, 2) != (ssize_t)(iov[0].iov_len + 4096) || fstat(fd, &st))
		return;
	for (int i = 0; i < 1000; i++) {
		struct stat now;
		struct timespec ms = { 0, 1000000 };

		if (!fstat(fd, &now) && now.st_size > st.st_size)
			break;
		nanosleep(&ms, NULL);
	}
	kill(getpid(), SIGKILL);
}

static int from_libusft(const void *pc)
{
	Dl_info info;

	return dladdr(pc, &info) && info.dli_fname && strstr(info.dli_fname, "/libusft");
}

/* the size of @tid's previous EVENTS chunk was @size (and is now) */
static int same_as_last(uint32_t tid, uint64_t size)
{
	unsigned int i;
	int same;

	for (i = 0; i < nseen && seen[i].tid != tid; i++)
		;
	if (i == nseen) {
		if (nseen == SEEN)
			return 0;
		nseen++;
		seen[i].tid = tid;
		seen[i].size = 0;
	}
	same = seen[i].size == size;
	seen[i].size = size;
	return same;
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	static ssize_t (*real)(int, const struct iovec *, int);
	const char *mode = getenv("WRITEKILL");
	const struct hdr *h = n > 0 && iov[0].iov_len == sizeof(*h) ? iov[0].iov_base : NULL;
	ssize_t r;

	if (!real)
		real = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
	if (!mode || !h || memcmp(h->magic, "USFT", 4) || h->type != EVENTS ||
	    !from_libusft(__builtin_return_address(0)))
		return real(fd, iov, n);
	nevents++;
	if (!strcmp(mode, "short") && getpid() != first_pid && h->size > 8192)
		short_write(fd, iov, n, real);
	if (!strcmp(mode, "before") && (same_as_last(h->tid, h->size) || nevents > 200))
		kill(getpid(), SIGKILL);
	r = real(fd, iov, n);
	if (!strcmp(mode, "after") && nevents == 3)
		kill(getpid(), SIGKILL);
	return r;
}
