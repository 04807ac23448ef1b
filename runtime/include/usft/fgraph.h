/* SPDX-License-Identifier: MIT */
/*
 * usft/fgraph.h - the function graph API (kernel include/linux/ftrace.h,
 * kernel/trace/fgraph.c): an entry callback when a traced function starts
 * and a return callback when it returns.
 *
 * Returns are caught the kernel's way: the entry hook replaces the traced
 * function's return address (x86-64: the word at ftrace_regs_get_stack_pointer())
 * with return_to_handler and keeps the real one on a per-thread shadow stack.
 * Frames left by longjmp()/siglongjmp() are detected by their saved return
 * slot address (a newer call reusing the slot, or a return from an outer
 * frame) and reported with FGRAPH_RET_UNWOUND.  C++ exceptions, backtrace()
 * and pthread_exit() need the real return addresses on the stack: the
 * preload shim (libusft-preload.so) puts them back around those calls (see
 * docs/tracers.md); programs that only link libusft call
 * usft_fgraph_unwind_begin()/usft_fgraph_unwind_end() themselves.
 */
#ifndef USFT_FGRAPH_H
#define USFT_FGRAPH_H

#include <usft/common.h>
#include <usft/ftrace.h>

USFT_BEGIN_DECLS

/* kernel FGRAPH_ARRAY_SIZE: at most this many fgraph_ops at once */
#define FGRAPH_ARRAY_SIZE	16
/* frames one thread's shadow stack holds; deeper calls are not hooked */
#define FGRAPH_STACK_DEPTH	1024

/**
 * struct ftrace_graph_ent - what the entry callback is told.
 * @func: the traced function's site address (as ftrace_func_t's ip)
 * @depth: nesting depth among hooked frames of this thread, 0 = outermost
 * @calltime: usft extension: usft_trace_clock() at entry (ns), the value
 *            the return callback will see in ftrace_graph_ret.calltime
 */
struct ftrace_graph_ent {
	unsigned long func;
	int depth;
	unsigned long long calltime;
};

/* ftrace_graph_ret.flags (usft extension) */
enum {
	/* the frame was left without returning (longjmp, exception, thread exit) */
	FGRAPH_RET_UNWOUND = 1 << 0,
};

/**
 * struct ftrace_graph_ret - what the return callback is told.
 * @func: as in the entry
 * @retval: the integer return register (rax / x0); 0 for unwound frames
 * @depth: as in the entry
 * @overrun: entries this thread could not hook so far (shadow stack full,
 *           or a signal hit the shadow stack's own update)
 * @calltime: usft_trace_clock() at entry (ns)
 * @rettime: usft_trace_clock() at return (ns); for an unwound frame, when
 *           the runtime noticed it was gone
 * @flags: FGRAPH_RET_* (usft extension)
 */
struct ftrace_graph_ret {
	unsigned long func;
	unsigned long retval;
	int depth;
	unsigned int overrun;
	unsigned long long calltime;
	unsigned long long rettime;
	unsigned int flags;
};

struct fgraph_ops;

/*
 * Return nonzero from the entry callback to have the return hooked (the
 * return callback then runs for this frame), 0 to leave the frame alone.
 * The return callback gets @fregs with the return registers readable via
 * ftrace_regs_get_return_value(), or NULL for an unwound frame.
 * Both may be interrupted by signal handlers, must not allocate, lock or
 * call register/unregister functions, and must leave errno alone.  Traced
 * functions called from an entry callback are not traced (recursion bits);
 * from a return callback they are not hooked.
 */
typedef int (*trace_func_graph_ent_t)(struct ftrace_graph_ent *trace,
				      struct fgraph_ops *gops,
				      struct ftrace_regs *fregs);
typedef void (*trace_func_graph_ret_t)(struct ftrace_graph_ret *trace,
				       struct fgraph_ops *gops,
				       struct ftrace_regs *fregs);

/**
 * struct fgraph_ops - one user of the function graph hook.
 * @entryfunc: entry callback (NULL: hook every frame the filter selects)
 * @retfunc: return callback (may be NULL)
 * @ops: the ftrace_ops the entry hook is registered with; set filters on it
 *       with ftrace_set_filter(&gops->ops, ...) before registering
 * @private: owner data
 * @idx: runtime-owned slot index
 */
struct fgraph_ops {
	trace_func_graph_ent_t entryfunc;
	trace_func_graph_ret_t retfunc;
	struct ftrace_ops ops;
#ifdef __cplusplus
	void *private_;
#else
	void *private;
#endif
	int idx;
};

/**
 * register_ftrace_graph() - start calling @gops' callbacks.
 * Return: 0; -EBUSY already registered; -ENOSPC FGRAPH_ARRAY_SIZE in use;
 * -EOPNOTSUPP the architecture has no return_to_handler; -ENOMEM; any
 * error of register_ftrace_function().
 */
USFT_API int register_ftrace_graph(struct fgraph_ops *gops);

/**
 * unregister_ftrace_graph() - stop @gops; on return neither callback runs
 * any more (frames it hooked still return through the shadow stack).
 */
USFT_API void unregister_ftrace_graph(struct fgraph_ops *gops);

/* kernel FGRAPH_MAX_DATA_SIZE: bytes one fgraph_reserve_data() may ask for */
#define FGRAPH_MAX_DATA_SIZE	(sizeof(long) * 32)

