// SPDX-License-Identifier: MIT
/*
 * core/ftrace.c - the ops list, registration, record accounting and the
 * code-update engine (kernel/trace/ftrace.c).  Function names follow the
 * kernel so the two can be read side by side; the code is our own.
 *
 * Locking: direct_mutex -> ftrace_lock (recursive here, see docs/design.md:
 * destructors run by an interposed dlclose() may call back into usft) ->
 * text batch.  Readers (callers, list func) take nothing: published ops
 * lists and hashes are immutable and reclaimed through tasks-RCU.
 */
#include <link.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include "core/arch.h"
#include "core/ops_event.h"
#include "core/text.h"

pthread_mutex_t ftrace_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
pthread_mutex_t direct_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
int ftrace_disabled;
int ftrace_enabled = 1;
static int last_ftrace_enabled = 1;
static int ftrace_start_up;

struct ftrace_ops ftrace_list_end = {
	.func = ftrace_stub,
	.flags = FTRACE_OPS_FL_STUB | FTRACE_OPS_FL_INITIALIZED,
};
struct ftrace_ops *ftrace_ops_list = &ftrace_list_end;
struct ftrace_ops *function_trace_op = &ftrace_list_end;
static struct ftrace_ops *set_function_trace_op = &ftrace_list_end;
ftrace_func_t ftrace_trace_function = ftrace_stub;
static ftrace_func_t saved_ftrace_func;
static struct ftrace_ops *removed_ops;
static void ftrace_list_rebuild(void);
/*
 * kernel global_ops: the ops of the top-level function tracer whose hashes
 * ftrace_set_global_filter()/_notrace() edit and which every ops given
 * ftrace_ops_set_global_filter() shares.
 */
static struct ftrace_ops global_ops = {
	.func = ftrace_stub,
	.flags = FTRACE_OPS_FL_INITIALIZED,
	.local_hash = {
		.filter_hash = EMPTY_HASH,
		.notrace_hash = EMPTY_HASH,
		.regex_lock = PTHREAD_MUTEX_INITIALIZER,
	},
	.func_hash = &global_ops.local_hash,
};

struct ftrace_ops *ftrace_global_ops(void)
{
	return &global_ops;
}

enum ftrace_bug_type ftrace_bug_type;
const void *ftrace_expected;

enum {
	FTRACE_UPDATE_CALLS		= (1 << 0),
	FTRACE_DISABLE_CALLS		= (1 << 1),
	FTRACE_UPDATE_TRACE_FUNC	= (1 << 2),
	FTRACE_START_FUNC_RET		= (1 << 3),
	FTRACE_STOP_FUNC_RET		= (1 << 4),
	FTRACE_MAY_SLEEP		= (1 << 5),
};

#define do_for_each_ftrace_op(op, list)				\
	op = smp_load_acquire(&(list));				\
	do

#define while_for_each_ftrace_op(op)				\
	while (likely(op = smp_load_acquire(&(op)->next)) &&	\
	       unlikely((op) != &ftrace_list_end))

void ftrace_stub(unsigned long ip, unsigned long parent_ip,
		 struct ftrace_ops *op, struct ftrace_regs *fregs)
{
}

/* ---- init ---------------------------------------------------------- */

/*
 * fork() while another thread is in the middle of an update: the child would
 * inherit a held ftrace_lock / direct_mutex (owned by a thread that does not
 * exist there) and, with the INT3 protocol, a batch cut in half.  fork waits
 * for the update to finish instead; the child re-initialises the mutexes
 * (the forking thread's tid changed, so it could not unlock them).
 */
void usft_recursive_mutex_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

static void ftrace_fork_prepare(void)
{
	pthread_mutex_lock(&direct_mutex);
	pthread_mutex_lock(&ftrace_lock);
}

static void ftrace_fork_parent(void)
{
	pthread_mutex_unlock(&ftrace_lock);
	pthread_mutex_unlock(&direct_mutex);
}

static void ftrace_fork_child(void)
{
	usft_recursive_mutex_init(&ftrace_lock);
	usft_recursive_mutex_init(&direct_mutex);
}

static pthread_once_t usft_once = PTHREAD_ONCE_INIT;
static int usft_init_ret;
static int usft_inited;

static void usft_do_init(void)
{
	/* ignored in set-uid/set-gid programs (AT_SECURE) */
	const char *env = secure_getenv("USFT_OPTIONS");
	int ret;

	if (env)
		usft_options_parse(env);
	pthread_atfork(ftrace_fork_prepare, ftrace_fork_parent, ftrace_fork_child);
	usft_tramp_atfork_init();	/* after: its prepare runs first */
	usft_tasks_init();
	usft_tramp_alloc_init();
	ret = ftrace_dyn_arch_init();
	if (!ret) {
		pthread_mutex_lock(&ftrace_lock);
		ret = ftrace_records_init();
		pthread_mutex_unlock(&ftrace_lock);
	}
	if (ret)
		pr_err("usft: initialisation failed (%d)\n", ret);
	usft_init_ret = ret;
	smp_store_release(&usft_inited, 1);
}

/* read-only inspection keeps working after the kill switch */
int ftrace_lazy_init_ro(void)
{
	if (!smp_load_acquire(&usft_inited))
		pthread_once(&usft_once, usft_do_init);
	return usft_init_ret;
}

int ftrace_lazy_init(void)
{
	if (!smp_load_acquire(&usft_inited))
		pthread_once(&usft_once, usft_do_init);
	if (ftrace_disabled)
		return -ENODEV;
	return usft_init_ret;
}

USFT_API int usft_init(void)
{
	return usft_err(ftrace_lazy_init());
}

/* ---- kill switch ---------------------------------------------------- */

USFT_API void ftrace_kill(void)
{
	ftrace_disabled = 1;
	ftrace_enabled = 0;
	ftrace_trace_function = ftrace_stub;
	ftrace_update_ftrace_func(ftrace_stub);
}

USFT_API int ftrace_is_dead(void)
{
	return READ_ONCE(ftrace_disabled);
}

static void print_ip_ins(const char *fmt, const unsigned char *p)
{
	char buf[64];
	int n = 0;

	for (int i = 0; i < MCOUNT_INSN_SIZE; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "%s%02x", i ? ":" : "", p[i]);
	pr_err("%s%s\n", fmt, buf);
}

/* kernel ftrace_bug(): report the site and die (no byte is written again) */
void ftrace_bug(int failed, struct dyn_ftrace *rec)
{
	unsigned long ip = rec ? rec->ip : 0;
	const char *name = rec ? ftrace_rec_name(rec) : NULL;

	pr_err("------------[ ftrace bug ]------------\n");
	switch (failed) {
	case -EFAULT:
		pr_err("ftrace faulted on modifying %s (%#lx)\n", name ? name : "?", ip);
		break;
	case -EINVAL:
		pr_err("ftrace failed to modify %s (%#lx)\n", name ? name : "?", ip);
		if (rec)
			print_ip_ins(" actual:   ", (const unsigned char *)ip);
		if (ftrace_expected)
			print_ip_ins(" expected: ", ftrace_expected);
		break;
	case -EPERM:
		pr_err("ftrace faulted on writing %s (%#lx)\n", name ? name : "?", ip);
		break;
	default:
		pr_err("ftrace faulted on unknown error %d at %#lx\n", failed, ip);
	}
	switch (ftrace_bug_type) {
	case FTRACE_BUG_INIT: pr_err("Initializing ftrace call sites\n"); break;
	case FTRACE_BUG_NOP: pr_err("Setting ftrace call site to NOP\n"); break;
	case FTRACE_BUG_CALL: pr_err("Setting ftrace call site to call ftrace function\n"); break;
	case FTRACE_BUG_UPDATE: pr_err("Updating ftrace call site to call a different ftrace function\n"); break;
	default: break;
	}
	if (rec)
		pr_err("ftrace record flags: %lx\n (%lu)%s%s\n", rec->flags, ftrace_rec_count(rec),
		       rec->flags & FTRACE_FL_REGS ? " R" : "  ",
		       rec->flags & FTRACE_FL_TRAMP ? " T" : "  ");
	pr_err("usft: runtime disabled; every further call returns -ENODEV\n");
	ftrace_kill();
}

