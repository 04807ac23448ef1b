// SPDX-License-Identifier: MIT
/*
 * Trampoline lifetime (kernel: bpf_trampoline_update(),
 * bpf_tramp_image_put() in kernel/bpf/trampoline.c; prog_tests/fexit_sleep.c; usft/trampoline.h usft_tramp_detach()):
 *  - attach / detach cycles mixing kinds, modes and the jmp /
 *    single_direct_ops options while 4 threads call the functions: every
 *    call returns the right value, every callback sees the right ctx, and
 *    once usft_tramp_detach() has returned the callback never runs again
 *    (a "dead" flag set right after detach, as in tests/stress/threads.c)
 *  - fexit_sleep: a thread blocks inside the traced function with fexit
 *    attached; detaching does not wait for it; when it wakes it returns the
 *    right value and the detached fexit callback does not run for that call
 *  - a thread stopped between the site and the first instruction of the
 *    image (preempted there; here: interrupted by a signal whose handler
 *    waits) must not run the detached callback once detach has returned
 *  - both direct-ops models (single_direct_ops=1 shared ops, 0 one ops per
 *    trampoline)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tramp_common.h"

#define NR_THREADS 4
#define MIN_CYCLES 100
#define MAX_CYCLES 4000
#define MAX_PER_CYCLE 4
#define TAG 0x5a5aUL
#define TAGGED(i) ((long)((TAG << 32) | ((unsigned long)(i) & 0xffffffUL)))

TRACEE long tr_lc_f(long x)
{
	TRACEE_BODY();
	return x * 3 + 1;
}

TRACEE long tr_lc_g(long x)
{
	TRACEE_BODY();
	return x * 5 + 2;
}

static long expect_of(int fn, long x)
{
	return fn ? x * 5 + 2 : x * 3 + 1;
}

static void *const lc_funcs[2] = { (void *)tr_lc_f, (void *)tr_lc_g };

/* ---- checked links ----------------------------------------------------------- */

#define LIVE 0x11ce11ceUL
#define DEAD 0xdeadbeefUL

struct checked {
	_Atomic unsigned long magic;
	int fn;				/* 0: tr_lc_f, 1: tr_lc_g */
	enum usft_tramp_kind kind;
	bool skip;			/* fmod_ret: return the right value itself */
	atomic_long count;
	atomic_long bad_ctx;
	atomic_long started_dead;	/* entered after detach returned */
	atomic_long finished_dead;	/* still running when detach returned */
};

static struct checked slots[MAX_CYCLES * MAX_PER_CYCLE];

static notrace unsigned long checked_prog(const unsigned long *ctx, void *cookie)
{
	struct checked *c = cookie;
	bool dead_at_entry = atomic_load(&c->magic) != LIVE;
	long x = (long)ctx[0];
	unsigned long ret = 0;

	if (dead_at_entry)
		atomic_fetch_add(&c->started_dead, 1);
	if (((unsigned long)x >> 32) != TAG)
		atomic_fetch_add(&c->bad_ctx, 1);
	if (c->kind == USFT_TRAMP_FEXIT && (long)ctx[1] != expect_of(c->fn, x))
		atomic_fetch_add(&c->bad_ctx, 1);
	if (c->kind == USFT_TRAMP_FMODRET && c->skip)
		ret = (unsigned long)expect_of(c->fn, x);
	atomic_fetch_add(&c->count, 1);
	/* widen the window in which a racing detach could return */
	for (int i = 0; i < 20; i++)
		asm volatile("" ::: "memory");
	if (!dead_at_entry && atomic_load(&c->magic) != LIVE)
		atomic_fetch_add(&c->finished_dead, 1);
	return ret;
}

static void expect_clean(struct checked *c, long i)
{
	cr_assert_eq(atomic_load(&c->bad_ctx), 0, "link %ld (fn %d kind %d): wrong ctx", i, c->fn,
		     c->kind);
	cr_assert(atomic_load(&c->started_dead) == 0 && atomic_load(&c->finished_dead) == 0,
		  "link %ld (fn %d kind %d): callback ran after usft_tramp_detach() returned: "
		  "%ld started after it, %ld were still running when it returned", i, c->fn,
		  c->kind, atomic_load(&c->started_dead), atomic_load(&c->finished_dead));
}

