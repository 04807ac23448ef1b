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
 *   WRITEKILL=tiny    at the third EVENTS chunk, writes only the first
 *                     20 bytes of its header (magic to tid: less than a
 *                     header, the pid readable), then dies (the salvage
 *                     must cut that piece off the tail before it appends)
 *   WRITEKILL=short   in a fork child only (not the process the
 *                     interposer was loaded in), at its first EVENTS chunk
 *                     of over 8 KiB: writes the header and the first 4 KiB
 *                     of the body (the short write a kill inside a write
 *                     leaves), waits until another process appended after
 *                     it (1 s at most), then dies (the partial chunk must
 *                     not hide what the others wrote after it)
 *   WRITEKILL=pause   in a fork child only, at its first EVENTS chunk of
 *                     over 8 KiB once the file $WRITEKILL_FLAG.arm exists:
 *                     makes $WRITEKILL_FLAG and writes the chunk in one
 *                     writev() that the kernel cannot finish until
 *                     $WRITEKILL_FLAG is gone (userfaultfd, below), then
 *                     makes $WRITEKILL_FLAG.done (the chunk's size and
 *                     first event word, in decimal): a live process's chunk
 *                     partly in the file, as the kernel shows it while it
 *                     copies, while another process's rings are salvaged
 *
 * Only writev() calls made from usft's libraries count; the chunk header
 * is read as the trace format defines it (runtime/tracers/trace_format.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
static int paused;

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

/*
 * WRITEKILL=pause: one writev() whose source past the header and 4 KiB of
 * the body is a userfaultfd region.  The kernel copies the chunk into the
 * file a page at a time under the inode lock and blocks on the missing
 * page: the file shows part of the chunk, and every other write to it
 * waits.  A thread of ours fills the pages once $WRITEKILL_FLAG is gone.
 */
struct pause_ctx {
	int uffd;
	char *region, *data;
	size_t len;
	const char *flag;
};

static void *pause_filler(void *arg)
{
	struct pause_ctx *c = arg;
	struct uffd_msg msg;

	while (read(c->uffd, &msg, sizeof(msg)) == (ssize_t)sizeof(msg)) {
		uintptr_t page = (uintptr_t)msg.arg.pagefault.address & ~(uintptr_t)4095;
		struct uffdio_copy cp = { .dst = page, .src = (uintptr_t)c->data +
							      (page - (uintptr_t)c->region),
					  .len = 4096 };

		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		for (int i = 0; i < 10000 && !access(c->flag, F_OK); i++) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
		}
		ioctl(c->uffd, UFFDIO_COPY, &cp);
	}
	return NULL;
}

static ssize_t paused_write(int fd, const struct iovec *iov, int n,
			    ssize_t (*real)(int, const struct iovec *, int))
{
	static struct pause_ctx c;
	const char *flag = getenv("WRITEKILL_FLAG");
	char arm[4096];
	struct iovec v[7];
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	size_t rest = 0, round;
	pthread_t t;
	ssize_t r;
	int k;

	if (!flag || n > 6 || n < 2 || iov[1].iov_len < 4096 ||
	    snprintf(arm, sizeof(arm), "%s.arm", flag) >= (int)sizeof(arm) || access(arm, F_OK))
		return real(fd, iov, n);
	paused = 1;
	rest = iov[1].iov_len - 4096;
	for (k = 2; k < n; k++)
		rest += iov[k].iov_len;
	round = (rest + 4095) & ~(size_t)4095;
	c.flag = flag;
	c.len = round;
	c.data = aligned_alloc(4096, round);
	c.uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	c.region = mmap(NULL, round, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg = (struct uffdio_register){ .range = { (uintptr_t)c.region, round },
					.mode = UFFDIO_REGISTER_MODE_MISSING };
	if (!rest || !c.data || c.uffd < 0 || c.region == MAP_FAILED ||
	    ioctl(c.uffd, UFFDIO_API, &api) || ioctl(c.uffd, UFFDIO_REGISTER, &reg) ||
	    pthread_create(&t, NULL, pause_filler, &c))
	{
		/* no userfaultfd here: an ordinary write, and the test is told */
		snprintf(arm, sizeof(arm), "%s.nouffd", flag);
		close(open(arm, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
		return real(fd, iov, n);
	}
	memcpy(c.data, (char *)iov[1].iov_base + 4096, iov[1].iov_len - 4096);
	for (k = 2, rest = iov[1].iov_len - 4096; k < n; k++) {
		memcpy(c.data + rest, iov[k].iov_base, iov[k].iov_len);
		rest += iov[k].iov_len;
	}
	v[0] = iov[0];
	v[1] = (struct iovec){ iov[1].iov_base, 4096 };
	v[2] = (struct iovec){ c.region, rest };
	close(open(flag, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	r = real(fd, v, 3);
	/* which chunk it was: its size and first event word, for the test */
	snprintf(arm, sizeof(arm), "%s.done", flag);
	k = open(arm, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (k >= 0) {
		char line[64];
		int len = snprintf(line, sizeof(line), "%llu %llu\n",
				   (unsigned long long)((const struct hdr *)iov[0].iov_base)->size,
				   (unsigned long long)*(const uint64_t *)iov[1].iov_base);

		if (write(k, line, (size_t)len) != len)
			len = 0;
		close(k);
	}
	return r;
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
	if (!strcmp(mode, "pause") && getpid() != first_pid && h->size > 8192 && !paused)
		return paused_write(fd, iov, n, real);
	if (!strcmp(mode, "tiny") && nevents == 3) {
		if (write(fd, h, 20) == 20)
			kill(getpid(), SIGKILL);
	}
	if (!strcmp(mode, "before") && (same_as_last(h->tid, h->size) || nevents > 200))
		kill(getpid(), SIGKILL);
	r = real(fd, iov, n);
	if (!strcmp(mode, "after") && nevents == 3)
		kill(getpid(), SIGKILL);
	return r;
}