/* ---- ops list ------------------------------------------------------- */

void ftrace_ops_init(struct ftrace_ops *ops)
{
	if (ops->flags & FTRACE_OPS_FL_INITIALIZED)
		return;
	pthread_mutex_init(&ops->local_hash.regex_lock, NULL);
	if (!ops->local_hash.filter_hash)
		ops->local_hash.filter_hash = EMPTY_HASH;
	if (!ops->local_hash.notrace_hash)
		ops->local_hash.notrace_hash = EMPTY_HASH;
	ops->func_hash = &ops->local_hash;
	ops->flags |= FTRACE_OPS_FL_INITIALIZED;
}

USFT_API void ftrace_ops_set_global_filter(struct ftrace_ops *ops)
{
	if (!ops || (ops->flags & FTRACE_OPS_FL_INITIALIZED))
		return;
	ftrace_ops_init(ops);
	ops->func_hash = &global_ops.local_hash;
}

static void add_ftrace_ops(struct ftrace_ops **list, struct ftrace_ops *ops)
{
	ops->next = *list;
	/* publish ops->next before the head, as rcu_assign_pointer() */
	smp_store_release(list, ops);
}

static int remove_ftrace_ops(struct ftrace_ops **list, struct ftrace_ops *ops)
{
	struct ftrace_ops **p;

	for (p = list; *p != &ftrace_list_end; p = &(*p)->next)
		if (*p == ops)
			break;
	if (*p != ops)
		return -1;
	/* ops->next stays valid: readers may still be walking through it */
	smp_store_release(p, ops->next);
	return 0;
}

ftrace_func_t ftrace_ops_get_func(struct ftrace_ops *ops)
{
	if (ops->flags & (FTRACE_OPS_FL_RECURSION | FTRACE_OPS_FL_RCU))
		return ftrace_ops_assist_func;
	return ops->func;
}

/*
 * Ops that write their own events (core/ops_event.h): a list that only
 * grows, pushed lock-free, read by the arch when it builds a trampoline.
 */
static struct ftrace_ops_event *ops_events;

/* whether @ev is on the list already (pushing it again would make a cycle) */
static bool ops_event_listed(const struct ftrace_ops_event *ev)
{
	for (const struct ftrace_ops_event *e = __atomic_load_n(&ops_events, __ATOMIC_ACQUIRE); e;
	     e = e->next)
		if (e == ev)
			return true;
	return false;
}

USFT_API void ftrace_ops_set_event(struct ftrace_ops_event *ev)
{
	struct ftrace_ops_event *head;

	if (!ev || !ev->ops || ops_event_listed(ev))
		return;
	head = __atomic_load_n(&ops_events, __ATOMIC_ACQUIRE);
	do
		ev->next = head;
	while (!__atomic_compare_exchange_n(&ops_events, &head, ev, true, __ATOMIC_RELEASE,
					    __ATOMIC_ACQUIRE));
}

const struct ftrace_ops_event *ftrace_ops_event_of(const struct ftrace_ops *ops)
{
	for (const struct ftrace_ops_event *e = __atomic_load_n(&ops_events, __ATOMIC_ACQUIRE); e;
	     e = e->next)
		if (e->ops == ops)
			return e;
	return NULL;
}

static void update_ftrace_function(void)
{
	ftrace_func_t func;

	set_function_trace_op = ftrace_ops_list;
	if (ftrace_ops_list == &ftrace_list_end) {
		func = ftrace_stub;
	} else if (ftrace_ops_list->next == &ftrace_list_end &&
		   !(ftrace_ops_list->flags & (FTRACE_OPS_FL_DYNAMIC | FTRACE_OPS_FL_RCU))) {
		func = ftrace_ops_get_func(ftrace_ops_list);
	} else {
		set_function_trace_op = &ftrace_list_end;
		func = ftrace_ops_list_func;
	}
	if (ftrace_trace_function == func)
		return;
	ftrace_trace_function = func;
}

/* "core kernel data": the main executable's writable segments never go away */
static bool is_core_data(const void *p)
{
	struct usft_object *obj = usft_objects;
	unsigned long a = (unsigned long)p;

	if (!obj)
		return false;
	for (unsigned int i = 0; i < obj->nr_segs; i++)
		if ((obj->segs[i].prot & PROT_WRITE) && a >= obj->segs[i].lo &&
		    a < obj->segs[i].hi)
			return true;
	return false;
}

/* ---- hashes and records --------------------------------------------- */

static inline bool skip_record(struct dyn_ftrace *rec)
{
	return (rec->flags & FTRACE_FL_DISABLED) && !(rec->flags & FTRACE_FL_ENABLED);
}

static struct ftrace_ops *ftrace_find_tramp_ops_any_other(struct dyn_ftrace *rec,
							  struct ftrace_ops *op_exclude)
{
	struct ftrace_ops *op;

	for (op = ftrace_ops_list; op != &ftrace_list_end; op = op->next) {
		if (op == op_exclude || !op->trampoline)
			continue;
		if (hash_contains_ip(rec->ip, op->func_hash))
			return op;
	}
	return NULL;
}

static bool test_rec_ops_needs_regs(struct dyn_ftrace *rec)
{
	struct ftrace_ops *op;

	for (op = ftrace_ops_list; op != &ftrace_list_end; op = op->next) {
		if (!(op->flags & FTRACE_OPS_FL_SAVE_REGS))
			continue;
		if (hash_contains_ip(rec->ip, op->func_hash))
			return true;
	}
	return false;
}

