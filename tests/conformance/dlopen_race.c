// SPDX-License-Identifier: MIT
/*
 * A function of an object that dlopen() just loaded is a site, every time,
 * even while another thread is inside an API call that holds the update
 * lock (the kernel adds a module's records before the module's code can
 * run).  Here the other thread is an unregister_ftrace_function() waiting
 * in its grace period for a thread parked in the callback: ftrace_location(),
 * usft_lookup_name() and usft_tramp_attach() on a function of the object
 * loaded meanwhile must find it (they wait for the update to finish).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include <usft/trampoline.h>

#include "test_common.h"

#ifndef CF_FIXTURE_PATH
#error "CF_FIXTURE_PATH must name the fixture object"
#endif

TRACEE long cf_race_local(long x)
{
	TRACEE_BODY();
	return x + 1;
}

static atomic_int inside, release, unreg_ret;

notrace static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* parks its thread in the callback until released, or for 100 ms at most */
notrace static void park_cb(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			    struct ftrace_regs *fregs)
{
	long t0 = now_ms();

	atomic_store(&inside, 1);
	while (!atomic_load(&release) && now_ms() - t0 < 100)
		;
}

static struct ftrace_ops park_ops = { .func = park_cb };

static void *parked(void *arg)
{
	(void)arg;
	cf_race_local(1);
	return NULL;
}

static void *unregister_it(void *arg)
{
	(void)arg;
	atomic_store(&unreg_ret, unregister_ftrace_function(&park_ops) ? errno : 0);
	return NULL;
}

notrace static unsigned long race_prog(const unsigned long *ctx, void *cookie)
{
	return 0;
}

enum lookup { BY_LOCATION, BY_NAME, BY_ATTACH };

static void lookup_during_update(enum lookup how)
{
	struct usft_tramp_opts opts = { .sz = sizeof(opts), .nr_args = 2 };
	struct timespec settle = { 0, 20 * 1000 * 1000 };
	struct usft_tramp_link *link = NULL;
	pthread_t p, u;
	bool found = false;
	void *h, *fn;

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(ftrace_set_filter_ip(&park_ops, ftrace_location((unsigned long)cf_race_local),
					  0, 0), 0);
	cr_assert_eq(register_ftrace_function(&park_ops), 0);
	cr_assert_eq(pthread_create(&p, NULL, parked, NULL), 0);
	while (!atomic_load(&inside))
		;
	/* the unregister takes the update lock and waits for the parked thread */
	cr_assert_eq(pthread_create(&u, NULL, unregister_it, NULL), 0);
	nanosleep(&settle, NULL);

	h = dlopen(CF_FIXTURE_PATH, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "dlopen(%s): %s", CF_FIXTURE_PATH, dlerror());
	fn = dlsym(h, "cf_dlfix_mul");
	cr_assert_not_null(fn);
	switch (how) {
	case BY_LOCATION:
		found = ftrace_location((unsigned long)fn) != 0;
		break;
	case BY_NAME:
		found = usft_lookup_name("cf_dlfix_mul") == (unsigned long)fn;
		break;
	case BY_ATTACH:
		link = usft_tramp_attach(fn, USFT_TRAMP_FENTRY, race_prog, NULL, &opts);
		found = link != NULL;
		break;
	}
	atomic_store(&release, 1);
	pthread_join(p, NULL);
	pthread_join(u, NULL);
	cr_expect_eq(atomic_load(&unreg_ret), 0);
	if (link)
		cr_expect_eq(usft_tramp_detach(link), 0);
	cr_assert_eq(dlclose(h), 0);
	cr_expect(found, "a function of the object loaded during an update is not a site");
}

Test(dlopen_race, ftrace_location_finds_a_just_loaded_function)
{
	lookup_during_update(BY_LOCATION);
}

Test(dlopen_race, usft_lookup_name_finds_a_just_loaded_function)
{
	lookup_during_update(BY_NAME);
}

Test(dlopen_race, usft_tramp_attach_takes_a_just_loaded_function)
{
	lookup_during_update(BY_ATTACH);
}
