// SPDX-License-Identifier: MIT
/*
 * core/fgraph.c - the function graph hook (kernel/trace/fgraph.c): an entry
 * callback on top of an ordinary ftrace_ops, and a return callback reached
 * by replacing the traced function's return address with return_to_handler
 * (arch assembly) while the real one waits on a per-thread shadow stack.
 *
 * Shadow stacks come from one pool mapped (MAP_NORESERVE) at the first
 * registration; a thread claims one with a CAS on first use (no allocation,
 * lock or syscall inside the callback) and gives it back at thread exit
 * through a pthread key destructor.  A frame records the real return
 * address, the address of the slot it was taken from (retp, the kernel's
 * "retp check"), the function, the entry time and which fgraph_ops want its
 * return.
 *
 * Frames that are left without returning (longjmp, siglongjmp, exceptions
 * the preload shim did not see, thread exit) are found by their retp:
 *  - at entry, a new call that reuses a frame's return slot, or whose slot
 *    is above a frame's slot on the same signal level, means that frame is
 *    gone;
 *  - at return, the frame whose retp is the slot just returned through is
 *    searched from the top; frames above it are gone.
 * Gone frames get their return callback with FGRAPH_RET_UNWOUND.
 *
 * A tail call keeps the caller's return slot, which already holds
 * return_to_handler: the callee gets its own frame whose "real" return
 * address is return_to_handler, so both frames return, innermost first,
 * exactly as in the kernel.
 *
 * Signal safety: the shadow stack is changed only inside short sections
 * marked by fgraph_task.busy; a signal handler whose traced calls land in
 * such a section is not hooked (counted in overrun).  Entry callbacks run
 * outside it, under the recursion bits of their signal level (recursion.c),
 * so a handler can nest but a callback calling traced code cannot loop;
 * return callbacks run inside it (what they call is not hooked).
 *
 * Known limits (docs/tracers.md): a handler running on a sigaltstack that
 * the program installed without going through usft's sigaction() is at
 * signal level 0 and may make frames of the interrupted code look gone;
 * a thread cancelled with pthread_cancel() while hooked frames are on its
 * stack skips the cleanups beyond the first hooked frame.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <usft/fgraph.h>
#include "core/internal.h"
#include "core/arch.h"
#include "core/trace_clock.h"

/*
 * return_to_handler lives in arch assembly (arch/<arch>/fgraph_entry.S).
 * Weak so that an architecture that does not provide it yet still links;
 * register_ftrace_graph() then returns -EOPNOTSUPP.
 */
extern const char return_to_handler[] __attribute__((weak));
/*
 * What a hooked frame's return slot holds while the function runs:
 * return_to_handler, or (graph jmp mode: ARCH_HAS_FGRAPH_JMP_RET, x86-64)
 * ftrace_graph_jmp_ret when the graph jmp caller called the body itself.
 */
#ifdef ARCH_HAS_FGRAPH_JMP_RET
extern const char ftrace_graph_jmp_ret[];
#define FGRAPH_JMP_RET	((unsigned long)ftrace_graph_jmp_ret)
#else
#define FGRAPH_JMP_RET	((unsigned long)return_to_handler)
#endif
static __always_inline bool fgraph_is_hook(unsigned long v)
{
	return v == (unsigned long)return_to_handler || v == FGRAPH_JMP_RET;
}

/* ---- shadow stacks --------------------------------------------------- */

enum {
	FRAME_HOOKED = 1 << 0,	/* *retp holds return_to_handler because of us */
	FRAME_JMP = 1 << 1,	/* unhooked by the unwind pair from ftrace_graph_jmp_ret */
};

struct fgraph_frame {
	unsigned long ret;	/* the real return address (or return_to_handler: tail call) */
	unsigned long retp;	/* where it was taken from (the frame's identity, core/arch.h) */
	unsigned long func;
	unsigned long long calltime;
	unsigned int mask;	/* fgraph_array indices that want the return */
	unsigned short sig_depth;
	unsigned short flags;
	/* words [data_lo, data_hi) of the task's data stack: fgraph_reserve_data() */
	unsigned int data_lo, data_hi;
};

/*
 * Data context of the callback running now (fgraph_reserve_data() and the
 * retrieve pair): the frame it runs for, the fgraph_ops index that may
 * reserve (entry callbacks only) and whether it did.  Every place that sets
 * it puts the previous value back, so a signal handler's callbacks nest.
 */
#define FGRAPH_CTX(frame, idx, may_reserve) \
	((unsigned int)(frame) << 8 | (unsigned int)(idx) << 1 | (may_reserve))