static void caller(struct tc_pool *p, int idx, void *arg)
{
	unsigned long i = (unsigned long)idx << 20;

	while (!tc_pool_should_stop(p)) {
		long x = TAGGED(i);

		if (tr_lc_f(x) != x * 3 + 1)
			atomic_fetch_add(&p->errors, 1);
		if (tr_lc_g(x) != x * 5 + 2)
			atomic_fetch_add(&p->errors, 1);
		i++;
		atomic_fetch_add_explicit(&p->iters[idx], 1, memory_order_relaxed);
	}
}

static void lifecycle_stress(bool toggle_options)
{
	struct tc_pool pool;
	long cycles = 0, used = 0;
	double deadline;

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(tc_pool_start(&pool, NR_THREADS, caller, NULL), 0);
	deadline = tc_now() + tc_stress_seconds();

	while ((cycles < MIN_CYCLES || tc_now() < deadline) && cycles < MAX_CYCLES) {
		struct usft_tramp_link *l[MAX_PER_CYCLE];
		struct checked *c[MAX_PER_CYCLE];
		int n = 1 + (int)(cycles % MAX_PER_CYCLE);
		bool fmod_seen[2] = { false, false };

		if (toggle_options && cycles % 10 == 0) {
			/* nothing attached here */
			tt_set_option("jmp", (cycles / 10) % 2 ? "0" : "1");
			tt_set_option("single_direct_ops", (cycles / 20) % 2 ? "0" : "1");
		}
		for (int i = 0; i < n; i++) {
			int mode = (int)((cycles / 3 + i) % 3);

			c[i] = &slots[used++];
			c[i]->fn = (int)((cycles / 2 + i) % 2);
			c[i]->kind = (enum usft_tramp_kind)((cycles + i) % 3);
			c[i]->skip = (cycles / 5 + i) % 2;
			atomic_store(&c[i]->magic, LIVE);
			l[i] = tt_attach(lc_funcs[c[i]->fn], c[i]->kind, checked_prog, c[i], 1, mode);
		}
		/* this thread's own calls reach every fentry / fexit link and
		 * the first fmod_ret of each function */
		{
			long before[MAX_PER_CYCLE];

			for (int i = 0; i < n; i++)
				before[i] = atomic_load(&c[i]->count);
			cr_assert_eq(tr_lc_f(TAGGED(cycles)), TAGGED(cycles) * 3 + 1);
			cr_assert_eq(tr_lc_g(TAGGED(cycles)), TAGGED(cycles) * 5 + 2);
			for (int i = 0; i < n; i++) {
				bool must = c[i]->kind != USFT_TRAMP_FMODRET || !fmod_seen[c[i]->fn];

				if (c[i]->kind == USFT_TRAMP_FMODRET)
					fmod_seen[c[i]->fn] = true;
				if (must)
					cr_assert_gt(atomic_load(&c[i]->count), before[i],
						     "cycle %ld: link %d (fn %d kind %d) did not run",
						     cycles, i, c[i]->fn, c[i]->kind);
			}
		}
		for (int k = 0; k < n; k++) {
			int i = cycles % 2 ? n - 1 - k : k;

			tt_detach(l[i]);
			atomic_store(&c[i]->magic, DEAD);
		}
		cycles++;
	}
	expect_site(tr_lc_f, TT_NOP5);
	expect_site(tr_lc_g, TT_NOP5);

	/* everything detached: no counter moves while the threads go on */
	{
		long total = 0;

		for (long i = 0; i < used; i++)
			total += atomic_load(&slots[i].count);
		tc_pool_wait_iters(&pool, 20000);
		for (long i = 0; i < used; i++)
			total -= atomic_load(&slots[i].count);
		cr_assert_eq(total, 0, "callbacks ran after the final detach");
	}
	tc_pool_stop(&pool);
	cr_assert_eq(atomic_load(&pool.errors), 0, "wrong results in worker threads (%lu)",
		     atomic_load(&pool.errors));
	for (long i = 0; i < used; i++)
		expect_clean(&slots[i], i);
	cr_assert_eq(tc_stat().nr_enabled, 0);
	cr_assert_eq(tc_stat().disabled, 0);
	cr_log_info("%ld cycles, %ld links", cycles, used);
}