/* kernel __ftrace_hash_rec_update(): returns whether any record would change */
static bool __ftrace_hash_rec_update(struct ftrace_ops *ops, bool inc)
{
	struct ftrace_hash *hash, *notrace_hash;
	struct ftrace_page *pg;
	struct dyn_ftrace *rec;
	unsigned long count = 0;
	bool update = false, all = false;

	if (!(ops->flags & FTRACE_OPS_FL_ENABLED))
		return false;
	hash = ops->func_hash->filter_hash;
	notrace_hash = ops->func_hash->notrace_hash;
	if (ftrace_hash_empty(hash))
		all = true;

	do_for_each_ftrace_rec(pg, rec) {
		bool match = false;

		if (skip_record(rec))
			continue;
		if (all) {
			if (!ftrace_lookup_ip(notrace_hash, rec->ip))
				match = true;
		} else if (ftrace_lookup_ip(hash, rec->ip) &&
			   !ftrace_lookup_ip(notrace_hash, rec->ip)) {
			match = true;
		}
		if (!match)
			continue;
		count++;
		if (inc) {
			rec->flags++;
			if (FTRACE_WARN_ON(ftrace_rec_count(rec) == FTRACE_REF_MAX))
				return false;
			if (ops->flags & FTRACE_OPS_FL_DIRECT)
				rec->flags |= FTRACE_FL_DIRECT;
			/* a second user forces the shared caller */
			if (ftrace_rec_count(rec) == 1 && ops->trampoline)
				rec->flags |= FTRACE_FL_TRAMP;
			else
				rec->flags &= ~FTRACE_FL_TRAMP;
			if (ops->flags & FTRACE_OPS_FL_SAVE_REGS)
				rec->flags |= FTRACE_FL_REGS;
		} else {
			if (FTRACE_WARN_ON(ftrace_rec_count(rec) == 0))
				return false;
			rec->flags--;
			if (ops->flags & FTRACE_OPS_FL_DIRECT)
				rec->flags &= ~FTRACE_FL_DIRECT;
			if (ftrace_rec_count(rec) > 0 && (rec->flags & FTRACE_FL_REGS) &&
			    (ops->flags & FTRACE_OPS_FL_SAVE_REGS)) {
				if (!test_rec_ops_needs_regs(rec))
					rec->flags &= ~FTRACE_FL_REGS;
			}
			if (ftrace_rec_count(rec) == 1 &&
			    ftrace_find_tramp_ops_any_other(rec, ops))
				rec->flags |= FTRACE_FL_TRAMP;
			else
				rec->flags &= ~FTRACE_FL_TRAMP;
		}
#ifdef USFT_HAVE_CALL_OPS
		/*
		 * A single ops whose func can be called directly: the site may
		 * call it through its per-site ops literal (arm64 CALL_OPS).
		 */
		if (usft_opts.call_ops && ftrace_rec_count(rec) == 1 &&
		    ftrace_ops_get_func(ops) == ops->func)
			rec->flags |= FTRACE_FL_CALL_OPS;
		else
			rec->flags &= ~FTRACE_FL_CALL_OPS;
#endif
		update |= ftrace_test_record(rec, true) != FTRACE_UPDATE_IGNORE;
		if (!all && count == hash->count)
			return update;
	} while_for_each_ftrace_rec();
	return update;
}

static bool ftrace_hash_rec_enable(struct ftrace_ops *ops)
{
	return __ftrace_hash_rec_update(ops, true);
}

static bool ftrace_hash_rec_disable(struct ftrace_ops *ops)
{
	return __ftrace_hash_rec_update(ops, false);
}

/* Filter changes: every enabled ops sharing the same hashes is updated. */
static void ftrace_hash_rec_update_modify(struct ftrace_ops *ops, bool inc)
{
	struct ftrace_ops *op;

	__ftrace_hash_rec_update(ops, inc);
	if (ops->func_hash != &global_ops.local_hash)
		return;
	for (op = ftrace_ops_list; op != &ftrace_list_end; op = op->next)
		if (op != ops && op->func_hash == ops->func_hash)
			__ftrace_hash_rec_update(op, inc);
}

/* kernel ftrace_check_record() */
static int ftrace_check_record(struct dyn_ftrace *rec, bool enable, bool update)
{
	unsigned long flag = 0;

	ftrace_bug_type = FTRACE_BUG_UNKNOWN;
	if (skip_record(rec))
		return FTRACE_UPDATE_IGNORE;
	if (enable && ftrace_rec_count(rec))
		flag = FTRACE_FL_ENABLED;
	if (flag) {
		if (!(rec->flags & FTRACE_FL_REGS) != !(rec->flags & FTRACE_FL_REGS_EN))
			flag |= FTRACE_FL_REGS;
		if (!(rec->flags & FTRACE_FL_TRAMP) != !(rec->flags & FTRACE_FL_TRAMP_EN))
			flag |= FTRACE_FL_TRAMP;
		if (ftrace_rec_count(rec) == 1) {
			if (!(rec->flags & FTRACE_FL_DIRECT) != !(rec->flags & FTRACE_FL_DIRECT_EN))
				flag |= FTRACE_FL_DIRECT;
			if (!(rec->flags & FTRACE_FL_CALL_OPS) !=
			    !(rec->flags & FTRACE_FL_CALL_OPS_EN))
				flag |= FTRACE_FL_CALL_OPS;
		} else {
			if (rec->flags & FTRACE_FL_DIRECT_EN)
				flag |= FTRACE_FL_DIRECT;
			if (rec->flags & FTRACE_FL_CALL_OPS_EN)
				flag |= FTRACE_FL_CALL_OPS;
		}
	}
	if ((rec->flags & FTRACE_FL_ENABLED) == flag)
		return FTRACE_UPDATE_IGNORE;

	if (flag) {
		flag ^= rec->flags & FTRACE_FL_ENABLED;
		if (update) {
			rec->flags |= FTRACE_FL_ENABLED | FTRACE_FL_TOUCHED;
			if (flag & FTRACE_FL_REGS) {
				if (rec->flags & FTRACE_FL_REGS)
					rec->flags |= FTRACE_FL_REGS_EN;
				else
					rec->flags &= ~FTRACE_FL_REGS_EN;
			}
			if (flag & FTRACE_FL_TRAMP) {
				if (rec->flags & FTRACE_FL_TRAMP)
					rec->flags |= FTRACE_FL_TRAMP_EN;
				else
					rec->flags &= ~FTRACE_FL_TRAMP_EN;
			}
			if (rec->flags & (FTRACE_FL_DIRECT | FTRACE_FL_IPMODIFY))
				rec->flags |= FTRACE_FL_MODIFIED;
			if (flag & FTRACE_FL_DIRECT) {
				if (ftrace_rec_count(rec) == 1 && (rec->flags & FTRACE_FL_DIRECT))
					rec->flags |= FTRACE_FL_DIRECT_EN;
				else
					rec->flags &= ~FTRACE_FL_DIRECT_EN;
			}
			if (flag & FTRACE_FL_CALL_OPS) {
				if (ftrace_rec_count(rec) == 1 && (rec->flags & FTRACE_FL_CALL_OPS))
					rec->flags |= FTRACE_FL_CALL_OPS_EN;
				else
					rec->flags &= ~FTRACE_FL_CALL_OPS_EN;
			}
		}
		if (flag & FTRACE_FL_ENABLED) {
			ftrace_bug_type = FTRACE_BUG_CALL;
			return FTRACE_UPDATE_MAKE_CALL;
		}
		ftrace_bug_type = FTRACE_BUG_UPDATE;
		return FTRACE_UPDATE_MODIFY_CALL;
	}
	if (update) {
		if (!ftrace_rec_count(rec))
			rec->flags &= FTRACE_NOCLEAR_FLAGS;
		else
			rec->flags &= ~(FTRACE_FL_ENABLED | FTRACE_FL_TRAMP_EN |
					FTRACE_FL_REGS_EN | FTRACE_FL_DIRECT_EN |
					FTRACE_FL_CALL_OPS_EN);
	}
	ftrace_bug_type = FTRACE_BUG_NOP;
	return FTRACE_UPDATE_MAKE_NOP;
}

int ftrace_test_record(struct dyn_ftrace *rec, bool enable)
{
	return ftrace_check_record(rec, enable, false);
}

int ftrace_update_record(struct dyn_ftrace *rec, bool enable)
{
	return ftrace_check_record(rec, enable, true);
}

/* ---- which target a site gets (ftrace_get_addr_new()) ---------------- */

unsigned long ftrace_find_rec_direct(unsigned long ip);

static struct ftrace_ops *ftrace_find_tramp_ops_new(struct dyn_ftrace *rec)
{
	struct ftrace_ops *op;

	for (op = ftrace_ops_list; op != &ftrace_list_end; op = op->next)
		if (hash_contains_ip(rec->ip, op->func_hash))
			return op;
	return NULL;
}

static struct ftrace_ops *ftrace_find_tramp_ops_curr(struct dyn_ftrace *rec)
{
	struct ftrace_ops *op;
	unsigned long ip = rec->ip;

