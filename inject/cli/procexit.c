// SPDX-License-Identifier: MIT
/*
 * inject/cli/procexit.c - how a process that is not our child ended
 * (`usft record -P`, docs/attach.md "Crash-safe recording").
 *
 * waitid() is the parent's alone.  What a process that holds a pidfd of
 * it can read instead:
 *   - while it is a zombie (its parent has not reaped it yet), the
 *     exit_code field of /proc/PID/stat (field 52, in wait(2)'s form),
 *     shown to whoever may ptrace-read the process;
 *   - once it is reaped, PIDFD_GET_INFO with PIDFD_INFO_EXIT on the pidfd
 *     (Linux 6.15: the kernel keeps the status in the pidfd's inode).
 * A process reaped at once by its parent on an older kernel: unknown.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "cli.h"
#include "inject.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* <linux/pidfd.h> of Linux 6.15 (older headers lack exit_code) */
struct usft_pidfd_info {
	uint64_t mask;
	uint64_t cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
	uint32_t coredump_mask, spare;
};
#define USFT_PIDFD_INFO_EXIT	(1ULL << 3)
#define USFT_PIDFD_GET_INFO	_IOWR(0xFF, 11, struct usft_pidfd_info)

int usft_pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* a zombie's exit code; Return: 1 known, 0 not a zombie (or not that process) */
static int zombie_code(pid_t pid, unsigned long long start, int *status)
{
	char buf[2048];
	const char *p = usft_proc_stat(pid, buf, sizeof(buf));
	unsigned long long st;
	int code, k;

	if (!p || p[1] != 'Z')
		return 0;
	/* fields 3..22 (state .. starttime), then 23..51 skipped, 52 exit_code */
	if (sscanf(p, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
		   "%*d %*d %llu%n", &st, &k) != 1 || (start && st != start))
		return 0;
	p += k;
	for (int f = 23; f < 52; f++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return 0;
	}
	if (sscanf(p, " %d", &code) != 1)
		return 0;
	*status = code;
	return 1;
}

bool usft_proc_exit_status(pid_t pid, int pidfd, unsigned long long start, int *status)
{
	struct pollfd pf = { pidfd, POLLIN, 0 };

	/* every thread gone (the pidfd polls readable then), 2 s at most */
	if (pidfd >= 0)
		poll(&pf, 1, 2000);
	/* between the two (the reap itself), or neither: a few tries, 0.2 s */
	for (int i = 0; i < 100; i++) {
		struct usft_pidfd_info info = { .mask = USFT_PIDFD_INFO_EXIT };

		if (zombie_code(pid, start, status))
			return true;
		if (pidfd >= 0 && !ioctl(pidfd, USFT_PIDFD_GET_INFO, &info) &&
		    (info.mask & USFT_PIDFD_INFO_EXIT)) {
			*status = info.exit_code;
			return true;
		}
		usleep(2000);
	}
	return false;	/* reaped by its parent on a kernel before 6.15 */
}
