// SPDX-License-Identifier: MIT
/*
 * Process life-cycle: what a traced program does to itself while usft has
 * sites patched and callbacks running.
 *
 *   fork     while another thread is inside a callback (the child must be
 *            able to unregister: its grace period must not wait for a
 *            thread that does not exist there), and while another thread
 *            keeps registering and unregistering (the child must not
 *            inherit a half-done update or a held lock)
 *   vfork    the child runs a traced function on the parent's memory, and
 *            execs; the parent's ops and counts carry on
 *   signals  a timer-signal storm whose handler calls traced functions on
 *            the thread that is patching them (the SIGTRAP path re-entered
 *            from inside a batch)
 *   SIGTRAP  a thread executing its own int3 instructions, with its own
 *            handler, while usft patches other sites with INT3 batches
 *
 * Covered elsewhere: exec and fork under the preload (tests/e2e, samples
 * tracee exec.c / fork.c), dlclose of an object with enabled sites
 * (conformance/dlopen.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "test_common.h"

TRACEE long lc_f0(long x) { TRACEE_BODY(); return x * 3 + 1; }
TRACEE long lc_f1(long x) { TRACEE_BODY(); return x * 5 + 2; }
TRACEE long lc_f2(long x) { TRACEE_BODY(); return x * 7 + 3; }
TRACEE long lc_f3(long x) { TRACEE_BODY(); return x * 11 + 4; }
TRACEE long lc_block(long x) { TRACEE_BODY(); return x + 100; }

static const tc_fn_t funcs[] = { lc_f0, lc_f1, lc_f2, lc_f3 };
static const long mult[] = { 3, 5, 7, 11 };
#define NF 4

static notrace long expect(int k, long x)
{
	return x * mult[k] + k + 1;
}

/* every site is a nop or a call: never an INT3 left by an update */
static notrace int sites_consistent(void)
{
	for (int k = 0; k < NF; k++) {
		unsigned char b[TC_SITE_SIZE];

		if (tc_read_site((const void *)funcs[k], b) != TC_SITE_SIZE)
			return 0;
		if (memcmp(b, tc_nop5, TC_SITE_SIZE) && b[0] != 0xe8)
			return 0;
	}
	return 1;
}

static notrace void caller(struct tc_pool *p, int idx, void *arg)
{
	for (long i = 0; !tc_pool_should_stop(p); i++) {
		for (int k = 0; k < NF; k++)
			if (funcs[k](i) != expect(k, i))
				atomic_fetch_add(&p->errors, 1);
		atomic_fetch_add_explicit(&p->iters[idx], 1, memory_order_relaxed);
	}
}

