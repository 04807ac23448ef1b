/* SPDX-License-Identifier: MIT */
/*
 * core/arch.h - THE arch contract.  The core calls only these; each backend
 * (runtime/arch/<arch>/) implements them.  Patch hooks keep the kernel's
 * return contract: 0, -EFAULT (could not read), -EINVAL (bytes differ from
 * what the record says they are), -EPERM (could not write).
 *
 * Addresses passed as "addr" are either a real target (a direct trampoline)
 * or one of the tokens FTRACE_ADDR, FTRACE_REGS_ADDR or an ops' trampoline
 * (ops->trampoline).  The backend resolves a token to the copy of that code
 * that is in branch range of the record (userspace text is spread over
 * objects far apart; each object gets a near window, see runtime/mem).
 */
#ifndef USFT_CORE_ARCH_H
#define USFT_CORE_ARCH_H

#include "core/internal.h"
#include "asm/ftrace.h"

/*
 * kernel ftrace_ops_test(): an ops wanting regs is skipped when called
 * without them; only on WITH_REGS archs (USFT_HAVE_WITH_REGS) (arm64 has WITH_ARGS only and
 * never has pt_regs).
 */
static inline bool ftrace_ops_wants_regs(const struct ftrace_ops *op)
{
#ifdef USFT_HAVE_WITH_REGS
	return op->flags & FTRACE_OPS_FL_SAVE_REGS;
#else
	(void)op;
	return false;
#endif
}

/* Templates in arch assembly; never executed in place. */
extern const char ftrace_caller[], ftrace_regs_caller[];
#define FTRACE_ADDR		((unsigned long)ftrace_caller)
#define FTRACE_REGS_ADDR	((unsigned long)ftrace_regs_caller)

/**
 * ftrace_dyn_arch_init() - probe the CPU/ABI once, before any record exists.
 * Return: 0 or -errno.
 */
int ftrace_dyn_arch_init(void);

/**
 * ftrace_call_adjust() - entry of __patchable_function_entries -> rec->ip.
 * Return: the site, or 0 to drop a misaligned/invalid entry.
 */
unsigned long ftrace_call_adjust(unsigned long addr);

/**
 * ftrace_init_nop() - queue the conversion of the compiler's NOPs at @rec to
 * the canonical disabled form (flushed by ftrace_arch_code_modify_post_process()).
 * Called with ftrace_lock held.  Return: 0, -EFAULT, -EINVAL (unknown bytes).
 */
int ftrace_init_nop(struct dyn_ftrace *rec);

/** ftrace_make_call() - NOP -> call @addr at @rec (queued in the batch). */
int ftrace_make_call(struct dyn_ftrace *rec, unsigned long addr);
/** ftrace_make_nop() - call @addr -> NOP at @rec. */
int ftrace_make_nop(struct dyn_ftrace *rec, unsigned long addr);
/** ftrace_modify_call() - call @old_addr -> call @addr at @rec. */
int ftrace_modify_call(struct dyn_ftrace *rec, unsigned long old_addr, unsigned long addr);

/**
 * ftrace_replace_code() - the whole-record pass of ftrace_modify_all_code().
 * @enable: FTRACE_UPDATE_CALLS (1) or disable everything (0).
 * Generic (core/ftrace.c, the kernel's __weak one) in two passes, the first
 * through arch_ftrace_replace_prepare(); an arch that needs its own defines
 * ARCH_HAS_FTRACE_REPLACE_CODE.
 */
void ftrace_replace_code(int enable);

/**
 * arch_ftrace_replace_prepare() - first pass of ftrace_replace_code(), for
 * each record that will change (@update: ftrace_test_record()'s verdict),
 * before anything is written: make the copies in reach of the site that
 * its new target needs, so that they are all made (and synced) before the
 * first site is rewritten.  x86-64 also checks here that the site holds what
 * its record says (the kernel's x86 two passes: no write on any mismatch).
 * Return: 0, or -errno for ftrace_bug() (with ftrace_expected set on a
 * mismatch).
 */
int arch_ftrace_replace_prepare(struct dyn_ftrace *rec, int update);

/** ftrace_update_ftrace_func() - what the shared callers call. */
int ftrace_update_ftrace_func(ftrace_func_t func);

/**
 * ftrace_arch_text_check() - may a batch be written safely now, given how
 * core/text.c writes text (x86-64: -EBUSY under the /proc/self/mem route
 * while a thread blocks SIGTRAP)?  Asked with ftrace_text_check().
 */
int ftrace_arch_text_check(void);

/** open/close a code-modification section (flushes the text batch). */
int ftrace_arch_code_modify_prepare(void);
int ftrace_arch_code_modify_post_process(void);

/**
 * arch_ftrace_update_trampoline() - create (or update the callback inside)
 * @ops' trampoline, setting ops->trampoline and FTRACE_OPS_FL_ALLOC_TRAMP.
 * Leaves ops->trampoline 0 when trampolines are off or impossible.
 */
void arch_ftrace_update_trampoline(struct ftrace_ops *ops);
/** arch_ftrace_trampoline_quiesce() - make @ops' trampolines call nothing (before the wait). */
void arch_ftrace_trampoline_quiesce(struct ftrace_ops *ops);
/** arch_ftrace_trampoline_free() - after the tasks grace period. */
void arch_ftrace_trampoline_free(struct ftrace_ops *ops);