#define FGRAPH_CTX_NONE		(~0U)

/* a frame left without returning: where its return would go, kept a while */
struct fgraph_limbo {
	unsigned long retp;	/* 0: empty */
	unsigned long ret;
};

#define FGRAPH_LIMBO	64

struct fgraph_task {
	struct fgraph_frame *frames;
	unsigned long *data;	/* FGRAPH_DATA_WORDS, after the frames */
	int top;		/* frames in use */
	int busy;		/* inside a shadow stack update */
	int slot;		/* pool index, -1 none */
	int claiming;
	unsigned int overrun;
	unsigned int data_ctx;	/* FGRAPH_CTX() or FGRAPH_CTX_NONE */
	int base;		/* depth of frames[0]: a coroutine's stack starts where it was entered */
	int next_base;		/* base of the next stack claimed (after a context switch) */
	unsigned int limbo_next;
	struct fgraph_limbo limbo[FGRAPH_LIMBO];
};

static __thread struct fgraph_task fgraph_task __attribute__((tls_model("initial-exec")));

#define FGRAPH_MAX_TASKS	4096
/*
 * Per thread: the frames, then FGRAPH_DATA_WORDS words for the data the
 * callbacks reserve (a header word (idx << 16 | words) before each block).
 * MAP_NORESERVE: pages are only touched by threads that use them.
 */
#define FGRAPH_DATA_WORDS	4096
#define FGRAPH_FRAMES_BYTES	(FGRAPH_STACK_DEPTH * sizeof(struct fgraph_frame))
#define FGRAPH_STACK_BYTES	(FGRAPH_FRAMES_BYTES + FGRAPH_DATA_WORDS * sizeof(unsigned long))

static char *fgraph_pool;	/* FGRAPH_MAX_TASKS stacks of FGRAPH_STACK_BYTES */
static unsigned long fgraph_pool_map[FGRAPH_MAX_TASKS / 64];
static unsigned int fgraph_pool_hint;
static pthread_key_t fgraph_key;
static struct fgraph_ops *fgraph_array[FGRAPH_ARRAY_SIZE];
static unsigned int fgraph_next_idx;
static int fgraph_nr_ops;
static pthread_mutex_t fgraph_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long fgraph_no_stack;	/* threads that found the pool full */
/* stacks of contexts switched away from (swapcontext()): no thread's now */
static unsigned long fgraph_parked_map[FGRAPH_MAX_TASKS / 64];
static struct {
	int top, base;
} fgraph_parked[FGRAPH_MAX_TASKS];
static int fgraph_limbo_noted;

static void fgraph_release_stack(void *p)
{
	struct fgraph_task *t = &fgraph_task;
	int slot = t->slot;

	/*
	 * Thread exit (key destructor).  Frames still on the stack never
	 * return; a traced call made by a later destructor claims again.
	 */
	t->busy = 1;
	barrier();
	t->frames = NULL;
	t->top = 0;
	t->slot = -1;
	if (slot >= 0)
		__atomic_fetch_and(&fgraph_pool_map[slot / 64], ~(1UL << (slot % 64)),
				   __ATOMIC_RELEASE);
	barrier();
	t->busy = 0;
}

static void fgraph_atfork_child(void)
{
	struct fgraph_task *t = &fgraph_task;

	/*
	 * Only this thread exists in the child: its stack and those of parked
	 * contexts (process memory, the child may resume them) stay.
	 */
	memcpy(fgraph_pool_map, fgraph_parked_map, sizeof(fgraph_pool_map));
	if (t->frames && t->slot >= 0)
		fgraph_pool_map[t->slot / 64] |= 1UL << (t->slot % 64);
	pthread_mutex_init(&fgraph_lock, NULL);
}

