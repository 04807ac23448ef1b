/* SPDX-License-Identifier: MIT */
/*
 * tests/common/test_common.h - helpers shared by the conformance and stress
 * suites: traced-function attributes, site-byte checks, counting ops, a
 * per-site hit table and a small thread pool.
 *
 * This library is never built with the patch flags, so nothing in it is a
 * site; its callbacks are marked notrace anyway so they may be copied into
 * instrumented files.
 */
#ifndef USFT_TEST_COMMON_H
#define USFT_TEST_COMMON_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdbool.h>
#include <string.h>
#include <pthread.h>

#include <criterion/criterion.h>

#include <usft/ftrace.h>
#include <usft/usft.h>

/*
 * TRACEE - attributes for a function that tests patch: never inlined, never
 * cloned or merged with an identical body (gcc noipa), so it keeps exactly
 * one site and every call reaches it.  Bodies should also contain
 * TRACEE_BODY() so no call is optimised away.
 */
#if defined(__clang__)
#define TRACEE __attribute__((noinline, used))
#else
#define TRACEE __attribute__((noinline, noipa, used))
#endif
#define TRACEE_BODY() asm volatile("" ::: "memory")

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif

#define TC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* x86-64 site encodings */
#if defined(__aarch64__)
/* arm64: the BL slot; "nop5" is the disabled state NOP (d503201f), a call is BL */
#define TC_SITE_SIZE 4
#define TC_IS_CALL_BYTES(b) (((b)[3] & 0xfc) == 0x94)
#else
#define TC_SITE_SIZE 5
#define TC_IS_CALL_BYTES(b) ((b)[0] == 0xe8)
#endif
extern const unsigned char tc_nop5[TC_SITE_SIZE];	/* 0f 1f 44 00 00 */

/* The uniform traced-function shape most tests use. */
typedef long (*tc_fn_t)(long x);

/* ------------------------------------------------------------------ */
/* Site bytes                                                          */

/** tc_site() - ftrace_location() of a function pointer. */
unsigned long tc_site(const void *fn);

/**
 * tc_run_child() - run @fn in a forked child (60 s alarm) and wait for it.
 * Return: its exit status, or 128 + the signal that killed it.
 */
int tc_run_child(int (*fn)(void));

/** tc_read_site() - usft_site_bytes() into @buf (5 bytes); return its result. */
int tc_read_site(const void *fn, unsigned char buf[TC_SITE_SIZE]);

/** tc_fmt_bytes() - "xx xx xx xx xx" into @out (>= 16 bytes). */
const char *tc_fmt_bytes(const unsigned char *b, size_t n, char *out);

/** tc_is_nop5() / tc_is_call() - classify the current bytes of @fn's site. */
bool tc_is_nop5(const void *fn);
bool tc_is_call(const void *fn);

/** tc_call_target() - target of the e8 at @fn's site, or 0 if not a call. */
unsigned long tc_call_target(const void *fn);
#if !defined(__aarch64__)
/** tc_branch_target() - x86-64: target of the @op (e8 call, e9 jmp) rel32 at @fn's site, or 0. */
unsigned long tc_branch_target(const void *fn, unsigned char op);
#endif