/**
 * arch_ftrace_set_direct_caller() - from call_direct_funcs(): have the regs
 * caller continue into the direct trampoline @addr (x86: regs->orig_ax).
 */
void arch_ftrace_set_direct_caller(struct ftrace_regs *fregs, unsigned long addr);

/**
 * arch_ftrace_direct_in_reach() - does the site at @ip branch straight to
 * direct trampoline @addr?  Otherwise it is reached through
 * ftrace_regs_caller (kernel: ftrace_find_callable_addr()).
 */
bool arch_ftrace_direct_in_reach(unsigned long ip, unsigned long addr);

/** arch_ftrace_site_bytes() - the current bytes of the site, for users. */
int arch_ftrace_site_bytes(unsigned long ip, unsigned char *buf, size_t len);

/**
 * arch_ftrace_make_caller() - copy shared caller @which (0: ftrace_caller;
 * 1: x86-64 ftrace_regs_caller, arm64 ftrace_caller_ops) into window @w,
 * for usft_object_callers().  Return: its address or 0.
 */
unsigned long arch_ftrace_make_caller(struct usft_window *w, int which);

/** arch_ftrace_object_removed() - forget arch state of @obj (its callers are freed by the core). */
void arch_ftrace_object_removed(struct usft_object *obj);

/*
 * Function graph return hooking (core/fgraph.c).  A hooked frame is known
 * by an identity that is the same at the site and in return_to_handler and
 * orders like the stack (a deeper call: lower or equal; a tail call: equal):
 *  arch_fgraph_ret_slot(fregs)   where the return address is at the site
 *                                (read, then replaced by return_to_handler)
 *  arch_fgraph_frame_id(fregs)   the frame's identity, at the site
 *  arch_fgraph_return_id(fregs)  the same identity, in return_to_handler
 *  arch_fgraph_id_slot(id)       where that frame's return address is kept
 *                                while the function runs, NULL if unknown
 *  arch_fgraph_owns_slot(id, p)  does a return address an unwinder found
 *                                at @p belong to frame @id (ftrace_graph_ret_addr)
 * Default (x86-64): the return address is on the stack at the site's sp,
 * and that slot is the identity.  An arch with the return address in a
 * register (arm64: the site's x9/x30) defines ARCH_HAS_FGRAPH_FRAME and
 * all five in its asm/ftrace.h.  usft_fgraph_unwind_end(@sp) drops frames
 * whose identity is at or below @sp: with entry-sp identities (arm64) that
 * never drops a live frame, and the frames it leaves are dropped as gone
 * by the next traced call from their caller.
 */
/*
 * The tasks-RCU span from C, what the entry and exit code of a trampoline
 * does (core/rcu_tasks.c waits on both forms):
 *  usft_span_enter()   entering a callback or trampoline
 *  usft_span_exit()    leaving it
 *  usft_span_inside()  is this thread inside one
 * Default: usft_task.nest, and usft_task.gen bumped when it drops to 0.  An
 * arch whose trampolines keep the split counters span_in/span_out/span_gen
 * instead (x86-64; struct usft_task says why) defines
 * ARCH_HAS_SPLIT_TASK_SPAN in its asm/ftrace.h.
 */
#ifdef ARCH_HAS_SPLIT_TASK_SPAN
static __always_inline void usft_span_enter(void)
{
	usft_task.span_in++;
	barrier();
}

static __always_inline void usft_span_exit(void)
{
	barrier();
	usft_task.span_out++;
	barrier();
	if (usft_task.span_in == usft_task.span_out)
		usft_task.span_gen++;
}

/*
 * The two counters are read one after the other, and a signal handler that
 * runs traced code between the reads bumps both: read span_in again and
 * retry, so that a handler (which always leaves them balanced) is never
 * taken for an open span.
 */
static __always_inline bool usft_span_inside(void)
{
	unsigned long in, out;

	do {
		in = READ_ONCE(usft_task.span_in);
		out = READ_ONCE(usft_task.span_out);
	} while (in != READ_ONCE(usft_task.span_in));
	return in != out;
}
#else
static __always_inline void usft_span_enter(void)
{
	usft_task.nest++;
	barrier();
}

static __always_inline void usft_span_exit(void)
{
	barrier();
	if (--usft_task.nest == 0)
		usft_task.gen++;
}

static __always_inline bool usft_span_inside(void)
{
	return READ_ONCE(usft_task.nest) != 0;
}
#endif

#ifndef ARCH_HAS_FGRAPH_FRAME
static __always_inline unsigned long *arch_fgraph_ret_slot(struct ftrace_regs *fregs)
{
	return (unsigned long *)ftrace_regs_get_stack_pointer(fregs);
}

static __always_inline unsigned long arch_fgraph_frame_id(struct ftrace_regs *fregs)
{
	return ftrace_regs_get_stack_pointer(fregs);
}

/* return_to_handler was entered by the ret that popped the slot */
static __always_inline unsigned long arch_fgraph_return_id(struct ftrace_regs *fregs)
{
	return ftrace_regs_get_stack_pointer(fregs) - sizeof(unsigned long);
}

static __always_inline unsigned long *arch_fgraph_id_slot(unsigned long id)
{
	return (unsigned long *)id;
}

static __always_inline bool arch_fgraph_owns_slot(unsigned long id, const unsigned long *retp)
{
	return id == (unsigned long)retp;
}
#endif

#endif /* USFT_CORE_ARCH_H */