/**
 * fgraph_reserve_data() - reserve storage for this frame on the calling
 * thread's shadow stack, from an entry callback.
 * @idx: the calling fgraph_ops' index (gops->idx)
 * @size_bytes: 1 to FGRAPH_MAX_DATA_SIZE; rounded up to whole longs
 *
 * At most once per entry callback call.  The storage lives until the frame
 * returns (or is unwound) and is dropped at once if the entry callback
 * returns 0.  Async-signal-safe; no allocation.
 * Return: the storage, or NULL outside an entry callback of @idx, on a
 * second call, a bad size or a full data stack (4096 words per thread).
 */
USFT_API void *fgraph_reserve_data(int idx, int size_bytes);

/**
 * fgraph_retrieve_data() - from the return callback (or the entry callback)
 * of @idx: what fgraph_reserve_data() stored for this frame.
 * @size_bytes: if not NULL, set to the stored size (rounded up to longs)
 * Return: the storage, or NULL when the entry stored nothing.
 */
USFT_API void *fgraph_retrieve_data(int idx, int *size_bytes);

/**
 * fgraph_retrieve_parent_data() - as fgraph_retrieve_data() for the frame
 * @depth hooked frames below the current one (0: the current frame).
 * Return: the storage, or NULL when that frame does not exist or @idx
 * stored nothing there.
 */
USFT_API void *fgraph_retrieve_parent_data(int idx, int *size_bytes, int depth);

/**
 * usft_fgraph_depth() - how many traced calls of the calling thread are
 * open now (on its function_graph return stack; 0: none), e.g. the indent
 * of a comment written into a graph trace.  Any context; no lock.
 */
USFT_API int usft_fgraph_depth(void);

struct task_struct;	/* only NULL (the calling thread) is supported */

/**
 * ftrace_graph_ret_addr() - the real return address behind @ret for an
 * unwinder walking the calling thread's stack (kernel semantics).
 * @task: NULL
 * @idx: unused (kept for the kernel signature), may be NULL
 * @ret: the return address found on the stack
 * @retp: where it was found
 * Return: @ret itself unless it is return_to_handler, else the saved one.
 */
USFT_API unsigned long ftrace_graph_ret_addr(struct task_struct *task, int *idx,
					     unsigned long ret, unsigned long *retp);

/**
 * usft_fgraph_unwind_begin() - put the real return addresses of every
 * frame hooked on this thread back on the stack, before something walks
 * or unwinds it (exception raise/resume, backtrace, pthread_exit).
 * Async-signal-safe; a no-op for a thread without hooked frames.
 */
USFT_API void usft_fgraph_unwind_begin(void);

/**
 * usft_fgraph_unwind_end() - after the walk/unwind: frames whose return
 * slot lies at or below @sp are gone (their return callback runs with
 * FGRAPH_RET_UNWOUND); the others get their return hook back.
 * @sp: the lowest live stack address, e.g. the caller's return slot
 */
USFT_API void usft_fgraph_unwind_end(unsigned long sp);

/**
 * usft_fgraph_context_save() - the calling thread is about to switch to
 * another context (swapcontext()): park the shadow stack of the current one.
 * The next context gets a stack of its own; its depths continue from here.
 * Async-signal-safe.
 * Return: a handle for usft_fgraph_context_resume(), NULL: nothing parked.
 */
USFT_API void *usft_fgraph_context_save(void);

/**
 * usft_fgraph_context_resume() - back in the context that @handle parked
 * (on any thread): its shadow stack is this thread's again, and the stack
 * of the context that ran until now, if still this thread's, is dropped
 * (its frames get FGRAPH_RET_UNWOUND: that context ended).
 */
USFT_API void usft_fgraph_context_resume(void *handle);

/**
 * usft_trace_clock() - the clock of the tracers and of calltime/rettime:
 * nanoseconds on the CLOCK_MONOTONIC time line.  Reads the CPU's invariant
 * cycle counter scaled by a factor calibrated against CLOCK_MONOTONIC at
 * start-up (what the vDSO does, without its fence and sequence lock); on
 * an x86-64 KVM guest whose clocksource is kvm-clock, the host's pvclock
 * page that the vDSO maps (the kernel's trace_clock_local() there) plus an
 * offset to CLOCK_MONOTONIC; or clock_gettime(CLOCK_MONOTONIC) itself when
 * neither can be trusted or usft_set_trace_clock("mono") was called.
 * Async-signal-safe.
 */
USFT_API unsigned long long usft_trace_clock(void);

/**
 * usft_set_trace_clock() - "auto" (default: counter when the kernel's
 * clocksource is it, else pvclock when kvm-clock is, else mono), "mono"
 * (clock_gettime, vDSO), "counter" or "pvclock".  A clock already in use is
 * kept as it is.  Return: 0, -EINVAL unknown name, -EOPNOTSUPP that clock
 * cannot be read here (the clock in use is kept).
 */
USFT_API int usft_set_trace_clock(const char *name);

/** usft_trace_clock_known() - @name is one usft_set_trace_clock() takes. */
USFT_API bool usft_trace_clock_known(const char *name);

/** usft_trace_clock_name() - "counter", "pvclock" or "mono", the clock in use. */
USFT_API const char *usft_trace_clock_name(void);

USFT_END_DECLS

#endif /* USFT_FGRAPH_H */
