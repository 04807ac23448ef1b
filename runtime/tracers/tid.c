// SPDX-License-Identifier: MIT
/* tracers/tid.c - the per-thread tid cache of tid.h */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "tid.h"

__thread int usft_tid_cache __attribute__((tls_model("initial-exec")));

int usft_tid_lookup(void)
{
	int saved = errno;
	int t = (int)syscall(SYS_gettid);

	errno = saved;
	usft_tid_cache = t;
	return t;
}

void usft_tid_fork_reset(void)
{
	usft_tid_cache = 0;
}

void usft_tid_init(void)
{
	static bool done;

	/* the first caller registers; a failed registration lets the next one try */
	if (!__atomic_exchange_n(&done, true, __ATOMIC_ACQ_REL) &&
	    pthread_atfork(NULL, NULL, usft_tid_fork_reset))
		__atomic_store_n(&done, false, __ATOMIC_RELEASE);
}