	/* an ops being removed that had this rec is the one with the tramp */
	if (removed_ops && removed_ops->trampoline &&
	    hash_contains_ip(ip, &removed_ops->old_hash))
		return removed_ops;
	for (op = ftrace_ops_list; op != &ftrace_list_end; op = op->next) {
		if (!op->trampoline)
			continue;
		/* not attached to any rec yet */
		if (op->flags & FTRACE_OPS_FL_ADDING)
			continue;
		if ((op->flags & FTRACE_OPS_FL_MODIFYING) &&
		    hash_contains_ip(ip, &op->old_hash))
			return op;
		if (!(op->flags & FTRACE_OPS_FL_MODIFYING) &&
		    hash_contains_ip(ip, op->func_hash))
			return op;
	}
	return NULL;
}

/* kernel ftrace_find_unique_ops(): the only ops selecting @rec, or NULL */
struct ftrace_ops *ftrace_find_unique_ops(struct dyn_ftrace *rec)
{
	struct ftrace_ops *op, *found = NULL;

	for (op = ftrace_ops_list; op != &ftrace_list_end; op = op->next) {
		if (!hash_contains_ip(rec->ip, op->func_hash))
			continue;
		if (found)
			return NULL;
		found = op;
	}
	return found;
}

unsigned long ftrace_get_addr_new(struct dyn_ftrace *rec)
{
	struct ftrace_ops *ops;
	unsigned long addr;

	if ((rec->flags & FTRACE_FL_DIRECT) && ftrace_rec_count(rec) == 1) {
		addr = ftrace_find_rec_direct(rec->ip);
		if (addr)
			return addr;
		USFT_WARN_ON(1);
	}
	if (rec->flags & FTRACE_FL_TRAMP) {
		ops = ftrace_find_tramp_ops_new(rec);
		if (FTRACE_WARN_ON(!ops || !ops->trampoline))
			return FTRACE_ADDR;
		return ops->trampoline;
	}
	if (usft_opts.per_callsite_ops)
		return (rec->flags & FTRACE_FL_REGS) ? FTRACE_CALLSITE_REGS_ADDR :
						       FTRACE_CALLSITE_ADDR;
	return (rec->flags & FTRACE_FL_REGS) ? FTRACE_REGS_ADDR : FTRACE_ADDR;
}

unsigned long ftrace_get_addr_curr(struct dyn_ftrace *rec)
{
	struct ftrace_ops *ops;
	unsigned long addr;

	if (rec->flags & FTRACE_FL_DIRECT_EN) {
		addr = ftrace_find_rec_direct(rec->ip);
		if (addr)
			return addr;
		USFT_WARN_ON(1);
	}
	if (rec->flags & FTRACE_FL_TRAMP_EN) {
		ops = ftrace_find_tramp_ops_curr(rec);
		if (FTRACE_WARN_ON(!ops))
			return FTRACE_ADDR;
		return ops->trampoline;
	}
	if (usft_opts.per_callsite_ops)
		return (rec->flags & FTRACE_FL_REGS_EN) ? FTRACE_CALLSITE_REGS_ADDR :
							  FTRACE_CALLSITE_ADDR;
	return (rec->flags & FTRACE_FL_REGS_EN) ? FTRACE_REGS_ADDR : FTRACE_ADDR;
}

/* ---- code update ----------------------------------------------------- */

/* kernel __ftrace_replace_code(): one record, queued in the arch's batch */
static int __ftrace_replace_code(struct dyn_ftrace *rec, bool enable)
{
	unsigned long new_addr = ftrace_get_addr_new(rec);
	/* before ftrace_update_record() changes the _EN bits */
	unsigned long old_addr = ftrace_get_addr_curr(rec);
	int ret;

	switch (ftrace_update_record(rec, enable)) {
	case FTRACE_UPDATE_IGNORE:
		return 0;
	case FTRACE_UPDATE_MAKE_CALL:
		ftrace_bug_type = FTRACE_BUG_CALL;
		ret = ftrace_make_call(rec, new_addr);
		if (!ret)
			usft_counters.nr_enabled++;
		return ret;
	case FTRACE_UPDATE_MAKE_NOP:
		ftrace_bug_type = FTRACE_BUG_NOP;
		ret = ftrace_make_nop(rec, old_addr);
		if (!ret)
			usft_counters.nr_enabled--;
		return ret;
	case FTRACE_UPDATE_MODIFY_CALL:
		ftrace_bug_type = FTRACE_BUG_UPDATE;
		return ftrace_modify_call(rec, old_addr, new_addr);
	}
	return -1;	/* unknown ftrace bug */
}

#ifndef ARCH_HAS_FTRACE_REPLACE_CODE
/*
 * kernel __weak ftrace_replace_code(), in two passes: first every record
 * that will change goes through arch_ftrace_replace_prepare() with nothing
 * written yet (the per-site copies its new target needs are made then; an
 * arch may also check every site there, as x86-64 does), then each record
 * is rewritten.  Writes are queued in the arch's batch and land together in
 * ftrace_arch_code_modify_post_process().
 */
void ftrace_replace_code(int enable)
{
	struct ftrace_page *pg;
	struct dyn_ftrace *rec;
	int failed;

	if (unlikely(ftrace_disabled))
		return;
	do_for_each_ftrace_rec(pg, rec) {
		int update;

		/* an object whose compiler NOPs wait for conversion keeps its refs only */
		if (skip_record(rec) || pg->obj->nops_pending)
			continue;
		update = ftrace_test_record(rec, enable);
		if (update == FTRACE_UPDATE_IGNORE)
			continue;
		failed = arch_ftrace_replace_prepare(rec, update);
		if (failed) {
			ftrace_bug(failed, rec);
			ftrace_expected = NULL;
			return;
		}
	} while_for_each_ftrace_rec();
	do_for_each_ftrace_rec(pg, rec) {
		if (skip_record(rec) || pg->obj->nops_pending)
			continue;
		failed = __ftrace_replace_code(rec, enable);
		if (failed) {
			ftrace_bug(failed, rec);
			ftrace_expected = NULL;
			return;
		}
	} while_for_each_ftrace_rec();
}
#endif

static void ftrace_run_update_code(int command);

static int ftrace_modify_all_code(int command)
{
	int update = command & FTRACE_UPDATE_TRACE_FUNC;
	int err;

	usft_count(nr_updates);
	if (update) {
		/* the list func is right for any mix of ops: switch to it first */
		err = ftrace_update_ftrace_func(ftrace_ops_list_func);
		if (FTRACE_WARN_ON(err))
			return err;
	}
	if (command & FTRACE_UPDATE_CALLS)
		ftrace_replace_code(1);
	else if (command & FTRACE_DISABLE_CALLS)
		ftrace_replace_code(0);
	if (ftrace_disabled)
		return -ENODEV;
	if (update && ftrace_trace_function != ftrace_ops_list_func) {
		WRITE_ONCE(function_trace_op, set_function_trace_op);
		smp_wmb();
		/* every thread must see the op before the func that uses it */
		synchronize_rcu_tasks();
		err = ftrace_update_ftrace_func(ftrace_trace_function);
		if (FTRACE_WARN_ON(err))
			return err;
	}
	return 0;
}

static void ftrace_run_update_code(int command)
{
	int ret = ftrace_arch_code_modify_prepare();

	if (FTRACE_WARN_ON(ret))
		return;
	ftrace_modify_all_code(command);
	ret = ftrace_arch_code_modify_post_process();
	if (ret && ret != -ENODEV && !ftrace_disabled) {
		ftrace_bug_type = FTRACE_BUG_UNKNOWN;
		ftrace_bug(ret, NULL);
	}
}