/* run @fn in a child with a deadline; return its exit status (or 128+sig) */
static int in_child(int (*fn)(void *), void *arg, unsigned secs)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (!pid) {
		alarm(secs);
		_exit(fn(arg));
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- fork while a callback runs ------------------------------------------ */

static atomic_int in_cb, release_cb;

static notrace void blocking_func(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
				  struct ftrace_regs *fregs)
{
	if (ip != tc_site((const void *)lc_block))
		return;
	atomic_store(&in_cb, 1);
	while (!atomic_load(&release_cb))
		usleep(100);
}

static void *block_thread(void *arg)
{
	return (void *)lc_block(1);
}

/* child: the ops the parent registered still runs, and can go away */
static int child_after_fork(void *arg)
{
	struct tc_counter *c = arg;
	static struct tc_counter mine;
	long before = tc_count(c);

	if (!sites_consistent())
		return 10;
	if (lc_f1(2) != expect(1, 2) || tc_count(c) != before + 1)
		return 11;		/* the inherited ops is live in the child */
	/* the blocked thread does not exist here: no grace period may wait for it */
	if (unregister_ftrace_function(&c->ops))
		return 12;
	if (!tc_is_nop5(lc_f1) || lc_f1(3) != expect(1, 3) || tc_count(c) != before + 1)
		return 13;
	tc_counter_init(&mine, 0);
	if (tc_set_filter(&mine.ops, "lc_f2", 1) || register_ftrace_function(&mine.ops))
		return 14;
	if (lc_f2(1) != expect(2, 1) || tc_count(&mine) != 1)
		return 15;
	if (unregister_ftrace_function(&mine.ops) || !sites_consistent())
		return 16;
	return 0;
}

Test(lifecycle, fork_while_a_thread_is_inside_a_callback, .timeout = 60)
{
	static struct ftrace_ops blk = { .func = blocking_func };
	static struct tc_counter c;
	struct tc_pool pool;
	pthread_t t;
	int r;

	cr_assert_eq(usft_init(), 0);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "lc_f*", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cr_assert_eq(tc_set_filter(&blk, "lc_block", 1), 0);
	cr_assert_eq(register_ftrace_function(&blk), 0);
	cr_assert_eq(tc_pool_start(&pool, 2, caller, NULL), 0);
	cr_assert_eq(pthread_create(&t, NULL, block_thread, NULL), 0);
	while (!atomic_load(&in_cb))
		usleep(100);

	r = in_child(child_after_fork, &c, 20);
	cr_assert_eq(r, 0, "child failed with %d (142 = hung on a grace period)", r);

	/* the parent is unaffected */
	atomic_store(&release_cb, 1);
	pthread_join(t, NULL);
	tc_pool_wait_iters(&pool, 100);
	cr_assert_eq(unregister_ftrace_function(&blk), 0);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	tc_pool_stop(&pool);
	cr_assert_eq(atomic_load(&pool.errors), 0);
	cr_assert_gt(tc_count(&c), 0);
	cr_assert(sites_consistent());
	for (int k = 0; k < NF; k++)
		cr_assert(tc_is_nop5((const void *)funcs[k]));
}

/* ---- fork while another thread updates -------------------------------------- */

static atomic_int churn_stop;

static void *churn_thread(void *arg)
{
	static const char *const pats[] = { "lc_f0", "lc_f[12]", "lc_f*", "lc_f3" };
	struct tc_counter *c = arg;

	for (unsigned i = 0; !atomic_load(&churn_stop); i++) {
		if (tc_set_filter(&c->ops, pats[i % 4], 1) || register_ftrace_function(&c->ops) ||
		    unregister_ftrace_function(&c->ops))
			return (void *)1;
	}
	return NULL;
}

static int child_during_churn(void *arg)
{
	static struct tc_counter mine;

	if (!sites_consistent())
		return 20;	/* a batch was cut in half by the fork */
	for (int k = 0; k < NF; k++)
		if (funcs[k](5) != expect(k, 5))
			return 21;
	tc_counter_init(&mine, FTRACE_OPS_FL_SAVE_REGS);
	if (tc_set_filter(&mine.ops, "lc_f0 lc_f3", 1) || register_ftrace_function(&mine.ops))
		return 22;	/* hangs (alarm) on an inherited held lock */
	if (lc_f0(1) != expect(0, 1) || lc_f3(1) != expect(3, 1) || tc_count(&mine) != 2)
		return 23;
	if (unregister_ftrace_function(&mine.ops) || !sites_consistent())
		return 24;
	return 0;
}

Test(lifecycle, fork_while_another_thread_registers, .timeout = 120)
{
	static struct tc_counter c;
	struct tc_pool pool;
	pthread_t t;
	void *ret;

	cr_assert_eq(usft_init(), 0);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_pool_start(&pool, 1, caller, NULL), 0);
	cr_assert_eq(pthread_create(&t, NULL, churn_thread, &c), 0);
	for (int i = 0; i < 40; i++) {
		int r = in_child(child_during_churn, NULL, 10);

		cr_assert_eq(r, 0, "fork %d: child failed with %d (142 = deadlock)", i, r);
	}
	atomic_store(&churn_stop, 1);
	pthread_join(t, &ret);
	cr_assert_null(ret, "churn thread: an API call failed");
	tc_pool_stop(&pool);
	cr_assert_eq(atomic_load(&pool.errors), 0);
	for (int k = 0; k < NF; k++)
		cr_assert(tc_is_nop5((const void *)funcs[k]));
}

/* ---- vfork ----------------------------------------------------------------------- */

Test(lifecycle, vfork_child_calls_traced_code_and_execs, .timeout = 60)
{
	static struct tc_counter c;
	pid_t pid;
	int st;

	cr_assert_eq(usft_init(), 0);
	tc_counter_init(&c, FTRACE_OPS_FL_SAVE_REGS);
	cr_assert_eq(tc_set_filter(&c.ops, "lc_f0", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);

	/* the child shares the parent's memory: its callback counts here */
	pid = vfork();
	if (!pid)
		_exit(lc_f0(4) == expect(0, 4) ? 0 : 1);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "vfork child: status %#x", st);
	cr_assert_eq(tc_count(&c), 1);

	pid = vfork();
	if (!pid) {
		lc_f0(5);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "vfork+exec child: status %#x", st);
	cr_assert_eq(tc_count(&c), 2);

	cr_assert_eq(lc_f0(6), expect(0, 6));
	cr_assert_eq(tc_count(&c), 3);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_nop5(lc_f0);
}

/* ---- signals on the patching thread --------------------------------------------- */

