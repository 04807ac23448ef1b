/* SPDX-License-Identifier: MIT */
/*
 * usft/ftrace.h - the kernel-shaped ftrace core API (include/linux/ftrace.h).
 *
 * Names, flag bit numbers and error codes are the kernel's.  Addresses are
 * unsigned long.  Every int function returns 0 or a negative errno and also
 * sets errno to the positive value.  After the kill switch (ftrace_bug())
 * every call returns -ENODEV and no byte of program text changes again.
 */
#ifndef USFT_FTRACE_H
#define USFT_FTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <usft/common.h>
#include <usft/ftrace_regs.h>

USFT_BEGIN_DECLS

struct ftrace_ops;
struct ftrace_hash;

/**
 * typedef ftrace_func_t - an ops callback.
 * @ip: address of the patched site (x86-64: the 5-byte call; arm64: the BL)
 * @parent_ip: return address of the traced function (its caller)
 * @op: the ops this callback belongs to
 * @fregs: saved argument registers (see usft/ftrace_regs.h)
 */
typedef void (*ftrace_func_t)(unsigned long ip, unsigned long parent_ip,
			      struct ftrace_ops *op, struct ftrace_regs *fregs);

/* Kernel include/linux/ftrace.h: enum { FTRACE_OPS_FL_* = BIT(n) } */
enum {
	FTRACE_OPS_FL_ENABLED			= 1UL << 0,
	FTRACE_OPS_FL_DYNAMIC			= 1UL << 1,
	FTRACE_OPS_FL_SAVE_REGS			= 1UL << 2,
	FTRACE_OPS_FL_SAVE_REGS_IF_SUPPORTED	= 1UL << 3,
	FTRACE_OPS_FL_RECURSION			= 1UL << 4,
	FTRACE_OPS_FL_STUB			= 1UL << 5,
	FTRACE_OPS_FL_INITIALIZED		= 1UL << 6,
	FTRACE_OPS_FL_DELETED			= 1UL << 7,
	FTRACE_OPS_FL_ADDING			= 1UL << 8,
	FTRACE_OPS_FL_REMOVING			= 1UL << 9,
	FTRACE_OPS_FL_MODIFYING			= 1UL << 10,
	FTRACE_OPS_FL_ALLOC_TRAMP		= 1UL << 11,
	FTRACE_OPS_FL_IPMODIFY			= 1UL << 12,
	FTRACE_OPS_FL_PID			= 1UL << 13,
	FTRACE_OPS_FL_RCU			= 1UL << 14,
	FTRACE_OPS_FL_TRACE_ARRAY		= 1UL << 15,
	FTRACE_OPS_FL_PERMANENT			= 1UL << 16,
	FTRACE_OPS_FL_DIRECT			= 1UL << 17,
	FTRACE_OPS_FL_SUBOP			= 1UL << 18,
	FTRACE_OPS_FL_GRAPH			= 1UL << 19,
};

/* Arguments are always available (DYNAMIC_FTRACE_WITH_ARGS on both archs). */
#define FTRACE_OPS_FL_SAVE_ARGS 0UL

/* Requests from the core to a DIRECT ops owner (kernel enum ftrace_ops_cmd). */
enum ftrace_ops_cmd {
	FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_SELF,
	FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_PEER,
	FTRACE_OPS_CMD_DISABLE_SHARE_IPMODIFY_PEER,
};

typedef int (*ftrace_ops_func_t)(struct ftrace_ops *op, unsigned long ip,
				 enum ftrace_ops_cmd cmd);

/* kernel struct ftrace_ops_hash */
struct ftrace_ops_hash {
	struct ftrace_hash *notrace_hash;
	struct ftrace_hash *filter_hash;
	pthread_mutex_t regex_lock;	/* all-zero is a valid unlocked mutex */
};

/* kernel struct ftrace_func_entry; @direct is used by direct hashes only */
struct ftrace_func_entry {
	struct ftrace_func_entry *hnext;
	unsigned long ip;
	unsigned long direct;
};

struct usft_ops_private;

/**
 * struct ftrace_ops - one user of the function tracing core.
 *
 * Callers set @func, @flags (attribute flags only), @private and, for direct
 * ops, @ops_func.  Everything else is owned by the runtime; zero it (static
 * storage or designated initialisers do).  The ops must stay valid until
 * unregister_ftrace_function() has returned.
 */