#define expect_nop5(fn)                                                        \
	do {                                                                   \
		unsigned char _b[TC_SITE_SIZE];                                \
		char _s[32];                                                   \
		int _r = tc_read_site((const void *)(fn), _b);                 \
		cr_assert_eq(_r, TC_SITE_SIZE, "usft_site_bytes(%s) = %d",     \
			     #fn, _r);                                         \
		cr_assert(memcmp(_b, tc_nop5, TC_SITE_SIZE) == 0,              \
			  "site of %s: expected nop5 0f 1f 44 00 00, got %s",  \
			  #fn, tc_fmt_bytes(_b, TC_SITE_SIZE, _s));            \
	} while (0)

#define expect_call(fn)                                                        \
	do {                                                                   \
		unsigned char _b[TC_SITE_SIZE];                                \
		char _s[32];                                                   \
		int _r = tc_read_site((const void *)(fn), _b);                 \
		cr_assert_eq(_r, TC_SITE_SIZE, "usft_site_bytes(%s) = %d",     \
			     #fn, _r);                                         \
		cr_assert(TC_IS_CALL_BYTES(_b),                                \
			  "site of %s: expected call e8 rel32, got %s", #fn,   \
			  tc_fmt_bytes(_b, TC_SITE_SIZE, _s));                 \
	} while (0)

/* Snapshot / compare the bytes of many sites (kill-switch tests). */
struct tc_snapshot {
	int n;
	const void *fn[64];
	unsigned char bytes[64][TC_SITE_SIZE];
};
void tc_snapshot_take(struct tc_snapshot *s, const void *const *fns, int n);
/** tc_snapshot_diff() - index of the first site whose bytes changed, or -1. */
int tc_snapshot_diff(const struct tc_snapshot *s);

/**
 * tc_poke_text() - write @len bytes at @addr in program text (mprotect RWX,
 * memcpy, back to R-X).  Return 0 or -errno.  Used to make a site "foreign".
 */
int tc_poke_text(unsigned long addr, const void *bytes, size_t len);

/* ------------------------------------------------------------------ */
/* Ops helpers                                                          */

/*
 * Attribute flags: what a caller may set (before registration).  Every other
 * bit (ENABLED, DYNAMIC, INITIALIZED, ALLOC_TRAMP, ...) belongs to the
 * runtime and must survive between registrations of the same ops.
 */
#define TC_ATTR_FLAGS                                                          \
	(FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_SAVE_REGS_IF_SUPPORTED |      \
	 FTRACE_OPS_FL_RECURSION | FTRACE_OPS_FL_IPMODIFY |                    \
	 FTRACE_OPS_FL_PERMANENT | FTRACE_OPS_FL_RCU)

/** tc_ops_set_attr() - replace the attribute flags, keep the runtime's bits. */
static inline notrace void tc_ops_set_attr(struct ftrace_ops *ops, unsigned long attr)
{
	ops->flags = (ops->flags & ~TC_ATTR_FLAGS) | attr;
}

/** tc_set_filter() / tc_set_notrace() - string wrappers (len = strlen). */
int tc_set_filter(struct ftrace_ops *ops, const char *s, int reset);
int tc_set_notrace(struct ftrace_ops *ops, const char *s, int reset);

/**
 * struct tc_counter - an ops that counts its callbacks, remembers the last
 * ip/parent_ip and, for SAVE_REGS ops, checks the regs.  tc_counter_func is
 * notrace.
 */
struct tc_counter {
	struct ftrace_ops ops;
	atomic_long count;
	atomic_long no_regs;		/* SAVE_REGS ops got NULL regs */
	atomic_long bad_regs_ip;	/* regs->ip != ip + 5 */
	_Atomic unsigned long last_ip;
	_Atomic unsigned long last_parent;
};
/* The init helpers start a fresh ops: they refuse (cr_assert) an ops the
 * runtime has already initialised, which must not be wiped. */
void tc_counter_init(struct tc_counter *c, unsigned long flags);
void tc_counter_func(unsigned long ip, unsigned long parent_ip,
		     struct ftrace_ops *op, struct ftrace_regs *fregs);
static inline notrace long tc_count(struct tc_counter *c)
{
	return atomic_load(&c->count);
}

/**
 * struct tc_hits - an ops counting callbacks per site for a fixed table of
 * functions; callbacks on any other site go to @other.
 */
#define TC_MAX_FUNCS 48
struct tc_hits {
	struct ftrace_ops ops;
	int n;
	unsigned long site[TC_MAX_FUNCS];
	atomic_long hits[TC_MAX_FUNCS];
	atomic_long other;
	atomic_long bad_op;
};
void tc_hits_init(struct tc_hits *h, const tc_fn_t *fns, int n,
		  unsigned long flags);
void tc_hits_reset(struct tc_hits *h);
void tc_hits_func(unsigned long ip, unsigned long parent_ip,
		  struct ftrace_ops *op, struct ftrace_regs *fregs);

/**
 * tc_hits_mask() - call every function of the table once (argument i) and
 * return the bit mask of table entries that got exactly one hit; @bad is set
 * to a mask of entries that got a count other than 0 or 1.  Resets counts
 * before and after.
 */
unsigned long tc_hits_mask(struct tc_hits *h, const tc_fn_t *fns,
			   unsigned long *bad);

/* ------------------------------------------------------------------ */
/* Statistics                                                           */

/** tc_stat() - usft_stat() with sz set; cr_asserts on failure. */
struct usft_stats tc_stat(void);

/* ------------------------------------------------------------------ */
/* Threads                                                              */

struct tc_pool;
typedef void (*tc_worker_fn)(struct tc_pool *p, int idx, void *arg);

#define TC_MAX_THREADS 16
struct tc_pool {
	int n;
	pthread_t tid[TC_MAX_THREADS];
	atomic_int stop;
	atomic_int started;
	atomic_ulong iters[TC_MAX_THREADS];	/* workers bump these */
	atomic_ulong errors;			/* workers bump on wrong results */
	tc_worker_fn fn;
	void *arg;
};

/** tc_pool_start() - start @n threads running @fn(p, i, arg); returns once
 * every thread has started. */
int tc_pool_start(struct tc_pool *p, int n, tc_worker_fn fn, void *arg);
/** tc_pool_stop() - set stop and join. */
void tc_pool_stop(struct tc_pool *p);
static inline notrace bool tc_pool_should_stop(struct tc_pool *p)
{
	return atomic_load_explicit(&p->stop, memory_order_relaxed) != 0;
}
/** tc_pool_wait_iters() - block (yielding) until every worker has done at
 * least @more iterations beyond what it had done at the call. */
void tc_pool_wait_iters(struct tc_pool *p, unsigned long more);

/** tc_stress_seconds() - USFT_STRESS_SECONDS, default 3. */
double tc_stress_seconds(void);
/** tc_now() - monotonic seconds. */
double tc_now(void);

#endif /* USFT_TEST_COMMON_H */