static void ftrace_startup_enable(int command)
{
	if (saved_ftrace_func != ftrace_trace_function) {
		saved_ftrace_func = ftrace_trace_function;
		command |= FTRACE_UPDATE_TRACE_FUNC;
	}
	if (!command || !ftrace_enabled)
		return;
	ftrace_run_update_code(command);
}

static void ftrace_run_modify_code(struct ftrace_ops *ops, int command,
				   struct ftrace_ops_hash *old_hash)
{
	ops->flags |= FTRACE_OPS_FL_MODIFYING;
	ops->old_hash.filter_hash = old_hash->filter_hash;
	ops->old_hash.notrace_hash = old_hash->notrace_hash;
	ftrace_run_update_code(command);
	ops->old_hash.filter_hash = NULL;
	ops->old_hash.notrace_hash = NULL;
	ops->flags &= ~FTRACE_OPS_FL_MODIFYING;
}

static void ftrace_ops_update_code(struct ftrace_ops *ops, struct ftrace_ops_hash *old_hash)
{
	struct ftrace_ops *op;

	if (!ftrace_enabled)
		return;
	if (ops->flags & FTRACE_OPS_FL_ENABLED) {
		ftrace_run_modify_code(ops, FTRACE_UPDATE_CALLS, old_hash);
		return;
	}
	if (ops->func_hash != &global_ops.local_hash)
		return;
	for (op = ftrace_ops_list; op != &ftrace_list_end; op = op->next)
		if (op->func_hash == &global_ops.local_hash &&
		    (op->flags & FTRACE_OPS_FL_ENABLED)) {
			ftrace_run_modify_code(op, FTRACE_UPDATE_CALLS, old_hash);
			return;
		}
}

/* ---- IPMODIFY (__ftrace_hash_update_ipmodify()) ---------------------- */

static int __ftrace_hash_update_ipmodify(struct ftrace_ops *ops, struct ftrace_hash *old_hash,
					 struct ftrace_hash *new_hash, bool update_target)
{
	struct ftrace_page *pg;
	struct dyn_ftrace *rec, *end = NULL;
	bool is_ipmodify, is_direct;

	if (!(ops->flags & FTRACE_OPS_FL_ENABLED))
		return 0;
	is_ipmodify = ops->flags & FTRACE_OPS_FL_IPMODIFY;
	is_direct = ops->flags & FTRACE_OPS_FL_DIRECT;
	if (!is_ipmodify && !is_direct)
		return 0;
	if (USFT_WARN_ON(is_ipmodify && is_direct))
		return 0;
	/* address-sensitive users may not take "all functions" */
	if (!new_hash || !old_hash)
		return -EINVAL;

	do_for_each_ftrace_rec(pg, rec) {
		bool in_old, in_new;

		if (rec->flags & FTRACE_FL_DISABLED)
			continue;
		in_old = !!ftrace_lookup_ip(old_hash, rec->ip);
		in_new = !!ftrace_lookup_ip(new_hash, rec->ip);
		if (in_old == in_new && !(update_target && in_new))
			continue;
		if (in_new) {
			if (rec->flags & FTRACE_FL_IPMODIFY) {
				int ret;

				if (is_ipmodify) {
					end = rec;
					goto rollback;
				}
				/*
				 * A direct ops entering a site never finds itself
				 * there, except on a retarget (update_target), where
				 * it is still attached while ops_func renegotiates.
				 */
				if (!update_target)
					FTRACE_WARN_ON(rec->flags & FTRACE_FL_DIRECT);
				if (!ops->ops_func)
					return -EBUSY;
				ret = ops->ops_func(ops, rec->ip,
						    FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_SELF);
				if (ret)
					return ret;
			} else if (is_ipmodify) {
				rec->flags |= FTRACE_FL_IPMODIFY;
			}
		} else if (is_ipmodify) {
			rec->flags &= ~FTRACE_FL_IPMODIFY;
		}
	} while_for_each_ftrace_rec();
	return 0;

rollback:
	do_for_each_ftrace_rec(pg, rec) {
		bool in_old, in_new;

		if (rec == end)
			return -EBUSY;
		if (rec->flags & FTRACE_FL_DISABLED)
			continue;
		in_old = !!ftrace_lookup_ip(old_hash, rec->ip);
		in_new = !!ftrace_lookup_ip(new_hash, rec->ip);
		if (in_old == in_new)
			continue;
		if (in_new)
			rec->flags &= ~FTRACE_FL_IPMODIFY;
		else
			rec->flags |= FTRACE_FL_IPMODIFY;
	} while_for_each_ftrace_rec();
	return -EBUSY;
}

static int ftrace_hash_ipmodify_enable(struct ftrace_ops *ops)
{
	struct ftrace_hash *hash = ops->func_hash->filter_hash;

	if (ftrace_hash_empty(hash))
		hash = NULL;
	return __ftrace_hash_update_ipmodify(ops, EMPTY_HASH, hash, false);
}

static void ftrace_hash_ipmodify_disable(struct ftrace_ops *ops)
{
	struct ftrace_hash *hash = ops->func_hash->filter_hash;

	if (ftrace_hash_empty(hash))
		hash = NULL;
	__ftrace_hash_update_ipmodify(ops, hash, EMPTY_HASH, false);
}

static int ftrace_hash_ipmodify_update(struct ftrace_ops *ops, struct ftrace_hash *new_hash)
{
	struct ftrace_hash *old_hash = ops->func_hash->filter_hash;

	if (ftrace_hash_empty(old_hash))
		old_hash = NULL;
	if (ftrace_hash_empty(new_hash))
		new_hash = NULL;
	return __ftrace_hash_update_ipmodify(ops, old_hash, new_hash, false);
}

/* ---- filter moves --------------------------------------------------- */

static int ftrace_hash_move(struct ftrace_ops *ops, int enable, struct ftrace_hash **dst,
			    struct ftrace_hash *src)
{
	struct ftrace_hash *new_hash;
	int ret;

	if ((ops->flags & FTRACE_OPS_FL_IPMODIFY) && !enable)
		return -EINVAL;
	new_hash = __ftrace_hash_move(src);
	if (!new_hash)
		return -ENOMEM;
	if (enable) {
		ret = ftrace_hash_ipmodify_update(ops, new_hash);
		if (ret < 0) {
			free_ftrace_hash(new_hash);
			return ret;
		}
	}
	ftrace_hash_rec_update_modify(ops, false);
	smp_store_release(dst, new_hash);
	ftrace_list_rebuild();
	ftrace_hash_rec_update_modify(ops, true);
	return 0;
}

int ftrace_hash_move_and_update_ops(struct ftrace_ops *ops, struct ftrace_hash **orig_hash,
				    struct ftrace_hash *hash, int enable)
{
	struct ftrace_ops_hash old_hash_ops = {
		.filter_hash = ops->func_hash->filter_hash,
		.notrace_hash = ops->func_hash->notrace_hash,
	};
	struct ftrace_hash *old_hash = *orig_hash;
	int ret;

	if ((ops->flags & FTRACE_OPS_FL_ENABLED) && ftrace_enabled) {
		ret = ftrace_text_check();
		if (ret)
			return ret == -EBUSY ? ret : -EPERM;
	}
	ret = ftrace_hash_move(ops, enable, orig_hash, hash);
	if (!ret) {
		ftrace_ops_update_code(ops, &old_hash_ops);
		free_ftrace_hash_rcu(old_hash);
	}
	return ret;
}