struct ftrace_ops {
	ftrace_func_t func;
	struct ftrace_ops *next;
	unsigned long flags;
#ifdef __cplusplus
	void *private_;		/* 'private' is a C++ keyword */
#else
	void *private;
#endif
	ftrace_func_t saved_func;
	struct ftrace_ops_hash local_hash;
	struct ftrace_ops_hash *func_hash;
	struct ftrace_ops_hash old_hash;
	unsigned long trampoline;
	unsigned long trampoline_size;
	ftrace_ops_func_t ops_func;
	unsigned long direct_call;
	struct usft_ops_private *usft;	/* runtime-owned */
};

/**
 * register_ftrace_function() - start calling @ops->func at every site its
 * filter selects.
 * Return: 0; -EBUSY already registered (or PERMANENT while disabled, or an
 * IPMODIFY conflict); -EINVAL deleted ops or SAVE_REGS rules; -ENODEV dead;
 * -ENOMEM; -EDEADLK called from inside a callback, or from a signal handler
 * that interrupted an update call on this thread (the same for every call
 * that updates: unregister, filters, direct calls, trampolines).
 */
USFT_API int register_ftrace_function(struct ftrace_ops *ops);

/**
 * unregister_ftrace_function() - stop @ops; on return no thread runs its
 * callback or its trampoline any more and @ops may be freed.
 * Return: 0; -EBUSY not registered; -ENODEV dead; -EDEADLK re-entry.
 */
USFT_API int unregister_ftrace_function(struct ftrace_ops *ops);

/**
 * ftrace_set_filter() - glob-match function names into the filter hash.
 * @buf: whitespace-separated globs (*, ?, [..], \\ escapes, leading ! removes,
 *       a leading digit is a 1-based index into the function list); NULL with
 *       @reset clears the filter (= every function)
 * @len: length of @buf (or -1: NUL-terminated)
 * @reset: start from an empty hash instead of appending
 * Return: 0; -EINVAL a glob matched nothing (nothing changed); -EBUSY
 * IPMODIFY/direct conflict; -ENOMEM; -ENODEV.
 */
USFT_API int ftrace_set_filter(struct ftrace_ops *ops, unsigned char *buf,
			       int len, int reset);

/** ftrace_set_notrace() - as ftrace_set_filter() for the notrace hash
 * (-EINVAL for an IPMODIFY ops). */
USFT_API int ftrace_set_notrace(struct ftrace_ops *ops, unsigned char *buf,
				int len, int reset);

/**
 * ftrace_set_filter_ip() - add or remove one site.  @ip may be the function
 * address or the site address.
 * Return: 0; -EINVAL not a site; -ENOENT removing an ip that is absent.
 */
USFT_API int ftrace_set_filter_ip(struct ftrace_ops *ops, unsigned long ip,
				  int remove, int reset);

/** ftrace_set_filter_ips() - batch ftrace_set_filter_ip(); all or nothing. */
USFT_API int ftrace_set_filter_ips(struct ftrace_ops *ops, unsigned long *ips,
				   unsigned int cnt, int remove, int reset);

/** ftrace_free_filter() - empty both hashes (ignored while registered). */
USFT_API void ftrace_free_filter(struct ftrace_ops *ops);

/** ftrace_ops_set_global_filter() - share the global ops' hashes. */
USFT_API void ftrace_ops_set_global_filter(struct ftrace_ops *ops);

/**
 * ftrace_set_global_filter() - ftrace_set_filter() on the global ops, whose
 * hashes every ops given ftrace_ops_set_global_filter() uses (an enabled
 * one is re-patched).  void as in the kernel: errno is set on failure.
 */
USFT_API void ftrace_set_global_filter(unsigned char *buf, int len, int reset);
/** ftrace_set_global_notrace() - ftrace_set_notrace() on the global ops. */
USFT_API void ftrace_set_global_notrace(unsigned char *buf, int len, int reset);

/**
 * ftrace_location() - the site belonging to @ip (a site address or the
 * address of a function that has a site), or 0.
 */
USFT_API unsigned long ftrace_location(unsigned long ip);

/**
 * ftrace_location_range() - a site at least partly inside [@start, @end]
 * (both inclusive), or 0.  When several are, which one is not specified
 * (the kernel's lookup_rec() binary search).
 */
USFT_API unsigned long ftrace_location_range(unsigned long start, unsigned long end);

