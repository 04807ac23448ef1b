// SPDX-License-Identifier: MIT
/*
 * core/log.c - pr_*() to a replaceable sink; default stderr at the level
 * named by USFT_LOG (err, warn, info, debug; warn by default).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"

static int usft_log_level = -1;

static void default_print(enum usft_log_level level, const char *fmt, va_list ap)
{
	vfprintf(stderr, fmt, ap);
}

static usft_print_fn_t usft_print = default_print;

static int log_level(void)
{
	int lvl = READ_ONCE(usft_log_level);
	const char *s;

	if (lvl >= 0)
		return lvl;
	lvl = USFT_LOG_WARN;
	s = secure_getenv("USFT_LOG");	/* ignored in set-uid programs */
	if (s) {
		if (!strcmp(s, "err"))
			lvl = USFT_LOG_ERR;
		else if (!strcmp(s, "info"))
			lvl = USFT_LOG_INFO;
		else if (!strcmp(s, "debug"))
			lvl = USFT_LOG_DEBUG;
	}
	WRITE_ONCE(usft_log_level, lvl);
	return lvl;
}

void usft_log(enum usft_log_level level, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if ((int)level > log_level())
		return;
	va_start(ap, fmt);
	usft_print(level, fmt, ap);
	va_end(ap);
	errno = saved;
}

USFT_API usft_print_fn_t usft_set_print(usft_print_fn_t fn)
{
	usft_print_fn_t old = usft_print;

	usft_print = fn ? fn : default_print;
	return old;
}