USFT_API void ftrace_free_filter(struct ftrace_ops *ops)
{
	USFT_API_ENTER(busy);

	if (busy) {
		pr_warn("usft: %s() from inside a callback or from a signal handler that "
			"interrupted an update: refused (EDEADLK)\n", __func__);
		return;
	}
	if (!ops || ftrace_lazy_init())
		return;
	ftrace_ops_init(ops);
	if (USFT_WARN_ON(ops->flags & FTRACE_OPS_FL_ENABLED))
		return;
	pthread_mutex_lock(&ftrace_lock);
	if (ops->func_hash->filter_hash != EMPTY_HASH)
		free_ftrace_hash_rcu(ops->func_hash->filter_hash);
	if (ops->func_hash->notrace_hash != EMPTY_HASH)
		free_ftrace_hash_rcu(ops->func_hash->notrace_hash);
	ops->func_hash->filter_hash = EMPTY_HASH;
	ops->func_hash->notrace_hash = EMPTY_HASH;
	ftrace_list_rebuild();
	pthread_mutex_unlock(&ftrace_lock);
}

/* ---- register / unregister ---------------------------------------- */

static void ftrace_trampoline_free(struct ftrace_ops *ops)
{
	if (ops->usft)
		arch_ftrace_trampoline_free(ops);
}

static int __register_ftrace_function(struct ftrace_ops *ops)
{
	if (ops->flags & FTRACE_OPS_FL_DELETED)
		return -EINVAL;
	if (USFT_WARN_ON(ops->flags & FTRACE_OPS_FL_ENABLED))
		return -EBUSY;
	/* x86-64 and arm64 both have WITH_REGS/WITH_ARGS: SAVE_REGS is fine */
	if (!ftrace_enabled && (ops->flags & FTRACE_OPS_FL_PERMANENT))
		return -EBUSY;
	if (!ops->func)
		return -EINVAL;
	if (!is_core_data(ops))
		ops->flags |= FTRACE_OPS_FL_DYNAMIC;
	add_ftrace_ops(&ftrace_ops_list, ops);
	ftrace_list_rebuild();
	ops->saved_func = ops->func;
	arch_ftrace_update_trampoline(ops);
	if (ftrace_enabled)
		update_ftrace_function();
	usft_counters.nr_ops++;
	return 0;
}

static int __unregister_ftrace_function(struct ftrace_ops *ops)
{
	if (USFT_WARN_ON(!(ops->flags & FTRACE_OPS_FL_ENABLED)))
		return -EBUSY;
	if (remove_ftrace_ops(&ftrace_ops_list, ops) < 0)
		return -1;
	ftrace_list_rebuild();
	if (ftrace_enabled)
		update_ftrace_function();
	ops->func = ops->saved_func;
	usft_counters.nr_ops--;
	return 0;
}

/*
 * ftrace_text_check() - may this call patch?  Asked before it changes a
 * record, a hash or the ops list, so that a W^X policy gets -EPERM with
 * everything as it was (usft_text_writable(), on the page of a site).
 * Then the compiler NOPs held back are converted: -EBUSY when a thread
 * could be killed by that (x86-64, gcc's NOPs); @put_back (unregister)
 * goes on without them: those records were never written.
 */
static int __ftrace_text_check(bool put_back)
{
	struct ftrace_page *pg;
	struct dyn_ftrace *rec;

	do_for_each_ftrace_rec(pg, rec) {
		if (!(rec->flags & FTRACE_FL_DISABLED)) {
			int ret = usft_text_writable(rec->ip);

			if (!ret)
				ret = ftrace_arch_text_check();
			if (ret)
				return ret;
			/* the policy (or the blocking thread) went away: first what it held back */
			ret = ftrace_convert_pending_nops();
			return put_back && ret == -EBUSY ? 0 : ret;
		}
	} while_for_each_ftrace_rec();
	return 0;
}

int ftrace_text_check(void)
{
	return __ftrace_text_check(false);
}

int ftrace_startup(struct ftrace_ops *ops, int command)
{
	int ret;

	if (unlikely(ftrace_disabled))
		return -ENODEV;
	ret = ftrace_text_check();
	if (ret)
		return ret;
	ret = __register_ftrace_function(ops);
	if (ret)
		return ret;
	ftrace_start_up++;
	ops->flags |= FTRACE_OPS_FL_ENABLED | FTRACE_OPS_FL_ADDING;
	ret = ftrace_hash_ipmodify_enable(ops);
	if (ret < 0) {
		__unregister_ftrace_function(ops);
		ftrace_start_up--;
		ops->flags &= ~(FTRACE_OPS_FL_ENABLED | FTRACE_OPS_FL_ADDING);
		if (ops->flags & FTRACE_OPS_FL_DYNAMIC)
			ftrace_trampoline_free(ops);
		return ret;
	}
	if (ftrace_hash_rec_enable(ops))
		command |= FTRACE_UPDATE_CALLS;
	ftrace_startup_enable(command);
	if (unlikely(ftrace_disabled)) {
		__unregister_ftrace_function(ops);
		return -ENODEV;
	}
	ops->flags &= ~FTRACE_OPS_FL_ADDING;
	return 0;
}

int ftrace_shutdown(struct ftrace_ops *ops, int command)
{
	struct ftrace_page *pg;
	struct dyn_ftrace *rec;
	int ret;

	if (unlikely(ftrace_disabled))
		return -ENODEV;
	/* the sites cannot be put back: the ops stays registered, in use */
	if ((ops->flags & FTRACE_OPS_FL_ENABLED) && __ftrace_text_check(true))
		return -EPERM;
	ret = __unregister_ftrace_function(ops);
	if (ret)
		return ret;
	ftrace_start_up--;
	USFT_WARN_ON(ftrace_start_up < 0);
	ftrace_hash_ipmodify_disable(ops);
	if (ftrace_hash_rec_disable(ops))
		command |= FTRACE_UPDATE_CALLS;
	ops->flags &= ~FTRACE_OPS_FL_ENABLED;
	if (saved_ftrace_func != ftrace_trace_function) {
		saved_ftrace_func = ftrace_trace_function;
		command |= FTRACE_UPDATE_TRACE_FUNC;
	}
	if (command && ftrace_enabled) {
		ops->flags |= FTRACE_OPS_FL_REMOVING;
		removed_ops = ops;
		ops->old_hash.filter_hash = ops->func_hash->filter_hash;
		ops->old_hash.notrace_hash = ops->func_hash->notrace_hash;
		ftrace_run_update_code(command);
		/* with no ops left every record must be off */
		if (ftrace_ops_list == &ftrace_list_end && !ftrace_disabled) {
			do_for_each_ftrace_rec(pg, rec) {
				if (FTRACE_WARN_ON(rec->flags & ~FTRACE_NOCLEAR_FLAGS)) {
					pr_warn("  %s flags:%lx\n", pg->names[_____i], rec->flags);
					break;
				}
			} while_for_each_ftrace_rec();
		}
		ops->old_hash.filter_hash = NULL;
		ops->old_hash.notrace_hash = NULL;
		removed_ops = NULL;
		ops->flags &= ~FTRACE_OPS_FL_REMOVING;
	}
	/*
	 * The caller may free the ops or its data as soon as we return, and
	 * threads may still be inside its trampoline or callback: wait for
	 * them (kernel: synchronize_rcu_tasks_rude() + synchronize_rcu_tasks()).
	 * The kernel skips the wait for static (non-DYNAMIC) ops because it
	 * costs ~100 ms there; here a grace period costs microseconds, so
	 * usft waits for every ops (docs/design.md) and frees only dynamic
	 * ones' trampolines (static ops keep theirs, as in the kernel).
	 */
	arch_ftrace_trampoline_quiesce(ops);
	synchronize_rcu_tasks();
	if (ops->flags & FTRACE_OPS_FL_DYNAMIC)
		ftrace_trampoline_free(ops);
	return 0;
}

