/* SPDX-License-Identifier: MIT */
/* inject/cli/cli.h - shared between the `usft` subcommands. */
#ifndef USFT_CLI_H
#define USFT_CLI_H

#include <stddef.h>
#include <stdio.h>

/* exit codes (env(1)/timeout(1) conventions for record) */
enum {
	USFT_EXIT_OK = 0,
	USFT_EXIT_FAIL = 1,		/* report/list/stat: the work failed */
	USFT_EXIT_USAGE = 2,		/* bad command line */
	USFT_EXIT_RECORD_FAIL = 125,	/* record: usft itself failed */
	USFT_EXIT_NOEXEC = 126,		/* record: PROG found but not runnable */
	USFT_EXIT_NOTFOUND = 127,	/* record: PROG not found */
};

void usft_usage(FILE *out, const char *cmd);
int usft_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* PATH search like execvp(); Return: 0 or -1 with errno */
int usft_find_program(const char *prog, char *out, size_t len);
int usft_cmd_list(int argc, char **argv);

#endif