static volatile sig_atomic_t sig_calls, sig_errors;

static notrace void storm_handler(int sig)
{
	int saved = errno;

	for (int k = 0; k < NF; k++)
		if (funcs[k](sig_calls) != expect(k, sig_calls))
			sig_errors++;
	sig_calls++;
	errno = saved;
}

Test(lifecycle, timer_signals_call_traced_code_during_batches, .timeout = 120)
{
	static struct tc_counter a, b;
	struct itimerval it = { .it_interval = { 0, 50 }, .it_value = { 0, 50 } };
	struct sigaction sa;
	struct usft_stats st0, st1;
	double end;
	long cycles = 0;

	cr_assert_eq(usft_init(), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = storm_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
	tc_counter_init(&a, 0);
	tc_counter_init(&b, FTRACE_OPS_FL_SAVE_REGS);
	cr_assert_eq(tc_set_filter(&b.ops, "lc_f1 lc_f3", 1), 0);
	st0 = tc_stat();
	cr_assert_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
	end = tc_now() + tc_stress_seconds();
	while (cycles < 200 || tc_now() < end) {
		long ca, cb;

		cr_assert_eq(tc_set_filter(&a.ops, cycles % 2 ? "lc_f*" : "lc_f0 lc_f2", 1), 0);
		cr_assert_eq(register_ftrace_function(&a.ops), 0);
		cr_assert_eq(register_ftrace_function(&b.ops), 0);
		ca = tc_count(&a);
		cb = tc_count(&b);
		cr_assert_eq(lc_f2(1), expect(2, 1));
		cr_assert_eq(lc_f3(1), expect(3, 1));
		cr_assert_geq(tc_count(&a), ca + 1);
		cr_assert_geq(tc_count(&b), cb + 1);
		cr_assert_eq(unregister_ftrace_function(&b.ops), 0);
		cr_assert_eq(unregister_ftrace_function(&a.ops), 0);
		cycles++;
	}
	memset(&it, 0, sizeof(it));
	cr_assert_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
	st1 = tc_stat();
	cr_assert_eq(sig_errors, 0, "wrong results in the signal handler");
	cr_assert_gt(sig_calls, 0);
	cr_assert(sites_consistent());
	for (int k = 0; k < NF; k++)
		cr_assert(tc_is_nop5((const void *)funcs[k]));
	cr_assert_eq(st1.disabled, 0);
	cr_log_info("signals: %ld cycles, %ld handler runs, %lu INT3 hits emulated", cycles,
		    (long)sig_calls, (unsigned long)(st1.nr_int3_hits - st0.nr_int3_hits));
}

/* ---- the program's own int3 ----------------------------------------------------------- */

#if defined(__x86_64__)
static atomic_long own_traps;

static notrace void own_trap_handler(int sig, siginfo_t *si, void *uc)
{
	atomic_fetch_add(&own_traps, 1);
}

static atomic_int trap_stop;
static atomic_long traps_done;

static void *trapper(void *arg)
{
	while (!atomic_load(&trap_stop)) {
		__asm__ volatile("int3");
		atomic_fetch_add(&traps_done, 1);
	}
	return NULL;
}

Test(lifecycle, own_int3_while_usft_patches, .timeout = 120)
{
	static struct tc_counter c;
	struct sigaction sa;
	struct tc_pool pool;
	pthread_t t;
	double end;
	long cycles = 0;

	cr_assert_eq(usft_init(), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = own_trap_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGTRAP, &sa, NULL), 0);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "lc_f*", 1), 0);
	cr_assert_eq(tc_pool_start(&pool, 1, caller, NULL), 0);
	cr_assert_eq(pthread_create(&t, NULL, trapper, NULL), 0);
	end = tc_now() + tc_stress_seconds();
	while (cycles < 200 || tc_now() < end) {
		cr_assert_eq(register_ftrace_function(&c.ops), 0);
		cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
		cycles++;
	}
	atomic_store(&trap_stop, 1);
	pthread_join(t, NULL);
	tc_pool_stop(&pool);
	cr_assert_eq(atomic_load(&pool.errors), 0);
	cr_assert_gt(atomic_load(&traps_done), 0);
	cr_assert_eq(atomic_load(&own_traps), atomic_load(&traps_done),
		     "the program's handler saw %ld of its %ld int3 traps",
		     atomic_load(&own_traps), atomic_load(&traps_done));
	for (int k = 0; k < NF; k++)
		cr_assert(tc_is_nop5((const void *)funcs[k]));
	cr_log_info("own int3: %ld traps during %ld register/unregister cycles",
		    atomic_load(&traps_done), cycles);
}
#endif