int prepare_direct_functions_for_ipmodify(struct ftrace_ops *ops);
void cleanup_direct_functions_after_ipmodify(struct ftrace_ops *ops);

USFT_API int register_ftrace_function(struct ftrace_ops *ops)
{
	USFT_API_ENTER(busy);
	int ret;

	if (busy)
		return usft_err(busy);
	if (!ops)
		return usft_err(-EINVAL);
	ret = ftrace_lazy_init();
	if (ret)
		return usft_err(ret);
	pthread_mutex_lock(&direct_mutex);
	ftrace_ops_init(ops);
	pthread_mutex_lock(&ftrace_lock);
	ret = ftrace_records_sync();
	if (!ret && !(ops->flags & FTRACE_OPS_FL_ENABLED))
		ret = prepare_direct_functions_for_ipmodify(ops);
	if (!ret)
		ret = ftrace_startup(ops, 0);
	pthread_mutex_unlock(&ftrace_lock);
	pthread_mutex_unlock(&direct_mutex);
	return usft_err(ret);
}

USFT_API int unregister_ftrace_function(struct ftrace_ops *ops)
{
	USFT_API_ENTER(busy);
	int ret;

	if (busy)
		return usft_err(busy);
	if (!ops)
		return usft_err(-EINVAL);
	ret = ftrace_lazy_init();
	if (ret)
		return usft_err(ret);
	pthread_mutex_lock(&direct_mutex);
	pthread_mutex_lock(&ftrace_lock);
	ftrace_records_sync();
	ret = ftrace_shutdown(ops, 0);
	if (!ret)
		cleanup_direct_functions_after_ipmodify(ops);
	pthread_mutex_unlock(&ftrace_lock);
	pthread_mutex_unlock(&direct_mutex);
	/*
	 * An ENABLED ops missing from the list gets the kernel's -1 from
	 * remove_ftrace_ops() (errno EPERM); one that is not ENABLED -EBUSY.
	 */
	return usft_err(ret);
}

/* kernel.ftrace_enabled sysctl */
USFT_API int usft_set_ftrace_enabled(int enabled)
{
	USFT_API_ENTER(busy);
	struct ftrace_ops *op;
	int ret;

	if (busy)
		return usft_err(busy);
	ret = ftrace_lazy_init();
	if (ret)
		return usft_err(ret);
	pthread_mutex_lock(&ftrace_lock);
	enabled = !!enabled;
	if (last_ftrace_enabled == enabled)
		goto out;
	if (!enabled) {
		for (op = ftrace_ops_list; op != &ftrace_list_end; op = op->next)
			if (op->flags & FTRACE_OPS_FL_PERMANENT) {
				ret = -EBUSY;
				goto out;
			}
	}
	ftrace_enabled = enabled;
	last_ftrace_enabled = enabled;
	if (enabled) {
		update_ftrace_function();
		if (ftrace_start_up)
			ftrace_run_update_code(FTRACE_UPDATE_CALLS | FTRACE_UPDATE_TRACE_FUNC);
		else
			ftrace_startup_enable(0);
		saved_ftrace_func = ftrace_trace_function;
	} else {
		ftrace_trace_function = ftrace_stub;
		ftrace_run_update_code(FTRACE_DISABLE_CALLS | FTRACE_UPDATE_TRACE_FUNC);
		saved_ftrace_func = ftrace_stub;
	}
out:
	pthread_mutex_unlock(&ftrace_lock);
	return usft_err(ret);
}

USFT_API int usft_get_ftrace_enabled(void)
{
	return READ_ONCE(ftrace_enabled);
}

/* ---- loaded objects ("modules") --------------------------------------- */

static bool ops_traces_mod(struct ftrace_ops *ops)
{
	return ftrace_hash_empty(ops->func_hash->filter_hash) &&
	       ftrace_hash_empty(ops->func_hash->notrace_hash);
}

static bool ops_references_ip(struct ftrace_ops *ops, unsigned long ip)
{
	if (!(ops->flags & FTRACE_OPS_FL_ENABLED))
		return false;
	if (ops_traces_mod(ops))
		return true;
	if (!ftrace_hash_empty(ops->func_hash->filter_hash) &&
	    !__ftrace_lookup_ip(ops->func_hash->filter_hash, ip))
		return false;
	if (ftrace_lookup_ip(ops->func_hash->notrace_hash, ip))
		return false;
	return true;
}

bool ftrace_ops_references_ip(struct ftrace_ops *ops, unsigned long ip)
{
	return ops_references_ip(ops, ip);
}

/* used by the direct retarget: offer ops_func a renegotiation per site */
int __ftrace_hash_update_ipmodify_direct(struct ftrace_ops *ops)
{
	struct ftrace_hash *hash = ops->func_hash->filter_hash;

	if (ftrace_hash_empty(hash))
		return -EINVAL;
	return __ftrace_hash_update_ipmodify(ops, hash, hash, true);
}

/* kernel ftrace_module_enable() */
void ftrace_object_enable(struct usft_object *obj)
{
	struct ftrace_page *pg;
	unsigned long left = obj->nr_recs;
	bool any = false;

	if (!ftrace_start_up || ftrace_disabled)
		return;
	for (pg = obj->pages; pg && left; pg = pg->next) {
		left -= pg->index;
		for (int i = 0; i < pg->index; i++) {
			struct dyn_ftrace *rec = &pg->records[i];
			struct ftrace_ops *ops;
			unsigned long cnt = 0;

			if (rec->flags & FTRACE_FL_DISABLED)
				continue;
			for (ops = ftrace_ops_list; ops != &ftrace_list_end; ops = ops->next) {
				if (!ops_references_ip(ops, rec->ip))
					continue;
				if (USFT_WARN_ON(ops->flags & (FTRACE_OPS_FL_DIRECT |
							       FTRACE_OPS_FL_IPMODIFY)))
					continue;
				cnt++;
				if (ops->flags & FTRACE_OPS_FL_SAVE_REGS)
					rec->flags |= FTRACE_FL_REGS;
				if (cnt == 1 && ops->trampoline)
					rec->flags |= FTRACE_FL_TRAMP;
				else
					rec->flags &= ~FTRACE_FL_TRAMP;
			}
			rec->flags += cnt;
			any |= cnt > 0;
		}
	}
	if (any && ftrace_enabled)
		ftrace_run_update_code(FTRACE_UPDATE_CALLS);
}

/*
 * Ops whose hashes a dlclose() cleans whether they are registered or not
 * (usft_track_ops_hashes()): the kernel's clear_mod_from_hashes() walks
 * every trace array's ops, not only those on ftrace_ops_list.  ftrace_lock.
 */
static struct ftrace_ops **tracked_ops;
static size_t nr_tracked, tracked_cap;
static void (*unload_hook)(unsigned long lo, unsigned long hi);

USFT_API int usft_track_ops_hashes(struct ftrace_ops *ops, bool track)
{
	int ret = 0;
	size_t i;

	if (!ops)
		return usft_err(-EINVAL);
	pthread_mutex_lock(&ftrace_lock);
	for (i = 0; i < nr_tracked && tracked_ops[i] != ops; i++)
		;
	if (!track) {
		if (i < nr_tracked)
			tracked_ops[i] = tracked_ops[--nr_tracked];
	} else if (i == nr_tracked) {
		if (nr_tracked == tracked_cap) {
			size_t cap = tracked_cap ? 2 * tracked_cap : 16;
			struct ftrace_ops **n = realloc(tracked_ops, cap * sizeof(*n));

			if (!n)
				ret = -ENOMEM;
			else {
				tracked_ops = n;
				tracked_cap = cap;
			}
		}
		if (!ret)
			tracked_ops[nr_tracked++] = ops;
	}
	pthread_mutex_unlock(&ftrace_lock);
	return usft_err(ret);
}