/**
 * ftrace_lookup_symbols() - the sites of @cnt functions by name.
 * @sorted_syms: names in strcmp() order (as the kernel requires: they are
 *               binary-searched)
 * @addrs: @cnt slots; slot i gets the site of sorted_syms[i] (the first
 *         function of that name that has one), or 0
 * Return: 0 when every name was found; -ESRCH otherwise; -EINVAL NULL arrays.
 */
USFT_API int ftrace_lookup_symbols(const char **sorted_syms, size_t cnt,
				   unsigned long *addrs);

/**
 * ftrace_kill() - the kill switch (what ftrace_bug() ends with): the shared
 * callers call the stub from now on, every API call returns -ENODEV and no
 * byte of text changes again.  Sites already patched stay as they are.
 */
USFT_API void ftrace_kill(void);
/** ftrace_is_dead() - nonzero after ftrace_kill() or ftrace_bug(). */
USFT_API int ftrace_is_dead(void);

/**
 * ftrace_test_recursion_trylock() - callback-side recursion guard
 * (FTRACE context group).  Return: the bit to pass to
 * ftrace_test_recursion_unlock(), or -1 when recursing.
 */
USFT_API int ftrace_test_recursion_trylock(unsigned long ip,
					   unsigned long parent_ip);
USFT_API void ftrace_test_recursion_unlock(int bit);

/* ftrace_enabled sysctl analogue (kernel.ftrace_enabled). */
USFT_API int usft_set_ftrace_enabled(int enabled);
USFT_API int usft_get_ftrace_enabled(void);

/* ------------------------------------------------------------------ */
/* Direct calls (DYNAMIC_FTRACE_WITH_DIRECT_CALLS)                     */

/**
 * register_ftrace_direct() - make every site in @ops' filter call the
 * trampoline @addr directly (x86-64: `call`, or `jmp` for ftrace_jmp_set(addr)).
 * @ops: initialised (a filter set with ftrace_set_filter_ip*), no func, not
 *       registered; its flags become FTRACE_OPS_FL_DIRECT|SAVE_REGS
 * A site shared with other ops, or out of branch range, reaches @addr
 * through ftrace_regs_caller.  One direct trampoline per function.
 * Return: 0; -EINVAL bad ops / empty filter / an odd @addr that is a
 * function symbol's start (see ftrace_is_jmp() below); -EBUSY a function
 * already has a direct trampoline; -ENOMEM; -ENODEV.
 */
USFT_API int register_ftrace_direct(struct ftrace_ops *ops, unsigned long addr);

/**
 * unregister_ftrace_direct() - undo register_ftrace_direct(); entries whose
 * target is @addr (jmp bit ignored) leave the registry.
 * @free_filters: also empty @ops' filter
 * Return: 0; -EINVAL @ops is not a registered direct ops.
 */
USFT_API int unregister_ftrace_direct(struct ftrace_ops *ops, unsigned long addr,
				      bool free_filters);

/**
 * modify_ftrace_direct() - retarget every site of @ops to @addr while
 * threads call them: each call reaches the old or the new trampoline.
 * Return: 0; -EINVAL @ops is not a registered direct ops.
 */
USFT_API int modify_ftrace_direct(struct ftrace_ops *ops, unsigned long addr);
/** modify_ftrace_direct_nolock() - the same, from inside an ops_func. */
USFT_API int modify_ftrace_direct_nolock(struct ftrace_ops *ops, unsigned long addr);

/** alloc_ftrace_hash() - a scratch hash with 2^@size_bits buckets (NULL+errno). */
USFT_API struct ftrace_hash *alloc_ftrace_hash(int size_bits);
/** free_ftrace_hash() - free a scratch hash and its entries. */
USFT_API void free_ftrace_hash(struct ftrace_hash *hash);
/** ftrace_hash_count() - entries in @hash (0 for NULL). */
USFT_API unsigned long ftrace_hash_count(struct ftrace_hash *hash);
/**
 * add_ftrace_hash_entry() - link @entry (caller-owned, ->ip and ->direct
 * set) into @hash without allocating; take it out again with
 * ftrace_hash_remove() before free_ftrace_hash().
 */
USFT_API void add_ftrace_hash_entry(struct ftrace_hash *hash, struct ftrace_func_entry *entry);
/** ftrace_hash_remove() - unlink every entry of @hash without freeing it. */
USFT_API void ftrace_hash_remove(struct ftrace_hash *hash);
/** ftrace_find_rec_direct() - the direct target of site @ip, or 0. */
USFT_API unsigned long ftrace_find_rec_direct(unsigned long ip);