/* >= 100 cycles (every fn/kind/skip/mode combination many times); jmp and
 * single_direct_ops change every 10 and 20 cycles */
Test(lifecycle, attach_detach_while_threads_call, .timeout = 300)
{
	lifecycle_stress(true);
}

/* ---- fexit_sleep ---------------------------------------------------------------- */

static sem_t entered, go;
static atomic_int in_sleep_fn;

TRACEE long tr_sleep_fn(long x)
{
	TRACEE_BODY();
	atomic_fetch_add(&in_sleep_fn, 1);
	sem_post(&entered);
	while (sem_wait(&go) && errno == EINTR)
		;
	atomic_fetch_sub(&in_sleep_fn, 1);
	return x * 2 + 1;
}

struct sleeper {
	pthread_t tid;
	long arg;
	long ret;
	atomic_int done;
};

static void *sleeper_main(void *p)
{
	struct sleeper *s = p;

	s->ret = tr_sleep_fn(s->arg);
	atomic_store(&s->done, 1);
	return NULL;
}

static atomic_long fexit_cnt, fentry_cnt, fmod_cnt, fexit2_cnt;
static atomic_long fexit_bad;

static notrace unsigned long sl_fexit(const unsigned long *ctx, void *cookie)
{
	if ((long)ctx[1] != (long)ctx[0] * 2 + 1)
		atomic_fetch_add(&fexit_bad, 1);
	atomic_fetch_add((atomic_long *)cookie, 1);
	return 0;
}

static notrace unsigned long sl_count(const unsigned long *ctx, void *cookie)
{
	atomic_fetch_add((atomic_long *)cookie, 1);
	return 0;
}

struct detacher {
	pthread_t tid;
	struct usft_tramp_link *link[4];
	int n;
	int ret;
	sem_t done;
};

static void *detacher_main(void *p)
{
	struct detacher *d = p;

	d->ret = 0;
	for (int i = 0; i < d->n && !d->ret; i++)
		d->ret = usft_tramp_detach(d->link[i]);
	sem_post(&d->done);
	return NULL;
}