/* called with fgraph_lock held */
static int fgraph_pool_init(void)
{
	void *p;

	if (fgraph_pool)
		return 0;
	p = mmap(NULL, (size_t)FGRAPH_MAX_TASKS * FGRAPH_STACK_BYTES, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	if (pthread_key_create(&fgraph_key, fgraph_release_stack)) {
		munmap(p, (size_t)FGRAPH_MAX_TASKS * FGRAPH_STACK_BYTES);
		return -EAGAIN;
	}
	pthread_atfork(NULL, NULL, fgraph_atfork_child);
	smp_store_release(&fgraph_pool, (char *)p);
	return 0;
}

/*
 * First traced call of a thread: take a free stack (CAS on the bitmap).
 * pthread_setspecific() on a key below PTHREAD_KEY_2NDLEVEL_SIZE does not
 * allocate (the same assumption as usft_task_register()).
 */
static __attribute__((noinline)) int fgraph_claim_stack(struct fgraph_task *t)
{
	char *pool = smp_load_acquire(&fgraph_pool);
	unsigned int start, i;
	int saved = errno;

	if (!pool || t->claiming)
		return -1;
	t->claiming = 1;
	start = __atomic_fetch_add(&fgraph_pool_hint, 1, __ATOMIC_RELAXED);
	for (i = 0; i < FGRAPH_MAX_TASKS; i++) {
		unsigned int s = (start + i) % FGRAPH_MAX_TASKS;
		unsigned long bit = 1UL << (s % 64);
		unsigned long old = READ_ONCE(fgraph_pool_map[s / 64]);

		if (old & bit)
			continue;
		if (!(__atomic_fetch_or(&fgraph_pool_map[s / 64], bit, __ATOMIC_ACQUIRE) & bit)) {
			t->slot = (int)s;
			t->top = 0;
			t->base = t->next_base;
			t->frames = (struct fgraph_frame *)(pool + (size_t)s * FGRAPH_STACK_BYTES);
			t->data = (unsigned long *)((char *)t->frames + FGRAPH_FRAMES_BYTES);
			t->data_ctx = FGRAPH_CTX_NONE;
			pthread_setspecific(fgraph_key, t);
			t->claiming = 0;
			errno = saved;
			return 0;
		}
	}
	__atomic_add_fetch(&fgraph_no_stack, 1, __ATOMIC_RELAXED);
	t->claiming = 0;
	errno = saved;
	return -1;
}

static __always_inline unsigned int fgraph_sig_depth(void)
{
	return (unsigned int)usft_task.sig_depth;
}

/*
 * recursion.c's trace_test_and_set_recursion(.., TRACE_FTRACE_START) and
 * trace_clear_recursion(), inlined: the graph hook pays them on every call
 * and return.  Same bits, same transition rule.
 */
static __always_inline int fgraph_recursion_lock(void)
{
	unsigned long val = usft_task.recursion;
	int d = usft_task.sig_depth;
	int bit = TRACE_FTRACE_START + TRACE_CTX_NORMAL - (d > 3 ? 3 : d);

	if (unlikely(val & (1UL << bit))) {
		bit = TRACE_FTRACE_START + TRACE_CTX_TRANSITION;
		if (val & (1UL << bit))
			return -1;
	}
	usft_task.recursion = val | (1UL << bit);
	barrier();
	return bit;
}

static __always_inline void fgraph_recursion_unlock(int bit)
{
	barrier();
	usft_task.recursion &= ~(1UL << bit);
}

/*
 * An entry callback, with the data context of frame @frame: it may call
 * fgraph_reserve_data() once.  Data it reserved is dropped when it
 * returns 0 (kernel: "If entryfunc() returns zero, the storage is
 * discarded").
 */
static __always_inline int fgraph_call_entry(struct fgraph_task *t, struct fgraph_ops *gops,
					     struct ftrace_graph_ent *trace,
					     struct ftrace_regs *fregs, int frame)
{
	unsigned int ctx = t->data_ctx, hi = t->frames[frame].data_hi;
	int ret;

	t->data_ctx = FGRAPH_CTX(frame, gops->idx, 1);
	barrier();
	ret = gops->entryfunc(trace, gops, fregs);
	barrier();
	t->data_ctx = ctx;
	if (!ret)
		t->frames[frame].data_hi = hi;
	return ret;
}

/*
 * Run the return callbacks of a frame that was left without returning.
 * @now: when that was noticed; the entry or return that noticed it uses
 * the same time, so gone frames never sort after the event that ends them.
 */
static void fgraph_frame_gone(struct fgraph_task *t, const struct fgraph_frame *f, int depth,
			      unsigned long long now)
{
	struct ftrace_graph_ret trace;
	unsigned int mask = f->mask, ctx;

	if (f->flags & FRAME_HOOKED) {
		/* its slot may still hold the hook: a stack switch usft did not see */
		struct fgraph_limbo *l = &t->limbo[t->limbo_next++ % FGRAPH_LIMBO];

		l->ret = f->ret;
		l->retp = f->retp;
	}
	if (!mask)
		return;
	trace.func = f->func;
	trace.retval = 0;
	trace.depth = t->base + depth;
	trace.overrun = t->overrun;
	trace.calltime = f->calltime;
	trace.rettime = now;
	trace.flags = FGRAPH_RET_UNWOUND;
	ctx = t->data_ctx;
	t->data_ctx = FGRAPH_CTX(depth, 0, 0);
	barrier();
	while (mask) {
		int i = __builtin_ctz(mask);
		struct fgraph_ops *gops = READ_ONCE(fgraph_array[i]);

		mask &= mask - 1;
		if (gops && gops->retfunc)
			gops->retfunc(&trace, gops, NULL);
	}
	barrier();
	t->data_ctx = ctx;
}

/*
 * The unusual cases of the entry hook, out of line so the common one (a
 * call below the frames already on the shadow stack) keeps few registers:
 * no shadow stack yet, another fgraph_ops joining the frame of this same
 * invocation, a tail call from a hooked frame, frames that are gone, a
 * full stack.  Called and returning inside the busy section.
 * Return: the index to push the new frame at, or -1 when none is pushed.
 */
static __attribute__((noinline)) int fgraph_entry_slow(struct fgraph_task *t,
						       struct fgraph_ops *gops, unsigned long ip,
						       struct ftrace_regs *fregs,
						       unsigned long long now)
{
	unsigned long id = arch_fgraph_frame_id(fregs);
	unsigned int sd = fgraph_sig_depth();
	struct ftrace_graph_ent trace;
	struct fgraph_frame *f;
	int top;

	if (!t->frames && fgraph_claim_stack(t))
		return -1;
	top = t->top;
	if (fgraph_is_hook(READ_ONCE(*arch_fgraph_ret_slot(fregs)))) {
		/*
		 * Another fgraph_ops on the same invocation joins its frame;
		 * otherwise this is a tail call from a hooked frame.
		 */
		f = top ? &t->frames[top - 1] : NULL;
		if (f && f->retp == id && f->func == ip &&
		    (f->flags & FRAME_HOOKED) && !(f->mask & (1U << gops->idx))) {
			trace.func = ip;
			trace.depth = t->base + top - 1;
			trace.calltime = f->calltime;
			barrier();
			t->busy = 0;
			if (!gops->entryfunc || fgraph_call_entry(t, gops, &trace, fregs, top - 1))
				f->mask |= 1U << gops->idx;
			barrier();
			t->busy = 1;
			return -1;
		}
	} else {
		/*
		 * Frames are gone when this call reuses their return slot (at
		 * any signal level: a live frame's slot holds return_to_handler,
		 * a call just wrote a real address there), or when their slot
		 * lies below this call's on the same signal level.  The first
		 * rule also catches frames left by siglongjmp() out of a
		 * handler, after which the signal level reads one too high.
		 */
		while (top && t->frames[top - 1].retp <= id &&
		       (t->frames[top - 1].retp == id || t->frames[top - 1].sig_depth == sd)) {
			top--;
			t->top = top;
			fgraph_frame_gone(t, &t->frames[top], top, now);
		}
	}
	if (top >= FGRAPH_STACK_DEPTH) {
		t->overrun++;
		return -1;
	}
	return top;
}

/*
 * The entry hook: the callback of every fgraph_ops' ftrace_ops (kernel
 * function_graph_enter_regs() + ftrace_push_return_trace()).
 */
static void fgraph_entry_func(unsigned long ip, unsigned long parent_ip,
			      struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct fgraph_ops *gops = container_of(op, struct fgraph_ops, ops);
	struct fgraph_task *t = &fgraph_task;
	unsigned long *retp = arch_fgraph_ret_slot(fregs);
	unsigned long id = arch_fgraph_frame_id(fregs);
	struct ftrace_graph_ent trace;
	struct fgraph_frame *f;
	unsigned long long now;
	int bit, top;

	/* first: the counter's latency overlaps the bookkeeping below */
	now = trace_clock_local();
	bit = fgraph_recursion_lock();
	if (bit < 0)
		return;
	if (unlikely(t->busy)) {
		t->overrun++;
		goto out_bit;
	}
	t->busy = 1;
	barrier();
	top = t->top;
	if (unlikely(!t->frames || fgraph_is_hook(READ_ONCE(*retp)) ||
		     top >= FGRAPH_STACK_DEPTH || (top && t->frames[top - 1].retp <= id))) {
		top = fgraph_entry_slow(t, gops, ip, fregs, now);
		if (top < 0)
			goto out;
	}
	f = &t->frames[top];
	f->ret = READ_ONCE(*retp);
	f->retp = id;
	f->func = ip;
	f->calltime = now;
	f->mask = 0;
	f->sig_depth = (unsigned short)fgraph_sig_depth();
	f->flags = 0;
	f->data_lo = f->data_hi = top ? t->frames[top - 1].data_hi : 0;
	t->top = top + 1;
	barrier();
	/*
	 * The frame is reserved: a signal arriving now pushes above it.  The
	 * entry callback runs outside the busy section so handlers nest.
	 */
	t->busy = 0;
	trace.func = ip;
	trace.depth = t->base + top;
	trace.calltime = now;
	if (gops->entryfunc && !fgraph_call_entry(t, gops, &trace, fregs, top)) {
		t->busy = 1;
		barrier();
		if (t->top == top + 1)
			t->top = top;
		goto out;
	}
	t->busy = 1;
	barrier();
	f->mask = 1U << gops->idx;
	f->flags = FRAME_HOOKED;
	barrier();
	WRITE_ONCE(*retp, (unsigned long)return_to_handler);
out:
	barrier();
	t->busy = 0;
out_bit:
	fgraph_recursion_unlock(bit);
}

static __attribute__((noreturn, cold)) void fgraph_lost_return(unsigned long retp)
{
	pr_err("usft: fgraph: no shadow stack frame for return slot %#lx; cannot return\n", retp);
	abort();
}

/* give this thread's stack back; its frames never return (called busy) */
static void fgraph_drop_stack(struct fgraph_task *t, unsigned long long now)
{
	int slot = t->slot;

	while (t->top > 0) {
		t->top--;
		fgraph_frame_gone(t, &t->frames[t->top], t->top, now);
	}
	t->frames = NULL;
	t->slot = -1;
	if (slot >= 0)
		__atomic_fetch_and(&fgraph_pool_map[slot / 64], ~(1UL << (slot % 64)),
				   __ATOMIC_RELEASE);
}

/* take parked stack @s as this thread's; Return: false if someone else did */
static bool fgraph_adopt(struct fgraph_task *t, int s)
{
	unsigned long bit = 1UL << (s % 64);

	if (!(__atomic_fetch_and(&fgraph_parked_map[s / 64], ~bit, __ATOMIC_ACQUIRE) & bit))
		return false;
	t->slot = s;
	t->frames = (struct fgraph_frame *)(fgraph_pool + (size_t)s * FGRAPH_STACK_BYTES);
	t->data = (unsigned long *)((char *)t->frames + FGRAPH_FRAMES_BYTES);
	t->data_ctx = FGRAPH_CTX_NONE;
	t->top = fgraph_parked[s].top;
	t->base = fgraph_parked[s].base;
	return true;
}

/*
 * A return through a slot no frame of this thread's stack owns: the
 * program switched stacks without swapcontext() (a coroutine library's own
 * assembly, glibc's setcontext() to a context another switch parked).
 * First, a parked context whose stack has that frame: the thread is in it
 * now (its own stack is dropped).  Else a frame this thread gave up as
 * gone, whose slot still held the hook: it returns, untraced (noted once).
 * Return: true with *@ret set for a limbo return, false when the thread's
 * stack is now the right one.  Never returns when the frame is nowhere.
 */
static __attribute__((noinline, cold)) bool fgraph_lost_frame(struct fgraph_task *t,
							      unsigned long retp,
							      unsigned long long now,
							      unsigned long *ret)
{
	static const char note[] = "usft: fgraph: a stack switch usft does not see "
		"(not swapcontext(): hand-written, a coroutine library's own?) cut frames "
		"off; they return untraced\n";

	for (int w = 0; w < FGRAPH_MAX_TASKS / 64; w++) {
		unsigned long m = __atomic_load_n(&fgraph_parked_map[w], __ATOMIC_ACQUIRE);

		while (m) {
			int s = w * 64 + __builtin_ctzl(m);
			const struct fgraph_frame *fr = (const struct fgraph_frame *)
				(fgraph_pool + (size_t)s * FGRAPH_STACK_BYTES);

			m &= m - 1;
			for (int i = READ_ONCE(fgraph_parked[s].top) - 1; i >= 0; i--) {
				if (fr[i].retp != retp)
					continue;
				if (t->frames)
					fgraph_drop_stack(t, now);
				if (fgraph_adopt(t, s))
					return false;
				break;
			}
		}
	}
	for (unsigned int k = 0; k < FGRAPH_LIMBO; k++) {
		struct fgraph_limbo *l = &t->limbo[(t->limbo_next - 1 - k) % FGRAPH_LIMBO];

		if (l->retp != retp)
			continue;
		l->retp = 0;	/* a tail-call pair: the outer frame is next */
		*ret = l->ret;
		if (!__atomic_exchange_n(&fgraph_limbo_noted, 1, __ATOMIC_RELAXED)) {
			int saved = errno;
			ssize_t n = write(2, note, sizeof(note) - 1);

			(void)n;
			errno = saved;
		}
		return true;
	}
	fgraph_lost_return(retp);
}

/*
 * Called by return_to_handler with the return registers saved in @fregs
 * (ax, dx, xmm0/1, bp, sp = the caller's stack pointer).  Returns where the
 * traced function really returns to (kernel ftrace_return_to_handler()).
 */
__attribute__((visibility("hidden")))
unsigned long fgraph_return_to_handler(struct ftrace_regs *fregs)
{
	struct fgraph_task *t = &fgraph_task;
	struct ftrace_graph_ret trace;
	struct fgraph_frame *f;
	unsigned long retp, ret;
	unsigned long long now;
	unsigned int mask;
	int i, top;

	/*
	 * A tasks-RCU reader section, as the callers' TASK_MARK/TASK_EXIT.
	 * errno is not saved: nothing here changes it and return callbacks
	 * must leave it alone (the contract of usft/fgraph.h).
	 */
	now = trace_clock_local();
	usft_span_enter();
	retp = arch_fgraph_return_id(fregs);
	t->busy++;
	barrier();
again:
	top = t->top;
	i = top - 1;
	if (unlikely(i < 0 || t->frames[i].retp != retp)) {
		for (; i >= 0; i--)
			if (t->frames[i].retp == retp)
				break;
		if (unlikely(i < 0)) {
			if (!fgraph_lost_frame(t, retp, now, &ret))
				goto again;
			barrier();
			t->busy--;
			usft_span_exit();
			return ret;
		}
		/* frames above the one returning were left without a return */
		while (--top > i) {
			t->top = top;
			fgraph_frame_gone(t, &t->frames[top], top, now);
		}
	}
	f = &t->frames[i];
	ret = f->ret;
	mask = f->mask;
	if (likely(mask)) {
		trace.func = f->func;
		trace.calltime = f->calltime;
	}
	t->top = i;
	/*
	 * The return callbacks run inside the busy section: what they call
	 * (and a signal handler arriving meanwhile) is not hooked, so a
	 * callback calling traced code cannot loop.  The kernel instead
	 * requires return callbacks to be notrace all the way down.
	 */
	if (likely(mask)) {
		unsigned int ctx = t->data_ctx;

		trace.retval = ftrace_regs_get_return_value(fregs);
		trace.depth = t->base + i;
		trace.overrun = t->overrun;
		trace.rettime = now;
		trace.flags = 0;
		t->data_ctx = FGRAPH_CTX(i, 0, 0);
		barrier();
		do {
			int k = __builtin_ctz(mask);
			struct fgraph_ops *gops = READ_ONCE(fgraph_array[k]);

			mask &= mask - 1;
			if (gops && gops->retfunc)
				gops->retfunc(&trace, gops, fregs);
		} while (mask);
		barrier();
		t->data_ctx = ctx;
	}
	barrier();
	t->busy--;
	usft_span_exit();
	return ret;
}

USFT_API unsigned long ftrace_graph_ret_addr(struct task_struct *task, int *idx,
					     unsigned long ret, unsigned long *retp)
{
	struct fgraph_task *t = &fgraph_task;

	if (task || !return_to_handler || !fgraph_is_hook(ret) || !t->frames)
		return ret;
	for (int i = t->top - 1; i >= 0; i--) {
		if (!arch_fgraph_owns_slot(t->frames[i].retp, retp))
			continue;
		ret = t->frames[i].ret;
		if (!fgraph_is_hook(ret))
			return ret;	/* else a tail call: the next frame down has it */
	}
	return ret;
}

/* ---- data storage (kernel fgraph_reserve_data() and the retrieve pair) ---- */

USFT_API void *fgraph_reserve_data(int idx, int size_bytes)
{
	struct fgraph_task *t = &fgraph_task;
	unsigned int ctx = t->data_ctx, words, at;
	struct fgraph_frame *f;

	/* only from the entry callback of @idx, once per call */
	if (!t->frames || ctx == FGRAPH_CTX_NONE || !(ctx & 1) ||
	    ((ctx >> 1) & 0x7f) != (unsigned int)idx)
		return NULL;
	if (size_bytes <= 0 || size_bytes > (int)FGRAPH_MAX_DATA_SIZE)
		return NULL;
	f = &t->frames[ctx >> 8];
	words = ((unsigned int)size_bytes + sizeof(long) - 1) / sizeof(long);
	at = f->data_hi;
	if (at + 1 + words > FGRAPH_DATA_WORDS)
		return NULL;
	/*
	 * Claim the words before writing them: a signal handler arriving in
	 * between puts its own frames' data above, not over, this block.
	 */
	f->data_hi = at + 1 + words;
	t->data_ctx = ctx & ~1U;
	barrier();
	t->data[at] = (unsigned long)idx << 16 | words;
	return &t->data[at + 1];
}

USFT_API int usft_fgraph_depth(void)
{
	const struct fgraph_task *t = &fgraph_task;

	return t->frames ? t->base + t->top : 0;
}

USFT_API void *fgraph_retrieve_parent_data(int idx, int *size_bytes, int depth)
{
	struct fgraph_task *t = &fgraph_task;
	unsigned int ctx = t->data_ctx, frame;
	const struct fgraph_frame *f;

	if (!t->frames || ctx == FGRAPH_CTX_NONE || depth < 0)
		return NULL;
	frame = ctx >> 8;
	if ((unsigned int)depth > frame)
		return NULL;
	f = &t->frames[frame - (unsigned int)depth];
	for (unsigned int w = f->data_lo; w < f->data_hi;) {
		unsigned long h = t->data[w];
		unsigned int n = (unsigned int)(h & 0xffff);

		if ((h >> 16) == (unsigned long)idx) {
			if (size_bytes)
				*size_bytes = (int)(n * sizeof(long));
			return &t->data[w + 1];
		}
		w += 1 + n;
	}
	return NULL;
}

USFT_API void *fgraph_retrieve_data(int idx, int *size_bytes)
{
	return fgraph_retrieve_parent_data(idx, size_bytes, 0);
}

USFT_API void usft_fgraph_unwind_begin(void)
{
	struct fgraph_task *t = &fgraph_task;
	const unsigned long rth = (unsigned long)return_to_handler;

	if (!t->frames || !t->top)
		return;
	t->busy++;
	barrier();
	/* top down, so a tail-call pair ends with the outer frame's real address */
	for (int i = t->top - 1; i >= 0; i--) {
		struct fgraph_frame *f = &t->frames[i];
		unsigned long *slot = arch_fgraph_id_slot(f->retp), v;

		if (!(f->flags & FRAME_HOOKED))
			continue;
		v = slot ? READ_ONCE(*slot) : 0;
		if (fgraph_is_hook(v)) {
			/* put back the same hook afterwards (graph jmp mode keeps its pairing) */
			f->flags = (unsigned short)(v == rth ? f->flags & ~FRAME_JMP
							: f->flags | FRAME_JMP);
			WRITE_ONCE(*slot, f->ret);
		}
		f->flags &= ~FRAME_HOOKED;
	}
	barrier();
	t->busy--;
}

USFT_API void usft_fgraph_unwind_end(unsigned long sp)
{
	struct fgraph_task *t = &fgraph_task;
	const unsigned long rth = (unsigned long)return_to_handler;
	unsigned long long now;
	int top;

	if (!t->frames || !t->top)
		return;
	t->busy++;
	barrier();
	top = t->top;
	now = trace_clock_local();
	while (top && t->frames[top - 1].retp <= sp) {
		top--;
		t->top = top;
		fgraph_frame_gone(t, &t->frames[top], top, now);
	}
	/* bottom up, so a tail-call pair's slot ends up hooked */
	for (int i = 0; i < top; i++) {
		struct fgraph_frame *f = &t->frames[i];
		unsigned long *slot = arch_fgraph_id_slot(f->retp);

		if ((f->flags & FRAME_HOOKED) || !f->mask)
			continue;
		if (slot && READ_ONCE(*slot) == f->ret) {
			WRITE_ONCE(*slot, (f->flags & FRAME_JMP) ? FGRAPH_JMP_RET : rth);
			f->flags |= FRAME_HOOKED;
		}
	}
	barrier();
	t->busy--;
}

/* ---- context switches (swapcontext) ------------------------------------ */

/*
 * Each context has its own shadow stack.  Before a switch the current one
 * is parked (the handle names it); back in that context, whoever switched
 * to it, it is taken again, and the stack of the context that ran until
 * now is dropped if it is still this thread's (that context ended: its
 * function returned to uc_link, or it was left with setcontext()).  A new
 * context's first traced call claims a fresh stack whose depths continue
 * from the frames that switched to it.
 */
USFT_API void *usft_fgraph_context_save(void)
{
	struct fgraph_task *t = &fgraph_task;
	int s = t->slot;

	if (!t->frames || s < 0) {
		t->next_base = t->frames ? t->base + t->top : 0;
		return NULL;
	}
	t->busy++;
	barrier();
	fgraph_parked[s].top = t->top;
	fgraph_parked[s].base = t->base;
	__atomic_fetch_or(&fgraph_parked_map[s / 64], 1UL << (s % 64), __ATOMIC_RELEASE);
	t->next_base = t->base + t->top;
	t->frames = NULL;
	t->top = 0;
	t->slot = -1;
	barrier();
	t->busy--;
	return (void *)(uintptr_t)(s + 1);
}

USFT_API void usft_fgraph_context_resume(void *handle)
{
	struct fgraph_task *t = &fgraph_task;
	uintptr_t h = (uintptr_t)handle;

	t->busy++;
	barrier();
	/* a return that found the parked frames first has taken the stack already */
	if (t->frames && (!h || t->slot != (int)(h - 1)))
		fgraph_drop_stack(t, trace_clock_local());
	if (!t->frames && h && h <= FGRAPH_MAX_TASKS)
		fgraph_adopt(t, (int)(h - 1));
	t->next_base = 0;
	barrier();
	t->busy--;
}

/* ---- registration ---------------------------------------------------- */

USFT_API int register_ftrace_graph(struct fgraph_ops *gops)
{
	USFT_API_ENTER(busy);
	int ret, idx = -1;

	if (busy)
		return usft_err(busy);
	if (!gops)
		return usft_err(-EINVAL);
	if (!return_to_handler)
		return usft_err(-EOPNOTSUPP);
	ret = ftrace_lazy_init();
	if (ret)
		return usft_err(ret);
	trace_clock_setup();
	pthread_mutex_lock(&fgraph_lock);
	if (gops->ops.flags & FTRACE_OPS_FL_ENABLED) {
		ret = -EBUSY;
		goto out;
	}
	ret = fgraph_pool_init();
	if (ret)
		goto out;
	/* round robin, so frames of a removed fgraph_ops rarely meet a new one */
	for (unsigned int n = 0; n < FGRAPH_ARRAY_SIZE; n++) {
		unsigned int i = (fgraph_next_idx + n) % FGRAPH_ARRAY_SIZE;

		if (!fgraph_array[i]) {
			idx = (int)i;
			break;
		}
	}
	if (idx < 0) {
		ret = -ENOSPC;	/* kernel: fgraph_lru_alloc_index() found no slot */
		goto out;
	}
	fgraph_next_idx = (unsigned int)idx + 1;
	gops->idx = idx;
	gops->ops.func = fgraph_entry_func;
	gops->ops.flags |= FTRACE_OPS_FL_GRAPH;
	smp_store_release(&fgraph_array[idx], gops);
	ret = register_ftrace_function(&gops->ops);
	if (ret) {
		WRITE_ONCE(fgraph_array[idx], NULL);
		gops->ops.flags &= ~FTRACE_OPS_FL_GRAPH;
		goto out;
	}
	fgraph_nr_ops++;
out:
	pthread_mutex_unlock(&fgraph_lock);
	return usft_err(ret);
}

USFT_API void unregister_ftrace_graph(struct fgraph_ops *gops)
{
	USFT_API_ENTER(busy);
	int idx;

	if (busy) {
		pr_warn("usft: %s() from inside a callback or from a signal handler that "
			"interrupted an update: refused (EDEADLK)\n", __func__);
		return;
	}
	if (!gops)
		return;
	pthread_mutex_lock(&fgraph_lock);
	idx = gops->idx;
	if (idx < 0 || idx >= FGRAPH_ARRAY_SIZE || fgraph_array[idx] != gops) {
		pthread_mutex_unlock(&fgraph_lock);
		return;
	}
	/* no entry callback runs after this (grace period inside) */
	unregister_ftrace_function(&gops->ops);
	WRITE_ONCE(fgraph_array[idx], NULL);
	/* and no return callback: return_to_handler's C part is a reader section */
	synchronize_rcu_tasks();
	gops->ops.flags &= ~FTRACE_OPS_FL_GRAPH;
	fgraph_nr_ops--;
	pthread_mutex_unlock(&fgraph_lock);
}