/**
 * ftrace_stub_direct_tramp() - a direct trampoline that does nothing and
 * returns into the function body (the kernel's, for tests and for an ops
 * that only needs a direct slot).  Use its address with
 * register_ftrace_direct(); never call it.
 */
USFT_API void ftrace_stub_direct_tramp(void);

/** add_ftrace_hash_entry_direct() - add site @ip with target @direct. */
USFT_API struct ftrace_func_entry *
add_ftrace_hash_entry_direct(struct ftrace_hash *hash, unsigned long ip,
			     unsigned long direct);

/**
 * update_ftrace_direct_add() - the single-ops batch API: attach every
 * (ip -> direct) of @hash through one shared @ops in one code-update pass.
 * The first call registers @ops (static, zeroed); later ones move its
 * filter without a shutdown or a grace period per function.
 * Return: 0; -EINVAL empty hash, a non-site ip, an ip that already has a
 * direct target, or an @ops in the wrong state; -ENOMEM; -ENODEV.
 */
USFT_API int update_ftrace_direct_add(struct ftrace_ops *ops, struct ftrace_hash *hash);
/**
 * update_ftrace_direct_del() - detach the entries of @hash (each must be
 * attached to @ops with exactly that target, jmp bit included); the last
 * one unregisters @ops.
 * Return: 0; -EINVAL (nothing changed).
 */
USFT_API int update_ftrace_direct_del(struct ftrace_ops *ops, struct ftrace_hash *hash);
/**
 * update_ftrace_direct_mod() - retarget the entries of @hash (attached to
 * @ops) to their new ->direct, keeping calls on the old or new target.
 * @do_direct_lock: false when the caller already holds the direct mutex
 * (from an ops_func).  Return: 0; -EINVAL.
 */
USFT_API int update_ftrace_direct_mod(struct ftrace_ops *ops, struct ftrace_hash *hash,
				      bool do_direct_lock);

/*
 * jmp bit: bit 0 of a direct address asks for a jump instead of a call, so
 * direct trampolines must be at least 2-byte aligned (put .balign 16 before
 * them in assembly), as in the kernel.  Beware of porting x86-64 kernel
 * trampolines that end in ASM_RET: with SLS mitigation the kernel's ASM_RET
 * is "ret; int3" (2 bytes), which keeps the next trampoline even; a bare
 * "ret" makes it odd, and its address then reads as "jump to the byte
 * before".  usft/module.h's ASM_RET is the 2-byte one.  An odd address that
 * is exactly the start of a function symbol is refused (-EINVAL, with a
 * message) by register_ftrace_direct() and modify_ftrace_direct():
 * ftrace_jmp_set() of a trampoline gives its start + 1, never a symbol's
 * start.  An odd trampoline without a symbol of its own is not caught.
 */
static inline __attribute__((__always_inline__)) bool ftrace_is_jmp(unsigned long addr)
{
	return addr & 1;
}

static inline __attribute__((__always_inline__)) unsigned long ftrace_jmp_set(unsigned long addr)
{
	return addr | 1UL;
}

static inline __attribute__((__always_inline__)) unsigned long ftrace_jmp_get(unsigned long addr)
{
	return addr & ~1UL;
}

/*
 * __trace_puts() - a line of text into the trace being kept (the kernel's
 * __trace_puts(), behind trace_puts() and trace_printk()): a print event in
 * the recording of `usft record` (or of a session of a program linked with
 * -lusft) and a print entry in the top level of a `usft mount` tracefs
 * (when its tracing_on and options/trace_printk are set).  @ip is shown as
 * the function it is in (`func: text`; function_graph shows the text as a
 * comment).  Text past @size or its first NUL is not read; trailing
 * newlines are dropped, and more than USFT_TRACE_PUTS_MAX bytes are cut.  Any thread, any
 * context (signal handlers too); errno is kept.
 * Return: @size if a trace took the text, 0 if none did (nothing recorded,
 * tracing_on off, no tracer loaded).  <usft/module.h>'s trace_printk()
 * prints to stderr then.
 */
#define USFT_TRACE_PUTS_MAX	1023
USFT_API int __trace_puts(unsigned long ip, const char *str, int size);

USFT_END_DECLS

#endif /* USFT_FTRACE_H */