/* detach @links from another thread; fail if that takes more than 10 s */
static void detach_without_waiting(struct usft_tramp_link **links, int n, int nr_sleepers)
{
	static struct detacher d;
	struct timespec ts;
	int r;

	memset(&d, 0, sizeof(d));
	memcpy(d.link, links, n * sizeof(*links));
	d.n = n;
	sem_init(&d.done, 0, 0);
	cr_assert_eq(pthread_create(&d.tid, NULL, detacher_main, &d), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	while ((r = sem_timedwait(&d.done, &ts)) && errno == EINTR)
		;
	if (r) {
		/* let the sleepers go so the process can end, then fail */
		for (int i = 0; i < nr_sleepers; i++)
			sem_post(&go);
		cr_assert_fail("usft_tramp_detach() blocked while a thread sleeps inside "
			       "the traced function (still blocked after 10 s)");
	}
	pthread_join(d.tid, NULL);
	cr_assert_eq(d.ret, 0, "usft_tramp_detach() = %d", d.ret);
	cr_assert_eq(atomic_load(&in_sleep_fn), nr_sleepers,
		     "the sleeper(s) left the function before being released");
}

static void start_sleepers(struct sleeper *s, int n)
{
	for (int i = 0; i < n; i++) {
		s[i].arg = 100 + i;
		atomic_store(&s[i].done, 0);
		cr_assert_eq(pthread_create(&s[i].tid, NULL, sleeper_main, &s[i]), 0);
	}
	for (int i = 0; i < n; i++)
		while (sem_wait(&entered) && errno == EINTR)
			;
	cr_assert_eq(atomic_load(&in_sleep_fn), n);
}

static void finish_sleepers(struct sleeper *s, int n)
{
	for (int i = 0; i < n; i++)
		cr_assert_eq(atomic_load(&s[i].done), 0);
	for (int i = 0; i < n; i++)
		sem_post(&go);
	for (int i = 0; i < n; i++) {
		pthread_join(s[i].tid, NULL);
		cr_assert_eq(s[i].ret, s[i].arg * 2 + 1, "sleeper %d returned %ld, want %ld", i,
			     s[i].ret, s[i].arg * 2 + 1);
	}
}

static void init_sleep(void)
{
	cr_assert_eq(usft_init(), 0);
	sem_init(&entered, 0, 0);
	sem_init(&go, 0, 0);
	atomic_store(&fexit_cnt, 0);
	atomic_store(&fentry_cnt, 0);
	atomic_store(&fmod_cnt, 0);
	atomic_store(&fexit2_cnt, 0);
	atomic_store(&fexit_bad, 0);
}

/* fexit (+ fentry, fmod_ret) attached, all detached while @nr threads sleep */
static void fexit_sleep(int mode, unsigned char want_site, bool with_others, int nr)
{
	struct sleeper s[4];
	struct usft_tramp_link *l[3];
	int n = 0;

	init_sleep();
	l[n++] = tt_attach(tr_sleep_fn, USFT_TRAMP_FEXIT, sl_fexit, &fexit_cnt, 1, mode);
	if (with_others) {
		l[n++] = tt_attach(tr_sleep_fn, USFT_TRAMP_FENTRY, sl_count, &fentry_cnt, 1, mode);
		l[n++] = tt_attach(tr_sleep_fn, USFT_TRAMP_FMODRET, sl_count, &fmod_cnt, 1, mode);
	}
	expect_site(tr_sleep_fn, want_site);

	start_sleepers(s, nr);
	if (with_others) {
		cr_assert_eq(atomic_load(&fentry_cnt), nr);
		cr_assert_eq(atomic_load(&fmod_cnt), nr);
	}
	cr_assert_eq(atomic_load(&fexit_cnt), 0);

	detach_without_waiting(l, n, nr);
	expect_site(tr_sleep_fn, TT_NOP5);

	finish_sleepers(s, nr);
	cr_assert_eq(atomic_load(&fexit_cnt), 0,
		     "the detached fexit ran %ld times for calls that were sleeping at detach",
		     atomic_load(&fexit_cnt));
	if (with_others) {
		cr_assert_eq(atomic_load(&fentry_cnt), nr);
		cr_assert_eq(atomic_load(&fmod_cnt), nr);
	}

	/* the function still works, with and without a new fexit */
	sem_post(&go);
	cr_assert_eq(tr_sleep_fn(5), 11);
	sem_wait(&entered);
	l[0] = tt_attach(tr_sleep_fn, USFT_TRAMP_FEXIT, sl_fexit, &fexit_cnt, 1, mode);
	sem_post(&go);
	cr_assert_eq(tr_sleep_fn(6), 13);
	sem_wait(&entered);
	cr_assert_eq(atomic_load(&fexit_cnt), 1);
	tt_detach(l[0]);
	cr_assert_eq(atomic_load(&fexit_bad), 0);
}

Test(fexit_sleep, jmp_mode)
{
	fexit_sleep(USFT_TRAMP_MODE_AUTO, TT_JMP, false, 1);
}

Test(fexit_sleep, call_mode)
{
	fexit_sleep(USFT_TRAMP_MODE_CALL, TT_CALL, false, 1);
}

Test(fexit_sleep, with_fentry_and_fmod_ret_jmp)
{
	fexit_sleep(USFT_TRAMP_MODE_AUTO, TT_JMP, true, 1);
}

Test(fexit_sleep, with_fentry_and_fmod_ret_call)
{
	fexit_sleep(USFT_TRAMP_MODE_CALL, TT_CALL, true, 1);
}

Test(fexit_sleep, three_sleepers)
{
	fexit_sleep(USFT_TRAMP_MODE_AUTO, TT_JMP, true, 3);
}

Test(fexit_sleep, per_trampoline_ops)
{
	cr_assert_eq(usft_init(), 0);
	tt_set_option("single_direct_ops", "0");
	fexit_sleep(USFT_TRAMP_MODE_AUTO, TT_JMP, true, 2);
}

Test(fexit_sleep, jmp_option_off)
{
	cr_assert_eq(usft_init(), 0);
	tt_set_option("jmp", "0");
	fexit_sleep(USFT_TRAMP_MODE_AUTO, TT_CALL, true, 1);
}

/*
 * Only the fexit goes while the thread sleeps (fentry stays: the image is
 * replaced, not removed), and a new fexit is attached before it wakes: the
 * sleeping call runs neither (it is in the old image); new calls run the new.
 */
static void fexit_sleep_replace(int mode, unsigned char want_site)
{
	struct sleeper s[1];
	struct usft_tramp_link *ex, *en, *ex2;

	init_sleep();
	en = tt_attach(tr_sleep_fn, USFT_TRAMP_FENTRY, sl_count, &fentry_cnt, 1, mode);
	ex = tt_attach(tr_sleep_fn, USFT_TRAMP_FEXIT, sl_fexit, &fexit_cnt, 1, mode);
	expect_site(tr_sleep_fn, want_site);
	start_sleepers(s, 1);
	detach_without_waiting(&ex, 1, 1);
	expect_site(tr_sleep_fn, TT_CALL);	/* fentry-only image */
	ex2 = tt_attach(tr_sleep_fn, USFT_TRAMP_FEXIT, sl_fexit, &fexit2_cnt, 1, mode);
	expect_site(tr_sleep_fn, want_site);
	finish_sleepers(s, 1);
	cr_assert_eq(atomic_load(&fexit_cnt), 0, "detached fexit ran for the sleeping call");
	cr_assert_eq(atomic_load(&fexit2_cnt), 0,
		     "an fexit attached while the call slept ran for it (it entered the old image)");
	cr_assert_eq(atomic_load(&fentry_cnt), 1);

	sem_post(&go);
	cr_assert_eq(tr_sleep_fn(7), 15);
	sem_wait(&entered);
	cr_assert_eq(atomic_load(&fentry_cnt), 2);
	cr_assert_eq(atomic_load(&fexit2_cnt), 1);
	cr_assert_eq(atomic_load(&fexit_cnt), 0);
	tt_detach(ex2);
	tt_detach(en);
	expect_site(tr_sleep_fn, TT_NOP5);
	cr_assert_eq(atomic_load(&fexit_bad), 0);
}

Test(fexit_sleep, replace_while_sleeping_jmp)
{
	fexit_sleep_replace(USFT_TRAMP_MODE_AUTO, TT_JMP);
}

Test(fexit_sleep, replace_while_sleeping_call)
{
	fexit_sleep_replace(USFT_TRAMP_MODE_CALL, TT_CALL);
}

/*
 * Image lifetime (bpf_tramp_image_put()): the image a thread sleeps in must stay mapped and
 * intact however many images are generated, retired and freed meanwhile.
 */
static void churn_while_sleeping(int mode)
{
	struct sleeper s[2];
	struct usft_tramp_link *l, *c[3];

	init_sleep();
	l = tt_attach(tr_sleep_fn, USFT_TRAMP_FEXIT, sl_fexit, &fexit_cnt, 1, mode);
	start_sleepers(s, 2);
	detach_without_waiting(&l, 1, 2);
	for (int i = 0; i < 200; i++) {
		/* images for the same function and for others come and go */
		c[0] = tt_attach(tr_sleep_fn, (enum usft_tramp_kind)(i % 3), sl_count, &fmod_cnt, 1,
				 i % 2 ? USFT_TRAMP_MODE_CALL : 0);
		c[1] = tt_attach(tr_lc_f, USFT_TRAMP_FEXIT, sl_count, &fentry_cnt, 1, 0);
		c[2] = tt_attach(tr_lc_g, USFT_TRAMP_FMODRET, sl_count, &fentry_cnt, 1, 0);
		cr_assert_eq(tr_lc_f(i), i * 3 + 1);
		cr_assert_eq(tr_lc_g(i), i * 5 + 2);
		tt_detach(c[2]);
		tt_detach(c[0]);
		tt_detach(c[1]);
	}
	expect_site(tr_sleep_fn, TT_NOP5);
	finish_sleepers(s, 2);
	cr_assert_eq(atomic_load(&fexit_cnt), 0);
	cr_assert_eq(atomic_load(&fentry_cnt), 400);
	cr_assert_eq(atomic_load(&fexit_bad), 0);
	/* and once more after the sleepers have left */
	l = tt_attach(tr_sleep_fn, USFT_TRAMP_FEXIT, sl_fexit, &fexit_cnt, 1, mode);
	sem_post(&go);
	cr_assert_eq(tr_sleep_fn(8), 17);
	sem_wait(&entered);
	cr_assert_eq(atomic_load(&fexit_cnt), 1);
	tt_detach(l);
}

Test(fexit_sleep, image_churn_while_sleeping_jmp)
{
	churn_while_sleeping(USFT_TRAMP_MODE_AUTO);
}

Test(fexit_sleep, image_churn_while_sleeping_call)
{
	churn_while_sleeping(USFT_TRAMP_MODE_CALL);
}

/* ---- a thread stopped at the image's first instruction ------------------------ */

/*
 * The main thread signals the worker; the handler sets the trap flag, so the
 * worker single-steps (SIGTRAP, si_code TRAP_TRACE, which the runtime's
 * SIGTRAP handler chains to ours) until it stands exactly on the entry of
 * the current image: the site's call / jmp has executed, the image's first
 * instruction has not.  There it is parked until the main thread has
 * detached.  A thread preempted by the scheduler at that instruction is in
 * the same state.  Once usft_tramp_detach() has returned the detached
 * callback must not run, whatever the thread does next.
 */
TRACEE long tr_win_fn(long x)
{
	TRACEE_BODY();
	return x * 7 + 3;
}

/* same model: its images have the size of tr_win_fn's, so they could reuse them */
TRACEE long tr_win_twin(long x)
{
	TRACEE_BODY();
	return x * 11 + 5;
}

#if defined(__x86_64__)
#define WIN_SIG (SIGRTMIN + 2)
#define X86_EFLAGS_TF 0x100L

static _Atomic unsigned long win_image;
static atomic_int win_caught, win_released, win_dead, win_dead_runs, win_stop, win_bad, win_tid;
static atomic_int win_stepping;
static atomic_long win_steps, win_runs;

static notrace unsigned long win_prog(const unsigned long *ctx, void *cookie)
{
	if (atomic_load(&win_dead))
		atomic_fetch_add(&win_dead_runs, 1);
	atomic_fetch_add(&win_runs, 1);
	return 0;
}

static notrace void win_on_signal(int sig, siginfo_t *si, void *p)
{
	ucontext_t *uc = p;

	if (atomic_load(&win_caught) || atomic_load(&win_stepping))
		return;
	atomic_store(&win_steps, 0);
	atomic_store(&win_stepping, 1);
	uc->uc_mcontext.gregs[REG_EFL] |= X86_EFLAGS_TF;
}

static notrace void win_on_trap(int sig, siginfo_t *si, void *p)
{
	ucontext_t *uc = p;
	unsigned long rip = (unsigned long)uc->uc_mcontext.gregs[REG_RIP];

	if (!atomic_load(&win_stepping))
		return;
	if (rip == atomic_load(&win_image)) {
		uc->uc_mcontext.gregs[REG_EFL] &= ~X86_EFLAGS_TF;
		atomic_store(&win_stepping, 0);
		atomic_store(&win_caught, 1);
		while (!atomic_load(&win_released))
			;
		return;
	}
	if (atomic_fetch_add(&win_steps, 1) > 20000) {
		uc->uc_mcontext.gregs[REG_EFL] &= ~X86_EFLAGS_TF;
		atomic_store(&win_stepping, 0);
	}
}

static notrace void *win_worker(void *a)
{
	atomic_store(&win_tid, gettid());
	for (long i = 0; !atomic_load(&win_stop); i++)
		if (tr_win_fn(i) != i * 7 + 3)
			atomic_fetch_add(&win_bad, 1);
	return NULL;
}

static void stopped_at_entry(enum usft_tramp_kind kind, int mode, unsigned char want_site)
{
	struct sigaction sa;
	struct usft_tramp_link *l;
	unsigned char b[TC_SITE_SIZE];
	pthread_t th;
	int rel;

	cr_assert_eq(usft_init(), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = win_on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	cr_assert_eq(sigaction(WIN_SIG, &sa, NULL), 0);
	sa.sa_sigaction = win_on_trap;
	cr_assert_eq(sigaction(SIGTRAP, &sa, NULL), 0);

	l = tt_attach(tr_win_fn, kind, win_prog, NULL, 1, mode);
	expect_site(tr_win_fn, want_site);
	cr_assert_eq(tc_read_site((const void *)tr_win_fn, b), TC_SITE_SIZE);
	memcpy(&rel, b + 1, 4);
	atomic_store(&win_image, tc_site((const void *)tr_win_fn) + TC_SITE_SIZE + (long)rel);
	cr_assert_eq(pthread_create(&th, NULL, win_worker, NULL), 0);
	while (!atomic_load(&win_tid))
		sched_yield();
	for (int i = 0; i < 5000 && !atomic_load(&win_caught); i++) {
		tgkill(getpid(), atomic_load(&win_tid), WIN_SIG);
		usleep(1000);
	}
	if (!atomic_load(&win_caught)) {
		atomic_store(&win_stop, 1);
		pthread_join(th, NULL);
		tt_detach(l);
		cr_skip_test("never caught the worker at the image entry");
	}
	tt_detach(l);
	atomic_store(&win_dead, 1);
	/*
	 * The grace period cannot see the parked worker (it is before the
	 * image's mark), so the freed image must not be handed out again while
	 * it stands there: images of the same size come and go, none may land
	 * on it (it would run another function's image).
	 */
	for (int i = 0; i < 400; i++) {
		struct usft_tramp_link *t = tt_attach(tr_win_twin, kind, win_prog, NULL, 1, mode);

		cr_assert_eq(tc_read_site((const void *)tr_win_twin, b), TC_SITE_SIZE);
		memcpy(&rel, b + 1, 4);
		cr_assert_neq(tc_site((const void *)tr_win_twin) + TC_SITE_SIZE + (long)rel,
			      atomic_load(&win_image),
			      "cycle %d: a new image reuses the one a thread is about to run", i);
		tt_detach(t);
	}
	atomic_store(&win_released, 1);
	usleep(50000);
	atomic_store(&win_stop, 1);
	pthread_join(th, NULL);
	cr_assert_eq(atomic_load(&win_bad), 0, "wrong results");
	cr_assert_eq(atomic_load(&win_dead_runs), 0,
		     "the detached callback ran %d time(s) after usft_tramp_detach() returned "
		     "(a thread stopped between the site and the image's first instruction is "
		     "not seen by the grace period)", atomic_load(&win_dead_runs));
	expect_site(tr_win_fn, TT_NOP5);
}
#else
/* single-stepping from a signal handler (EFLAGS.TF) is x86-64 only */
static void stopped_at_entry(enum usft_tramp_kind kind, int mode, unsigned char want_site)
{
	(void)kind;
	(void)mode;
	(void)want_site;
	cr_skip_test("needs user-mode single-step from a signal handler (x86-64 EFLAGS.TF)");
}
#endif

Test(lifecycle, thread_stopped_at_image_entry_fentry)
{
	stopped_at_entry(USFT_TRAMP_FENTRY, 0, TT_CALL);
}

Test(lifecycle, thread_stopped_at_image_entry_fmod_ret_jmp)
{
	stopped_at_entry(USFT_TRAMP_FMODRET, 0, TT_JMP);
}

Test(lifecycle, thread_stopped_at_image_entry_fmod_ret_call)
{
	stopped_at_entry(USFT_TRAMP_FMODRET, USFT_TRAMP_MODE_CALL, TT_CALL);
}

Test(lifecycle, thread_stopped_at_image_entry_fexit_jmp)
{
	stopped_at_entry(USFT_TRAMP_FEXIT, 0, TT_JMP);
}

Test(lifecycle, thread_stopped_at_image_entry_fexit_call)
{
	stopped_at_entry(USFT_TRAMP_FEXIT, USFT_TRAMP_MODE_CALL, TT_CALL);
}

/* ---- single_direct_ops = 0 / 1 ---------------------------------------------------- */

static atomic_long m_cnt[4];

static void models(const char *single)
{
	struct usft_tramp_link *l[4];

	cr_assert_eq(usft_init(), 0);
	tt_set_option("single_direct_ops", single);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 4; i++)
			atomic_store(&m_cnt[i], 0);
		l[0] = tt_attach(tr_lc_f, USFT_TRAMP_FENTRY, sl_count, &m_cnt[0], 1, 0);
		l[1] = tt_attach(tr_lc_g, USFT_TRAMP_FEXIT, sl_count, &m_cnt[1], 1, 0);
		expect_site(tr_lc_f, TT_CALL);
		expect_site(tr_lc_g, TT_JMP);
		l[2] = tt_attach(tr_lc_f, USFT_TRAMP_FEXIT, sl_count, &m_cnt[2], 1, 0);
		l[3] = tt_attach(tr_lc_g, USFT_TRAMP_FMODRET, sl_count, &m_cnt[3], 1,
				 USFT_TRAMP_MODE_CALL);
		expect_site(tr_lc_f, TT_JMP);
		expect_site(tr_lc_g, TT_CALL);
		cr_assert_eq(tr_lc_f(10), 31);
		cr_assert_eq(tr_lc_g(10), 52);
		for (int i = 0; i < 4; i++)
			cr_assert_eq(atomic_load(&m_cnt[i]), 1, "link %d: %ld hits", i,
				     atomic_load(&m_cnt[i]));
		tt_detach(l[0]);
		tt_detach(l[3]);
		expect_site(tr_lc_f, TT_JMP);
		expect_site(tr_lc_g, TT_JMP);
		cr_assert_eq(tr_lc_f(1), 4);
		cr_assert_eq(tr_lc_g(1), 7);
		cr_assert_eq(atomic_load(&m_cnt[0]), 1);
		cr_assert_eq(atomic_load(&m_cnt[2]), 2);
		cr_assert_eq(atomic_load(&m_cnt[1]), 2);
		cr_assert_eq(atomic_load(&m_cnt[3]), 1);
		tt_detach(l[1]);
		tt_detach(l[2]);
		expect_site(tr_lc_f, TT_NOP5);
		expect_site(tr_lc_g, TT_NOP5);
		cr_assert_eq(tr_lc_f(1), 4);
		cr_assert_eq(atomic_load(&m_cnt[2]), 2);
	}
	cr_assert_eq(tc_stat().nr_enabled, 0);
}

