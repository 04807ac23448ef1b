// SPDX-License-Identifier: MIT
/*
 * Security: the runtime ignores USFT_OPTIONS (and USFT_LOG) in set-uid
 * programs (AT_SECURE), and trace files made by `usft record` and by the
 * preload are private (0600: traces hold arguments, paths, timings).
 * The set-uid case needs root (a copy of the helper owned by nobody, mode
 * 4755, run by root: effective uid != real uid, so AT_SECURE is set).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "test_common.h"

/* run @argv with exactly @envp; its stdout into @out; return the exit status */
static int run(char *const argv[], char *const envp[], char *out, size_t len)
{
	int fd[2], st;
	ssize_t n, got = 0;
	pid_t pid;

	cr_assert_eq(pipe(fd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		dup2(fd[1], 1);
		close(fd[0]);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(fd[1]);
	while (got < (ssize_t)len - 1 && (n = read(fd[0], out + got, len - 1 - got)) > 0)
		got += n;
	out[got] = 0;
	close(fd[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *const hostile_env[] = { "USFT_OPTIONS=per_callsite_ops=1,ops_trampolines=0",
				     "USFT_LOG=debug", NULL };

Test(security, usft_options_are_honoured_normally)
{
	char *const argv[] = { SECURE_HELPER, NULL };
	char out[256];

	cr_assert_eq(run(argv, hostile_env, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "per_callsite_ops=1 ops_trampolines=0"), "%s", out);
}

Test(security, usft_options_are_ignored_in_setuid_programs)
{
	char dir[] = "/tmp/usft-secure-XXXXXX", path[64], out[256], buf[65536];
	char *const argv[] = { path, NULL };
	int in, o, r;
	ssize_t n;

	if (geteuid() != 0)
		cr_skip_test("needs root to make a set-uid copy");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/helper", dir);
	in = open(SECURE_HELPER, O_RDONLY);
	o = open(path, O_WRONLY | O_CREAT | O_EXCL, 0755);
	cr_assert(in >= 0 && o >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(o, buf, (size_t)n), n);
	close(in);
	close(o);
	cr_assert_eq(chown(path, 65534, 65534), 0);
	cr_assert_eq(chmod(path, 04755), 0);

	r = run(argv, hostile_env, out, sizeof(out));
	unlink(path);
	rmdir(dir);
	if (r == 127 || strstr(out, "work=") == NULL)
		cr_skip_test("the set-uid copy cannot run here (status %d: nosuid, or "
			     "libusft not readable by nobody)", r);
	cr_assert_eq(r, 0, "%s", out);
	cr_assert(strstr(out, "per_callsite_ops=0 ops_trampolines=1"),
		  "USFT_OPTIONS was honoured in a set-uid program: %s", out);
}

static void expect_private(const char *path)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0, "%s was not created", path);
	cr_assert_eq(st.st_mode & 077, 0, "%s has mode %o: readable by others", path,
		     st.st_mode & 0777);
}

Test(security, trace_files_are_private)
{
	char dir[] = "/tmp/usft-trace-XXXXXX", cli_out[128], pre_out[128], pre_env[160], out[256];
	char *const rec[] = { USFT_CLI, "record", "-p", "function", "-o", cli_out, "--",
			      SECURE_HELPER, NULL };
	char *const env[] = { "PATH=/usr/bin:/bin", NULL };
	char *const direct[] = { SECURE_HELPER, NULL };
	char *const penv[] = { "LD_PRELOAD=" USFT_PRELOAD " " USFT_LIB, "USFT_TRACER=function",
			       pre_env, NULL };
	mode_t old = umask(022);	/* the usual umask: 0644 unless asked for less */

	cr_assert_not_null(mkdtemp(dir));
	snprintf(cli_out, sizeof(cli_out), "%s/cli.dat", dir);
	snprintf(pre_out, sizeof(pre_out), "%s/preload.dat", dir);
	snprintf(pre_env, sizeof(pre_env), "USFT_OUTPUT=%s", pre_out);
	cr_assert_eq(run(rec, env, out, sizeof(out)), 0, "usft record: %s", out);
	expect_private(cli_out);
	cr_assert_eq(run(direct, penv, out, sizeof(out)), 0, "preload: %s", out);
	expect_private(pre_out);
	umask(old);
	unlink(cli_out);
	unlink(pre_out);
	rmdir(dir);
}
