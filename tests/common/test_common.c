// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include "test_common.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__aarch64__)
const unsigned char tc_nop5[TC_SITE_SIZE] = { 0x1f, 0x20, 0x03, 0xd5 };
#else
const unsigned char tc_nop5[TC_SITE_SIZE] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
#endif

notrace unsigned long tc_site(const void *fn)
{
	return ftrace_location((unsigned long)fn);
}

notrace int tc_run_child(int (*fn)(void))
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (!pid) {
		alarm(60);
		_exit(fn());
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

notrace int tc_read_site(const void *fn, unsigned char buf[TC_SITE_SIZE])
{
	memset(buf, 0xff, TC_SITE_SIZE);
	return usft_site_bytes((unsigned long)fn, buf, TC_SITE_SIZE);
}

notrace const char *tc_fmt_bytes(const unsigned char *b, size_t n, char *out)
{
	size_t i, o = 0;

	out[0] = 0;
	for (i = 0; i < n; i++)
		o += sprintf(out + o, i ? " %02x" : "%02x", b[i]);
	return out;
}

notrace bool tc_is_nop5(const void *fn)
{
	unsigned char b[TC_SITE_SIZE];

	return tc_read_site(fn, b) == TC_SITE_SIZE &&
	       memcmp(b, tc_nop5, TC_SITE_SIZE) == 0;
}

notrace bool tc_is_call(const void *fn)
{
	unsigned char b[TC_SITE_SIZE];

	return tc_read_site(fn, b) == TC_SITE_SIZE && TC_IS_CALL_BYTES(b);
}

notrace unsigned long tc_call_target(const void *fn)
{
#if defined(__aarch64__)
	unsigned char b[TC_SITE_SIZE];
	int32_t rel;

	if (tc_read_site(fn, b) != TC_SITE_SIZE || !TC_IS_CALL_BYTES(b))
		return 0;
	memcpy(&rel, b, 4);
	return tc_site(fn) + ((long)(int32_t)((uint32_t)rel << 6) >> 4);
#else
	return tc_branch_target(fn, 0xe8);
#endif
}

#if !defined(__aarch64__)
notrace unsigned long tc_branch_target(const void *fn, unsigned char op)
{
	unsigned char b[TC_SITE_SIZE];
	int32_t rel;

	if (tc_read_site(fn, b) != TC_SITE_SIZE || b[0] != op)
		return 0;
	memcpy(&rel, b + 1, 4);
	return tc_site(fn) + TC_SITE_SIZE + (long)rel;
}
#endif

notrace void tc_snapshot_take(struct tc_snapshot *s, const void *const *fns, int n)
{
	int i;

	s->n = n;
	for (i = 0; i < n; i++) {
		s->fn[i] = fns[i];
		tc_read_site(fns[i], s->bytes[i]);
	}
}

notrace int tc_snapshot_diff(const struct tc_snapshot *s)
{
	unsigned char b[TC_SITE_SIZE];
	int i;

	for (i = 0; i < s->n; i++) {
		tc_read_site(s->fn[i], b);
		if (memcmp(b, s->bytes[i], TC_SITE_SIZE))
			return i;
	}
	return -1;
}

notrace int tc_poke_text(unsigned long addr, const void *bytes, size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned long start = addr & ~(pg - 1);
	unsigned long end = (addr + len + pg - 1) & ~(pg - 1);

	if (mprotect((void *)start, end - start, PROT_READ | PROT_WRITE | PROT_EXEC))
		return -errno;
	memcpy((void *)addr, bytes, len);
	__builtin___clear_cache((char *)addr, (char *)addr + len);
	if (mprotect((void *)start, end - start, PROT_READ | PROT_EXEC))
		return -errno;
	return 0;
}

notrace int tc_set_filter(struct ftrace_ops *ops, const char *s, int reset)
{
	return ftrace_set_filter(ops, (unsigned char *)s, s ? (int)strlen(s) : 0,
				 reset);
}

notrace int tc_set_notrace(struct ftrace_ops *ops, const char *s, int reset)
{
	return ftrace_set_notrace(ops, (unsigned char *)s, s ? (int)strlen(s) : 0,
				  reset);
}

/* ------------------------------------------------------------------ */

notrace void tc_counter_func(unsigned long ip, unsigned long parent_ip,
			     struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct tc_counter *c = container_of(op, struct tc_counter, ops);

	atomic_store_explicit(&c->last_ip, ip, memory_order_relaxed);
	atomic_store_explicit(&c->last_parent, parent_ip, memory_order_relaxed);
	if (op->flags & FTRACE_OPS_FL_SAVE_REGS) {
#if defined(__aarch64__)
		/* WITH_ARGS only: no pt_regs; the ftrace_regs pc is site + 4 */
		if (ftrace_regs_get_instruction_pointer(fregs) != ip + TC_SITE_SIZE)
			atomic_fetch_add(&c->bad_regs_ip, 1);
#else
		struct pt_regs *regs = ftrace_get_regs(fregs);

		if (!regs)
			atomic_fetch_add(&c->no_regs, 1);
		else if (regs->ip != ip + TC_SITE_SIZE)
			atomic_fetch_add(&c->bad_regs_ip, 1);
#endif
	}
	atomic_fetch_add(&c->count, 1);
}

static notrace void tc_assert_fresh(const struct ftrace_ops *ops)
{
	cr_assert_not(ops->flags & FTRACE_OPS_FL_INITIALIZED,
		      "test bug: re-initialising an ops the runtime has seen "
		      "(its trampoline and hashes would leak); use a fresh one");
}

notrace void tc_counter_init(struct tc_counter *c, unsigned long flags)
{
	tc_assert_fresh(&c->ops);
	memset(c, 0, sizeof(*c));
	c->ops.func = tc_counter_func;
	c->ops.flags = flags;
}

notrace void tc_hits_func(unsigned long ip, unsigned long parent_ip,
			  struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct tc_hits *h = container_of(op, struct tc_hits, ops);
	int i;

	for (i = 0; i < h->n; i++) {
		if (h->site[i] == ip) {
			atomic_fetch_add(&h->hits[i], 1);
			return;
		}
	}
	atomic_fetch_add(&h->other, 1);
}

notrace void tc_hits_init(struct tc_hits *h, const tc_fn_t *fns, int n,
			  unsigned long flags)
{
	int i;

	tc_assert_fresh(&h->ops);
	memset(h, 0, sizeof(*h));
	h->ops.func = tc_hits_func;
	h->ops.flags = flags;
	h->n = n;
	for (i = 0; i < n; i++)
		h->site[i] = tc_site((const void *)fns[i]);
}

notrace void tc_hits_reset(struct tc_hits *h)
{
	int i;

	for (i = 0; i < h->n; i++)
		atomic_store(&h->hits[i], 0);
	atomic_store(&h->other, 0);
}

notrace unsigned long tc_hits_mask(struct tc_hits *h, const tc_fn_t *fns,
				   unsigned long *bad)
{
	unsigned long mask = 0, b = 0;
	int i;

	tc_hits_reset(h);
	for (i = 0; i < h->n; i++)
		fns[i](i);
	for (i = 0; i < h->n; i++) {
		long v = atomic_load(&h->hits[i]);

		if (v == 1)
			mask |= 1UL << i;
		else if (v != 0)
			b |= 1UL << i;
	}
	tc_hits_reset(h);
	if (bad)
		*bad = b;
	return mask;
}

/* ------------------------------------------------------------------ */

notrace struct usft_stats tc_stat(void)
{
	struct usft_stats st;
	int r;

	memset(&st, 0, sizeof(st));
	st.sz = sizeof(st);
	r = usft_stat(&st);
	cr_assert_eq(r, 0, "usft_stat() = %d", r);
	return st;
}

/* ------------------------------------------------------------------ */

struct tc_pool_start_arg {
	struct tc_pool *p;
	int idx;
};

static struct tc_pool_start_arg tc_pool_args[TC_MAX_THREADS];

static notrace void *tc_pool_thread(void *a)
{
	struct tc_pool_start_arg *sa = a;

	atomic_fetch_add(&sa->p->started, 1);
	sa->p->fn(sa->p, sa->idx, sa->p->arg);
	return NULL;
}

notrace int tc_pool_start(struct tc_pool *p, int n, tc_worker_fn fn, void *arg)
{
	int i, r;

	if (n > TC_MAX_THREADS)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	p->n = n;
	p->fn = fn;
	p->arg = arg;
	for (i = 0; i < n; i++) {
		tc_pool_args[i].p = p;
		tc_pool_args[i].idx = i;
		r = pthread_create(&p->tid[i], NULL, tc_pool_thread, &tc_pool_args[i]);
		if (r)
			return -r;
	}
	while (atomic_load(&p->started) < n)
		sched_yield();
	return 0;
}

notrace void tc_pool_stop(struct tc_pool *p)
{
	int i;

	atomic_store(&p->stop, 1);
	for (i = 0; i < p->n; i++)
		pthread_join(p->tid[i], NULL);
}

notrace void tc_pool_wait_iters(struct tc_pool *p, unsigned long more)
{
	unsigned long base[TC_MAX_THREADS];
	int i;

	for (i = 0; i < p->n; i++)
		base[i] = atomic_load(&p->iters[i]);
	for (i = 0; i < p->n; i++)
		while (atomic_load(&p->iters[i]) - base[i] < more)
			sched_yield();
}

notrace double tc_stress_seconds(void)
{
	const char *s = getenv("USFT_STRESS_SECONDS");
	double v;

	if (!s || !*s)
		return 3.0;
	v = strtod(s, NULL);
	return v > 0 ? v : 3.0;
}

notrace double tc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