Test(single_direct_ops, shared_ops)
{
	models("1");
}

Test(single_direct_ops, ops_per_trampoline)
{
	models("0");
}

/* switching the model between attachments, nothing attached in between */
Test(single_direct_ops, switch_between_models)
{
	struct usft_tramp_link *l;

	cr_assert_eq(usft_init(), 0);
	for (int i = 0; i < 6; i++) {
		atomic_store(&m_cnt[0], 0);
		tt_set_option("single_direct_ops", i % 2 ? "0" : "1");
		l = tt_attach(tr_lc_f, USFT_TRAMP_FEXIT, sl_count, &m_cnt[0], 1, 0);
		expect_site(tr_lc_f, TT_JMP);
		cr_assert_eq(tr_lc_f(2), 7);
		cr_assert_eq(atomic_load(&m_cnt[0]), 1);
		tt_detach(l);
		expect_site(tr_lc_f, TT_NOP5);
	}
}

/*
 * The option is live (usft_set_option accepts it while trampolines exist):
 * a trampoline keeps the model it was registered with, so a change must
 * not break the next update or detach of an existing one.
 */
Test(single_direct_ops, option_change_while_attached)
{
	struct usft_tramp_link *a, *b, *c;
	int r;

	cr_assert_eq(usft_init(), 0);
	tt_set_option("single_direct_ops", "1");
	a = tt_attach(tr_lc_f, USFT_TRAMP_FENTRY, sl_count, &m_cnt[0], 1, 0);
	r = usft_set_option("single_direct_ops", "0");
	if (r) {
		cr_log_info("single_direct_ops change while attached refused: %d", r);
		cr_assert_eq(r, -EBUSY);
		tt_detach(a);
		return;
	}
	b = tt_attach(tr_lc_g, USFT_TRAMP_FENTRY, sl_count, &m_cnt[1], 1, 0);
	c = tt_attach(tr_lc_f, USFT_TRAMP_FEXIT, sl_count, &m_cnt[2], 1, 0);
	expect_site(tr_lc_f, TT_JMP);
	expect_site(tr_lc_g, TT_CALL);
	cr_assert_eq(tr_lc_f(1), 4);
	cr_assert_eq(tr_lc_g(1), 7);
	tt_set_option("single_direct_ops", "1");
	tt_detach(a);
	tt_detach(b);
	expect_site(tr_lc_g, TT_NOP5);
	cr_assert_eq(tr_lc_f(1), 4);
	tt_detach(c);
	expect_site(tr_lc_f, TT_NOP5);
	expect_site(tr_lc_g, TT_NOP5);
	cr_assert_eq(tr_lc_f(1), 4);
	cr_assert_eq(tr_lc_g(1), 7);
}