USFT_API void usft_set_unload_hook(void (*hook)(unsigned long lo, unsigned long hi))
{
	pthread_mutex_lock(&ftrace_lock);
	unload_hook = hook;
	pthread_mutex_unlock(&ftrace_lock);
}

static void clear_ip_from_ops(struct ftrace_ops *op, unsigned long ip)
{
	struct ftrace_func_entry *e;

	if (!op->func_hash)
		return;
	e = ftrace_lookup_ip(op->func_hash->filter_hash, ip);
	if (e)
		WRITE_ONCE(e->ip, 0);
	e = ftrace_lookup_ip(op->func_hash->notrace_hash, ip);
	if (e)
		WRITE_ONCE(e->ip, 0);
}

/* kernel clear_mod_from_hashes(): never let these ips match again */
void ftrace_object_release_hashes(struct usft_object *obj)
{
	struct ftrace_page *pg;
	struct ftrace_ops *op;
	unsigned long left = obj->nr_recs;

	ftrace_callsite_release(obj->text_lo, obj->text_hi);
	for (pg = obj->pages; pg && left; pg = pg->next) {
		left -= pg->index;
		for (int i = 0; i < pg->index; i++) {
			unsigned long ip = pg->records[i].ip;

			for (op = ftrace_ops_list; op != &ftrace_list_end; op = op->next)
				clear_ip_from_ops(op, ip);
			for (size_t k = 0; k < nr_tracked; k++)
				clear_ip_from_ops(tracked_ops[k], ip);
		}
	}
	if (unload_hook)
		unload_hook(obj->text_lo, obj->text_hi);
}

/* ---- the list walk's snapshot ------------------------------------------ */

/*
 * ftrace_ops_list_func() walks the same ops, in the same order and with the
 * same tests as the kernel's do_for_each_ftrace_op(), but over a compact
 * array rebuilt (and published RCU-style) whenever the ops list or any
 * ops' hashes change (struct list_snap, core/internal.h).  Each entry
 * carries what the test needs, so a walk touches one cache line per ops
 * instead of chasing op->next, op->func_hash and two hash headers
 * (userspace difference, docs/design.md).
 */
static struct list_snap empty_snap = { .nr = 0 };
static struct list_snap *list_snap = &empty_snap;

static void fill_hash(struct ftrace_hash *h, struct ftrace_func_entry ***b, unsigned char *bits)
{
	if (ftrace_hash_empty(h)) {
		*b = NULL;
		*bits = 0;
	} else {
		*b = h->buckets;
		*bits = (unsigned char)h->size_bits;
	}
}

/* filters of more entries than this test every call against the hash */
#define LIST_BLOOM_MAX	24

static unsigned long fill_bloom(struct ftrace_hash *h)
{
	struct ftrace_func_entry *fe;
	unsigned long bloom = 0, i;

	if (ftrace_hash_empty(h) || h->count > LIST_BLOOM_MAX)
		return ~0UL;
	for_each_hash_entry(h, i, fe)
		bloom |= list_bloom_bit(fe->ip);
	return bloom;
}

void ftrace_free_snap(void *p)
{
	free(p);
}

/* Caller holds ftrace_lock. */
static void ftrace_list_rebuild(void)
{
	struct list_snap *snap, *old;
	struct ftrace_ops *op;
	unsigned int n = 0;

	for (op = ftrace_ops_list; op != &ftrace_list_end; op = op->next)
		if (!(op->flags & FTRACE_OPS_FL_STUB))
			n++;
	snap = malloc(sizeof(*snap) + n * sizeof(snap->ent[0]));
	if (!snap) {
		/*
		 * No memory for the array: publish NULL, and the walk falls
		 * back to the kernel's linked list until the next rebuild.  A
		 * stale array would call ops that are gone.
		 */
		pr_warn("usft: out of memory rebuilding the ops list snapshot; walking the list\n");
		old = list_snap;
		smp_store_release(&list_snap, NULL);
		if (old && old != &empty_snap)
			usft_call_rcu_tasks(ftrace_free_snap, old);
		if (usft_opts.per_callsite_ops)
			ftrace_callsite_rebuild_all();
		return;
	}
	snap->nr = 0;
	for (op = ftrace_ops_list; op != &ftrace_list_end; op = op->next) {
		struct list_ent *e;

		if (op->flags & FTRACE_OPS_FL_STUB)
			continue;
		e = &snap->ent[snap->nr++];
		fill_hash(op->func_hash->filter_hash, &e->filter, &e->filter_bits);
		e->filter_bloom = fill_bloom(op->func_hash->filter_hash);
		fill_hash(op->func_hash->notrace_hash, &e->ntrace, &e->ntrace_bits);
		e->save_regs = ftrace_ops_wants_regs(op);
		e->op = op;
	}
	old = list_snap;
	smp_store_release(&list_snap, snap);
	if (old && old != &empty_snap)
		usft_call_rcu_tasks(ftrace_free_snap, old);
	if (usft_opts.per_callsite_ops)
		ftrace_callsite_rebuild_all();
}

/* ---- the hot path ----------------------------------------------------- */

/* the kernel's walk over the linked list, when no array could be built */
void ftrace_list_walk_slow(unsigned long ip, unsigned long parent_ip,
			   struct ftrace_regs *fregs, bool have_regs)
{
	struct ftrace_ops *op;

	do_for_each_ftrace_op(op, ftrace_ops_list) {
		struct ftrace_ops_hash h;

		if (op->flags & FTRACE_OPS_FL_STUB)
			continue;
		if (ftrace_ops_wants_regs(op) && !have_regs)
			continue;
		h.filter_hash = smp_load_acquire(&op->func_hash->filter_hash);
		h.notrace_hash = smp_load_acquire(&op->func_hash->notrace_hash);
		if (hash_contains_ip(ip, &h))
			READ_ONCE(op->func)(ip, parent_ip, op, fregs);
	} while_for_each_ftrace_op(op);
}

/*
 * ftrace_ops_list_func() - the slow path: every registered ops is tested.
 * Runs in any thread at any time: no allocation, lock, syscall or errno.
 */
void ftrace_ops_list_func(unsigned long ip, unsigned long parent_ip,
			  struct ftrace_ops *ignored, struct ftrace_regs *fregs)
{
	list_snap_call(&list_snap, true, ip, parent_ip, fregs);
}

/* ftrace_ops_assist_func() - recursion protection for one ops' trampoline */
void ftrace_ops_assist_func(unsigned long ip, unsigned long parent_ip,
			    struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	int bit = trace_test_and_set_recursion(ip, parent_ip, TRACE_LIST_START);

	if (bit < 0)
		return;
	op->func(ip, parent_ip, op, fregs);
	trace_clear_recursion(bit);
}

/* ---- small extras ------------------------------------------------------ */

USFT_API int usft_site_bytes(unsigned long ip, unsigned char *buf, size_t len)
{
	extern pthread_rwlock_t usft_objects_lock;
	unsigned long site;
	int ret;

	if (!buf)
		return usft_err(-EINVAL);
	site = ftrace_location(ip);
	if (!site)
		return usft_err(-EINVAL);
	/* usable from callbacks: no ftrace_lock (see records.c) */
	pthread_rwlock_rdlock(&usft_objects_lock);
	ret = lookup_rec(site, site) ? arch_ftrace_site_bytes(site, buf, len) : -EINVAL;
	pthread_rwlock_unlock(&usft_objects_lock);
	return ret < 0 ? usft_err(ret) : ret;
}
