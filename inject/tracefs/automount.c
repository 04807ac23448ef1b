// SPDX-License-Identifier: MIT
/*
 * inject/tracefs/automount.c - `usft record --mount DIR ...` and the
 * mount of `usft record -P PID --mount DIR`: the tracefs of the recorded
 * process (mount.c) served by a child of this usft for as long as the
 * recording lasts.
 *
 * The child waits for the process's control socket (the preload runtime
 * opens it while the program starts), mounts, and tells the parent through
 * a pipe; the parent returns only then, so a script that started usft
 * record sees the files once it printed "mounted".  At the end the parent
 * sends SIGTERM: the server's user-unmount path puts every trace array back
 * to nop, removes the instances and unmounts, and the parent reaps it (it
 * is never seen by the record's wait for leftover processes).  If the
 * process exits, exec's or is detached first, the server unmounts by
 * itself (mount.c's watcher).  If this usft dies, PR_SET_PDEATHSIG sends
 * the server the same SIGTERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* in the child: the control socket of @pid once it answers; Return: fd or -errno */
static int await_control(pid_t pid, long wait_ms)
{
	long until = now_ms() + wait_ms;
	int fd;

	for (;;) {
		fd = usft_ctl_connect(pid);
		if (fd >= 0 || fd == -EACCES || fd == -EPERM || kill(pid, 0) || now_ms() >= until)
			return fd;
		usleep(2000);
	}
}

/*
 * In the child: mount and serve; then wait for fusermount3's auto_unmount
 * helper, our child, which leaves once the last copy of its socket is
 * closed: otherwise it would outlive us and, orphaned, be one of the
 * record's "processes left running".
 */
static int serve(int fd, pid_t pid, const char *dir, int ready_fd)
{
	int r = usft_mount_tracefs(fd, pid, dir, true, ready_fd);
	long until = now_ms() + 5000;

	for (int i = 3; i < 65536; i++)
		close(i);
	while (now_ms() < until) {
		pid_t p = waitpid(-1, NULL, WNOHANG);

		if (p < 0 && errno != EINTR)
			break;		/* ECHILD: none left */
		if (p == 0)
			usleep(2000);
	}
	return r;
}

pid_t usft_tracefs_automount(const char *cmd, pid_t pid, const char *dir, long wait_ms, bool quiet)
{
	int rp[2], st;
	ssize_t n;
	pid_t srv;
	char c;

	if (pipe2(rp, O_CLOEXEC)) {
		fprintf(stderr, "usft %s: --mount: pipe: %s\n", cmd, strerror(errno));
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	srv = fork();
	if (srv < 0) {
		fprintf(stderr, "usft %s: --mount: fork: %s\n", cmd, strerror(errno));
		close(rp[0]);
		close(rp[1]);
		return -1;
	}
	if (srv == 0) {
		int fd;

		close(rp[0]);
		/* ^C is the program's (record PROG) or stops the recording (-P), which
		 * then unmounts: the server itself takes only SIGTERM / SIGHUP */
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
		fd = await_control(pid, wait_ms);
		if (fd < 0) {
			fprintf(stderr, "usft %s: --mount %s: process %d's control socket %s (%s): "
				"no tracefs; is USFT_CONTROL=0 set?\n", cmd, dir, (int)pid,
				kill(pid, 0) ? "went with it" : "does not answer", strerror(-fd));
			_exit(USFT_EXIT_FAIL);
		}
		_exit(serve(fd, pid, dir, rp[1]));
	}
	close(rp[1]);
	do {
		n = read(rp[0], &c, 1);
	} while (n < 0 && errno == EINTR);
	close(rp[0]);
	if (n != 1) {
		/* it said why on stderr */
		while (waitpid(srv, &st, 0) < 0 && errno == EINTR)
			;
		return -1;
	}
	if (!quiet)
		fprintf(stderr, "usft: the tracefs of process %d is mounted on %s (fusermount3 -u %s "
			"unmounts it; it goes when the recording ends)\n", (int)pid, dir, dir);
	return srv;
}

void usft_tracefs_autounmount(pid_t server)
{
	int st;

	if (server <= 0)
		return;
	kill(server, SIGTERM);
	while (waitpid(server, &st, 0) < 0 && errno == EINTR)
		;
}
