/* SPDX-License-Identifier: MIT */
/*
 * core/internal.h - declarations shared by the core's files (the analogue of
 * kernel/trace/ftrace_internal.h and the private parts of trace.h).
 */
#ifndef USFT_CORE_INTERNAL_H
#define USFT_CORE_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <usft/ftrace.h>
#include <usft/usft.h>
#include "compat/compiler.h"
#include "elf/elf.h"

/* ---- logging (log.c) ---------------------------------------------- */
void usft_log(enum usft_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define pr_err(...)	usft_log(USFT_LOG_ERR, __VA_ARGS__)
#define pr_warn(...)	usft_log(USFT_LOG_WARN, __VA_ARGS__)
#define pr_info(...)	usft_log(USFT_LOG_INFO, __VA_ARGS__)
#define pr_debug(...)	usft_log(USFT_LOG_DEBUG, __VA_ARGS__)

/* FTRACE_WARN_ON: log once per call site and kill the runtime, as the kernel. */
void ftrace_kill(void);
struct ftrace_ops *ftrace_global_ops(void);
#define FTRACE_WARN_ON(cond) ({						\
	bool __c = !!(cond);						\
	if (unlikely(__c)) {						\
		pr_err("usft: WARNING at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		ftrace_kill();						\
	}								\
	__c; })
#define USFT_WARN_ON(cond) ({						\
	bool __c = !!(cond);						\
	if (unlikely(__c))						\
		pr_warn("usft: warning at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
	__c; })

/* Public entry points return -E and set errno (libbpf_err idiom). */
static inline int usft_err(int ret)
{
	if (ret < 0)
		errno = -ret;
	return ret;
}

/*
 * usft_opts_valid() - libbpf's OPTS_VALID() (libbpf_validate_opts() in
 * tools/lib/bpf/libbpf_internal.h) for a caller's option struct of @user_sz
 * bytes of which this library knows the first @known_sz: the size covers at
 * least the first @min_sz bytes, and every byte past what this library knows
 * is zero.  A newer caller asking for something this library would silently
 * ignore is refused; one that leaves the new fields zero is served.
 */
static inline bool usft_opts_valid(const void *opts, size_t user_sz, size_t min_sz,
				   size_t known_sz)
{
	const unsigned char *p = opts;
	size_t i;

	if (user_sz < min_sz)
		return false;
	for (i = known_sz; i < user_sz; i++)
		if (p[i])
			return false;
	return true;
}

/* ---- records (records.c) ------------------------------------------ */

/* kernel include/linux/ftrace.h: record flags above a 19-bit ref count */
#define FTRACE_REF_MAX_SHIFT	19
#define FTRACE_REF_MAX		((1UL << FTRACE_REF_MAX_SHIFT) - 1)
enum {
	FTRACE_FL_ENABLED	= (1UL << 31),
	FTRACE_FL_REGS		= (1UL << 30),
	FTRACE_FL_REGS_EN	= (1UL << 29),
	FTRACE_FL_TRAMP		= (1UL << 28),
	FTRACE_FL_TRAMP_EN	= (1UL << 27),
	FTRACE_FL_IPMODIFY	= (1UL << 26),
	FTRACE_FL_DISABLED	= (1UL << 25),
	FTRACE_FL_DIRECT	= (1UL << 24),
	FTRACE_FL_DIRECT_EN	= (1UL << 23),
	FTRACE_FL_CALL_OPS	= (1UL << 22),
	FTRACE_FL_CALL_OPS_EN	= (1UL << 21),
	FTRACE_FL_TOUCHED	= (1UL << 20),
	FTRACE_FL_MODIFIED	= (1UL << 19),
};
#define FTRACE_NOCLEAR_FLAGS	(FTRACE_FL_DISABLED | FTRACE_FL_TOUCHED | FTRACE_FL_MODIFIED)
#define ftrace_rec_count(rec)	((rec)->flags & FTRACE_REF_MAX)

struct dyn_ftrace {
	unsigned long ip;	/* the patched instruction */
	unsigned long flags;
};

struct usft_object;

/* kernel struct ftrace_page; names[] parallels records[] (kallsyms stand-in) */
#define ENTRIES_PER_PAGE	256
struct ftrace_page {
	struct ftrace_page *next;
	struct dyn_ftrace *records;
	const char **names;
	int index;
	int size;
	struct usft_object *obj;
};

/*
 * Trampoline memory in branch reach of all of an object's text, and the
 * copies of the arch's two shared callers in it (x86-64: ftrace_caller and
 * ftrace_regs_caller; arm64: ftrace_caller and ftrace_caller_ops), made on
 * first use by usft_object_callers().
 */
struct usft_obj_callers {
	struct usft_window *w;
	unsigned long caller[2];	/* arch_ftrace_make_caller(w, 0 / 1) */
};

struct usft_segment {
	unsigned long lo, hi;	/* runtime addresses, page aligned */
	int prot;		/* PROT_* from p_flags */
};

#define USFT_MAX_SEGS 8
/* One loaded object with a site table (kernel: core kernel or a module). */
struct usft_object {
	struct usft_object *next;
	char *path;
	unsigned long bias;
	unsigned long text_lo, text_hi;	/* executable range */
	struct usft_segment segs[USFT_MAX_SEGS];
	unsigned int nr_segs;
	struct usft_elf_info elf;
	struct ftrace_page *pages;	/* first page of this object */
	struct ftrace_page *last_page;
	unsigned long nr_recs;
	struct usft_obj_callers *callers;	/* trampoline memory near this text */
	bool seen;			/* mark for the dl_iterate_phdr sweep */
	bool nops_pending;		/* a W^X policy kept its compiler NOPs unconverted */
	/*
	 * x86-64: the link-time starts of the functions that take no vector
	 * argument (elf/dwarf.h; GCC clones left out), read once, the first
	 * time a site here may call a per-ops copy, and kept as long as the
	 * object: a site's answer never changes.
	 */
	unsigned long *novec;
	size_t nr_novec, novec_cursor;
	bool novec_read;
};

extern struct ftrace_page *ftrace_pages_start;
extern struct usft_object *usft_objects;

#define do_for_each_ftrace_rec(pg, rec)					\
	for (pg = ftrace_pages_start; pg; pg = pg->next) {		\
		int _____i;						\
		for (_____i = 0; _____i < pg->index; _____i++) {	\
			rec = &pg->records[_____i];

#define while_for_each_ftrace_rec()		\
		}				\
	}

struct dyn_ftrace *lookup_rec(unsigned long start, unsigned long end);
struct ftrace_page *ftrace_rec_page(const struct dyn_ftrace *rec);
const char *ftrace_rec_name(const struct dyn_ftrace *rec);
int ftrace_records_init(void);
/* Re-scan loaded objects (dlopen/dlclose); caller holds ftrace_lock. */
int ftrace_records_sync(void);
void ftrace_release_object(struct usft_object *obj);
/* the object's "module" name for :mod: and tracefs ("main" for the executable) */
const char *ftrace_object_modname(const struct usft_object *obj, char *name, size_t len);
unsigned long ftrace_nr_records(void);
int ftrace_site_state(unsigned long ip);
/*
 * usft_object_of() - the loaded object whose text holds @ip, NULL if none;
 * usft_main_object() - the first object with sites (the main executable).
 * Caller holds ftrace_lock or usft_objects_lock.
 */
struct usft_object *usft_object_of(unsigned long ip);
struct usft_object *usft_main_object(void);
/*
 * usft_object_callers() - the near window and shared caller copies of the
 * object whose text holds @ip, made on first use.  NULL: @ip is in no
 * object, or no trampoline memory is in reach (logged).  ftrace_lock held.
 */
struct usft_obj_callers *usft_object_callers(unsigned long ip);

/* ---- trampoline memory policy (tramp_alloc.c, over mem/execmem.c) --- */
/* register the reclaim check with mem/ (once, at initialisation) */
void usft_tramp_alloc_init(void);
/*
 * usft_execmem_reserve() - @len bytes placed per tramp_placement near
 * @near_ip (0: the main executable), nothing written; ftrace_lock held.
 * Return: the address (and *@wp) or 0.
 */
unsigned long usft_execmem_reserve(unsigned long near_ip, size_t len, struct usft_window **wp);
/* fill reserved memory (inside a text window, then sync); Return: 0 or -EPERM */
int usft_execmem_write(unsigned long addr, const void *code, size_t len);
/* usft_execmem_reserve() + usft_execmem_write(); ftrace_lock held */
unsigned long usft_execmem_place(const void *code, size_t len, unsigned long near_ip,
				 struct usft_window **wp);

/* ---- hashes (hash.c) ---------------------------------------------- */
#define FTRACE_HASH_DEFAULT_BITS	10
#define FTRACE_HASH_MAX_BITS		12
#define FTRACE_HASH_FL_MOD		(1 << 0)

struct ftrace_hash {
	unsigned long size_bits;
	struct ftrace_func_entry **buckets;
	unsigned long count;
	unsigned long flags;
};

extern struct ftrace_hash empty_hash;
#define EMPTY_HASH (&empty_hash)

/*
 * kernel ftrace_hash_empty(): a filter hash that only waits for a cached
 * ":mod:" (FTRACE_HASH_FL_MOD, no entries) is not empty: it selects nothing
 */
static inline bool ftrace_hash_empty(struct ftrace_hash *hash)
{
	return !hash || !(hash->count || (hash->flags & FTRACE_HASH_FL_MOD));
}

static inline unsigned long ftrace_hash_key(unsigned long ip, unsigned long bits)
{
	return bits ? (ip * 0x61c8864680b583ebUL) >> (64 - bits) : 0;
}

/* Lock-free reader: safe on a published (immutable) hash. */
static inline struct ftrace_func_entry *
__ftrace_lookup_ip(struct ftrace_hash *hash, unsigned long ip)
{
	struct ftrace_func_entry *e;

	e = READ_ONCE(hash->buckets[ftrace_hash_key(ip, hash->size_bits)]);
	for (; e; e = READ_ONCE(e->hnext))
		if (e->ip == ip)
			return e;
	return NULL;
}

static inline struct ftrace_func_entry *
ftrace_lookup_ip(struct ftrace_hash *hash, unsigned long ip)
{
	if (ftrace_hash_empty(hash))
		return NULL;
	return __ftrace_lookup_ip(hash, ip);
}

struct ftrace_func_entry *add_hash_entry(struct ftrace_hash *hash, unsigned long ip);
void remove_hash_entry(struct ftrace_hash *hash, struct ftrace_func_entry *entry);
void free_hash_entry(struct ftrace_hash *hash, struct ftrace_func_entry *entry);
struct ftrace_hash *alloc_and_copy_ftrace_hash(int size_bits, struct ftrace_hash *hash);
struct ftrace_hash *__ftrace_hash_move(struct ftrace_hash *src);
void ftrace_hash_clear(struct ftrace_hash *hash);
unsigned long ftrace_hash_count(struct ftrace_hash *hash);
/* Free after a tasks grace period (call_rcu_tasks analogue). */
void free_ftrace_hash_rcu(struct ftrace_hash *hash);

#define for_each_hash_entry(hash, i, e)					\
	for (i = 0; (hash)->buckets && i < (1UL << (hash)->size_bits); i++) \
		for (e = (hash)->buckets[i]; e; e = e->hnext)

/* ---- filters (filter.c) ----------------------------------------- */
/* shell-style glob as the kernel glob_match(): *, ?, [a-z], [!x], \\ escapes */
bool usft_glob_match(const char *pat, const char *str);
/*
 * usft_demangle() - @name demangled by the process's __cxa_demangle()
 * (libstdc++, looked up when first needed: a C program has none and gets
 * NULL), malloc'd; @full false leaves the parameter list and a template's
 * return type out ("ns::Shape::area", as uftrace shows).  NULL: not a C++
 * name, no demangler, or out of memory.
 */
char *usft_demangle(const char *name, bool full);

/* ---- tasks RCU and recursion (rcu_tasks.c, recursion.c) ------------ */

/*
 * Per-thread state, initial-exec TLS.  ftrace_caller and every trampoline
 * increment @nest on entry and decrement it on exit (and bump @gen when it
 * drops to 0): that is what a tasks grace period waits on.  The layout is
 * shared with the assembly (USFT_TASK_* in arch code).
 */
/* usft_task.state; the entry code of callers and trampolines tests for 0 */
enum usft_task_state {
	USFT_TASK_UNKNOWN	= 0,	/* not registered: the entry code calls usft_task_register() */
	USFT_TASK_REGISTERING	= 1,
	USFT_TASK_REGISTERED	= 2,
};

struct usft_task {
	unsigned long nest;
	unsigned long gen;
	unsigned long recursion;	/* trace_recursion bits */
	int state;			/* enum usft_task_state */
	int sig_depth;			/* nested signal handlers (context level) */
	int api_depth;			/* update-lock API calls in progress (usft_api_enter) */
	int in_tramp_prog;		/* inside a trampoline callback (bpf_jit.c) */
	/*
	 * Trampoline images whose original function this thread is inside
	 * (the kernel's image percpu_ref, kept per thread without atomics).
	 * Past USFT_ORIG_MAX only the depth is counted.
	 */
	unsigned long orig_depth;
	unsigned long orig_stack[16];
	/*
	 * Bit d: the signal handler at depth d interrupted this thread in
	 * trampoline memory (core/signal.c); a reclaim scan (core/tramp_alloc.c)
	 * must not trust the PC it sees then.  Not read by assembly.
	 */
	unsigned long tramp_irq;
	/*
	 * x86-64 keeps its tasks-RCU span in three counters instead of
	 * nest/gen: entry increments @span_in, exit increments @span_out and
	 * then bumps @span_gen if that closed the outermost level.  The same
	 * information (inside: span_in != span_out), but no instruction reads
	 * what the one before it wrote to the same word, so a traced call is
	 * not held up by a chain of store-to-load forwarding through one
	 * counter (docs/design.md).  arm64 keeps nest/gen.
	 */
	unsigned long span_in;
	unsigned long span_out;
	unsigned long span_gen;
	/*
	 * The tasks registry (rcu_tasks.c): a new thread pushes itself on a
	 * lock-free stack (@incoming), grace periods move it to the list
	 * (@reg_next/@reg_prev, under the registry lock).  Not read by assembly.
	 */
	struct usft_task *incoming;
	struct usft_task *reg_next, *reg_prev;
	bool listed;
	int api_sig_depth;		/* sig_depth of the outermost API call */
	int fault_mask;			/* SIGSEGV/SIGBUS open, blocked or unknown (core/nofault.c) */
};
#define USFT_ORIG_MAX		16
#define USFT_TASK_NEST		0
#define USFT_TASK_GEN		8
#define USFT_TASK_STATE		24
#define USFT_TASK_IN_PROG	36
#define USFT_TASK_ORIG_DEPTH	40
#define USFT_TASK_ORIG_STACK	48
#define USFT_TASK_SPAN_IN	184
#define USFT_TASK_SPAN_OUT	192
#define USFT_TASK_SPAN_GEN	200

extern __thread struct usft_task usft_task;

/*
 * The traced call a function probe's callback runs for (probe.c sets it
 * around probe_ops->func): stack_trace_save() starts its walk there
 * (stacktrace.c), past usft's own frames.
 */
struct usft_stack_ctx {
	struct ftrace_regs *fregs;
	unsigned long ip, parent_ip;
};
extern __thread struct usft_stack_ctx *usft_stack_ctx __attribute__((tls_model("initial-exec")));

/* usft_span_enter/exit/inside(): core/arch.h */

/*
 * usft_api_enter() - start of a public call that takes the update locks
 * (and may wait for a grace period or a rendezvous).  -EDEADLK when made
 * from inside a callback or trampoline (an update holding the locks may be
 * waiting for this very thread to leave it) or from a signal handler that
 * interrupted such a call on this thread (the recursive update lock would
 * let it into a half-done update).  The kernel forbids both too (a mutex
 * in atomic context, lockdep); docs/design.md.  Calls nested on the same
 * context (an ops_func calling modify_ftrace_direct_nolock()) pass.
 */
int usft_api_enter(void);

static __always_inline void usft_api_leave(int *entered)
{
	barrier();
	if (!*entered)
		usft_task.api_depth--;
}

/* int err = the result of usft_api_enter(); the call is left when err goes out of scope */
#define USFT_API_ENTER(err) \
	int err __attribute__((cleanup(usft_api_leave))) = usft_api_enter()

void usft_task_register(void);
void usft_tasks_init(void);
void synchronize_rcu_tasks(void);
void usft_call_rcu_tasks(void (*fn)(void *), void *ptr);
void usft_rcu_tasks_barrier(void);
unsigned long usft_task_tpoff(void);
/* is some thread inside the original function of image @im? */
bool usft_tasks_in_original(unsigned long im);

/* recursion.c: kernel trace_recursion.h contexts */
enum {
	TRACE_FTRACE_START = 0,
	TRACE_LIST_START = 5,
};
enum {
	TRACE_CTX_NMI,
	TRACE_CTX_IRQ,
	TRACE_CTX_SOFTIRQ,
	TRACE_CTX_NORMAL,
	TRACE_CTX_TRANSITION,
};
int trace_test_and_set_recursion(unsigned long ip, unsigned long pip, int start);
void trace_clear_recursion(int bit);
/* around libusft's own work in a program thread (usft_set_notrace_hook()) */
void usft_notrace_begin(void);
void usft_notrace_end(void);
struct sigaction;
int usft_real_sigaction(int sig, const struct sigaction *act, struct sigaction *oact);
int usft_claim_signal(int sig, const struct sigaction *handler, struct sigaction *chain);
/* usft_claim_signal() for @fn, carrying the program handler's mask and stack flags */
int usft_claim_signal_mirrored(int sig, void (*fn)(int, siginfo_t *, void *),
			       struct sigaction *chain);
bool usft_run_handler(const struct sigaction *a, int sig, siginfo_t *si, void *uc);
/* core/nofault.c: a handler returned; the thread's mask is @uc's again */
void usft_fault_mask_restored(const void *uc);
extern int usft_nr_tramp_irq;

/* ---- the ftrace core (ftrace.c) ----------------------------------- */
extern pthread_mutex_t ftrace_lock;
/* a W^X policy refuses text writes now: -EPERM, before anything changes (ftrace.c) */
int ftrace_text_check(void);
/* the objects whose NOP conversion a W^X policy held back, now (records.c) */
int ftrace_convert_pending_nops(void);
extern pthread_mutex_t direct_mutex;
void usft_recursive_mutex_init(pthread_mutex_t *m);
void usft_tramp_atfork_init(void);
extern int ftrace_disabled;
extern int ftrace_enabled;
extern struct ftrace_ops *ftrace_ops_list;
extern struct ftrace_ops ftrace_list_end;
extern struct ftrace_ops *function_trace_op;
extern ftrace_func_t ftrace_trace_function;

void ftrace_stub(unsigned long ip, unsigned long parent_ip,
		 struct ftrace_ops *op, struct ftrace_regs *fregs);
void ftrace_ops_list_func(unsigned long ip, unsigned long parent_ip,
			  struct ftrace_ops *op, struct ftrace_regs *fregs);
void ftrace_ops_assist_func(unsigned long ip, unsigned long parent_ip,
			    struct ftrace_ops *op, struct ftrace_regs *fregs);
ftrace_func_t ftrace_ops_get_func(struct ftrace_ops *ops);

enum ftrace_bug_type {
	FTRACE_BUG_UNKNOWN,
	FTRACE_BUG_INIT,
	FTRACE_BUG_NOP,
	FTRACE_BUG_CALL,
	FTRACE_BUG_UPDATE,
};
extern enum ftrace_bug_type ftrace_bug_type;
extern const void *ftrace_expected;
void ftrace_bug(int err, struct dyn_ftrace *rec);

enum { FTRACE_UPDATE_IGNORE, FTRACE_UPDATE_MAKE_CALL, FTRACE_UPDATE_MODIFY_CALL,
       FTRACE_UPDATE_MAKE_NOP };
int ftrace_test_record(struct dyn_ftrace *rec, bool enable);
int ftrace_update_record(struct dyn_ftrace *rec, bool enable);
unsigned long ftrace_get_addr_new(struct dyn_ftrace *rec);
/* the only ops selecting @rec, or NULL (CALL_OPS literals) */
struct ftrace_ops *ftrace_find_unique_ops(struct dyn_ftrace *rec);
unsigned long ftrace_get_addr_curr(struct dyn_ftrace *rec);
int ftrace_lazy_init(void);
int ftrace_lazy_init_ro(void);
/* enable the records of a freshly loaded object for ops tracing everything */
void ftrace_object_enable(struct usft_object *obj);
void ftrace_object_release_hashes(struct usft_object *obj);

/*
 * ---- the list walk's snapshot (ftrace.c; shared with callsite.c) ----
 * ftrace_ops_list_func() walks the same ops, in the same order and with the
 * same tests as the kernel's do_for_each_ftrace_op(), but over a compact
 * array rebuilt (and published RCU-style) whenever the ops list or any
 * ops' hashes change (userspace difference, docs/design.md).
 */
struct list_ent {
	/*
	 * One bit per filter entry (list_bloom_bit()), all ones for a big
	 * filter: a call whose bit is clear is not in the filter, known from
	 * this array alone, without the hash's buckets and entries (three
	 * dependent loads per unrelated ops on the list path).  usft's own
	 * addition to the kernel's walk; the verdict is the hash's.
	 */
	unsigned long filter_bloom;
	struct ftrace_func_entry **filter;	/* NULL: the filter is empty */
	struct ftrace_func_entry **ntrace;	/* notrace; NULL: nothing excluded */
	unsigned char filter_bits, ntrace_bits;
	bool save_regs;
	struct ftrace_ops *op;
};

/* the filter_bloom bit of @ip: the top 6 bits of a multiplicative hash */
static inline unsigned long list_bloom_bit(unsigned long ip)
{
	return 1UL << ((ip * 0x9e3779b97f4a7c15UL) >> 58);
}

struct list_snap {
	unsigned int nr;
	struct list_ent ent[];
};

/* kernel hash_contains_ip(): does @hash (filter and notrace) select @ip */
static inline bool hash_contains_ip(unsigned long ip, struct ftrace_ops_hash *hash)
{
	return (ftrace_hash_empty(hash->filter_hash) ||
		__ftrace_lookup_ip(hash->filter_hash, ip)) &&
	       (ftrace_hash_empty(hash->notrace_hash) ||
		!__ftrace_lookup_ip(hash->notrace_hash, ip));
}

/* a replaced snapshot, after a tasks grace period (usft_call_rcu_tasks()) */
void ftrace_free_snap(void *p);
/* the kernel's walk over the linked list, when no snapshot could be built */
void ftrace_list_walk_slow(unsigned long ip, unsigned long parent_ip,
			   struct ftrace_regs *fregs, bool have_regs);

/* @ip in the bucket array @b (1 << @bits heads), read without a lock */
static __always_inline bool bucket_has(struct ftrace_func_entry **b, unsigned char bits,
				       unsigned long ip)
{
	struct ftrace_func_entry *e = READ_ONCE(b[ftrace_hash_key(ip, bits)]);

	for (; e; e = READ_ONCE(e->hnext))
		if (e->ip == ip)
			return true;
	return false;
}

/*
 * list_snap_call() - the walk of ftrace_ops_list_func() and of
 * ftrace_callsite_func(): under the list recursion bit, call every ops of
 * the snapshot published at *@snapp that takes @ip; with no snapshot yet,
 * the linked-list walk.  @filtered (a constant): test each entry's filter
 * (bloom word, then buckets) and notrace buckets (the global snapshot; a
 * per-callsite one holds only the ops that select its site).  The hot path: no allocation, lock,
 * syscall or errno change.
 */
static __always_inline void list_snap_call(struct list_snap *const *snapp, bool filtered,
					   unsigned long ip, unsigned long parent_ip,
					   struct ftrace_regs *fregs)
{
	struct list_snap *snap;
	unsigned long ipbit;
	bool have_regs;
	int bit;

	bit = trace_test_and_set_recursion(ip, parent_ip, TRACE_LIST_START);
	if (bit < 0)
		return;
	snap = smp_load_acquire(snapp);
	have_regs = ftrace_get_regs(fregs) != NULL;
	if (unlikely(!snap)) {
		ftrace_list_walk_slow(ip, parent_ip, fregs, have_regs);
		trace_clear_recursion(bit);
		return;
	}
	ipbit = filtered ? list_bloom_bit(ip) : 0;
	for (unsigned int i = 0; i < snap->nr; i++) {
		const struct list_ent *e = &snap->ent[i];

		/* the filter's bloom word first: most entries miss there */
		if (filtered && e->filter && (!(e->filter_bloom & ipbit) ||
					      !bucket_has(e->filter, e->filter_bits, ip)))
			continue;
		if (filtered && e->ntrace && bucket_has(e->ntrace, e->ntrace_bits, ip))
			continue;
		if (e->save_regs && !have_regs)
			continue;
		READ_ONCE(e->op->func)(ip, parent_ip, e->op, fregs);
	}
	trace_clear_recursion(bit);
}

/* ---- per-callsite ops (callsite.c, option per_callsite_ops) ---------- */
struct ftrace_callsite {
	struct ftrace_callsite *hnext;
	unsigned long ip;
	struct list_snap *snap;		/* the ops selecting ip, published */
	unsigned long tramp[2];		/* arch: the site's caller copies (plain, regs) */
};
extern char ftrace_callsite_token[4];
#define FTRACE_CALLSITE_ADDR		((unsigned long)&ftrace_callsite_token[0])
#define FTRACE_CALLSITE_REGS_ADDR	((unsigned long)&ftrace_callsite_token[2])
struct ftrace_callsite *ftrace_callsite_get(unsigned long ip);
void ftrace_callsite_func(unsigned long ip, unsigned long parent_ip,
			  struct ftrace_ops *op, struct ftrace_regs *fregs);
void ftrace_callsite_stats(unsigned long *nr_sites, unsigned long *bytes);
/* the ops that the list walk would call at @cs->ip, in list order */
void ftrace_callsite_rebuild(struct ftrace_callsite *cs);
void ftrace_callsite_rebuild_all(void);
/* the object [lo, hi) goes away: its callsites' copies are not reused */
void ftrace_callsite_release(unsigned long lo, unsigned long hi);

/* ---- options and counters (options.c) ------------------------------ */
/* option sync: the value is the index of its name in options.c's sync_names[] */
enum usft_sync {
	USFT_SYNC_MEMBARRIER	= 0,	/* membarrier(SYNC_CORE), else the rendezvous */
	USFT_SYNC_SIGNAL	= 1,	/* always the signal rendezvous */
};
/* option tramp_placement (placement_names[]) */
enum usft_tramp_placement {
	USFT_TRAMP_NEAR		= 0,	/* in branch reach of the text, else far */
	USFT_TRAMP_FAR		= 1,
};
/* option text_write (text_write_names[]): how text bytes are written (core/text.c) */
enum usft_text_write {
	USFT_TEXT_WRITE_AUTO	= 0,	/* mprotect RWX; /proc/self/mem once a policy refuses it */
	USFT_TEXT_WRITE_MPROTECT = 1,	/* mprotect RWX only (a policy: EPERM) */
	USFT_TEXT_WRITE_PROCMEM	= 2,	/* always /proc/self/mem */
};
struct usft_options {
	int ops_trampolines;
	int sync;		/* enum usft_sync */
	int sync_signal;
	int direct_calls;
	int jmp;
	int single_direct_ops;
	int tramp_placement;	/* enum usft_tramp_placement */
	int per_callsite_ops;
	int call_ops;
	int graph_jmp;
	int stat_at_exit;	/* usft_print_stat(stderr) when the process exits */
	int text_write;		/* enum usft_text_write */
	int early_nops;		/* x86-64: gcc's NOPs converted in a constructor */
	int event_tramp;	/* x86-64: ftrace_event_caller for ops that describe their events */
	int novec_tramp;	/* x86-64: per-ops copies without xmm0-7 for vector-free functions */
};
extern struct usft_options usft_opts;
extern struct usft_stats usft_counters;
#define usft_count(field) __atomic_add_fetch(&usft_counters.field, 1, __ATOMIC_RELAXED)
int usft_options_parse(const char *s);
void ftrace_direct_stats(unsigned long *in_range, unsigned long *out_of_range);
unsigned long ftrace_find_rec_direct(unsigned long ip);

#endif /* USFT_CORE_INTERNAL_H */
