// SPDX-License-Identifier: MIT
/*
 * tracers/trace_stack.c - stack traces: the stacktrace command's EV_STACK
 * event in the recording (kernel __trace_stack() into the top-level
 * buffer), and the stack tracer (kernel kernel/trace/trace_stack.c).
 */
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <usft/ftrace.h>
#include <usft/stacktrace.h>
#include <usft/usft.h>
#include "trace_array.h"
#include "trace_stack.h"
#include "tracer.h"

/*
 * Called in a traced thread from the stacktrace probe (hot-path rules): the
 * walk starts at the probed function (stack_trace_save() inside a probe),
 * and the frames go into the thread's ring after the stack's header.
 */
void usft_record_stack(unsigned long ip)
{
	uint64_t w[2 + USFT_STACK_ENTRIES];
	struct usft_tbuf *b;
	unsigned int n;

	if (unlikely(!__atomic_load_n(&usft_tracing_on, __ATOMIC_RELAXED)))
		return;
	b = usft_tbuf_get();
	if (unlikely(!b))
		return;
	n = stack_trace_save((unsigned long *)&w[2], USFT_STACK_ENTRIES, 0);
	w[0] = usft_ev_w0(usft_trace_clock() - usft_trace_base, usft_tbuf_cpu(b));
	w[1] = usft_ev_w1(ip, n, EV_STACK);
	usft_tbuf_begin(b);
	usft_tbuf_reserve_n(b, w, 2 + n);
	usft_tbuf_end(b);
}

/* ---- the stack tracer ------------------------------------------------------ */

/*
 * kernel/trace/trace_stack.c: a function callback on every function (or the
 * stack_trace_filter ones) that measures how much of the thread's stack is
 * in use at that call; when it is more than the deepest seen so far
 * (stack_max_size), the stack is walked and kept with each frame's depth:
 * stack_trace shows it.  The kernel measures from the top of the task's
 * THREAD_SIZE-aligned stack; here from the top usft_stack_bounds() gives
 * (the thread's pointer, or __libc_stack_end for the main thread), so the
 * static TLS below a thread's pointer counts as stack in use.
 *
 * Only one thread at a time records (a try-lock; the kernel spins with
 * interrupts off, which a signal handler on the same thread would
 * deadlock); the control thread reads under a sequence count.
 */
static struct {
	unsigned long max_size;		/* stack_max_size */
	unsigned int nr;		/* entries of the deepest stack */
	unsigned long entries[USFT_STACK_ENTRIES];
	unsigned long index[USFT_STACK_ENTRIES];	/* depth at each entry */
	unsigned int seq;		/* odd while the stack above is rewritten */
	int busy;			/* the recorder's try-lock */
	int enabled;			/* stack_tracer_enabled */
	bool registered;
} ST;

static void stack_trace_call(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			     struct ftrace_regs *fregs)
{
	unsigned long frames[USFT_STACK_ENTRIES], slots[USFT_STACK_ENTRIES], sp, lo, hi, size;
	unsigned int n;

	(void)op;
	if (unlikely(!fregs) || usft_tbuf_self == USFT_TBUF_SELF)
		return;
	sp = ftrace_regs_get_stack_pointer(fregs);
	if (!usft_stack_bounds(sp, &lo, &hi))
		return;
	size = hi - sp;
	if (size <= __atomic_load_n(&ST.max_size, __ATOMIC_RELAXED))
		return;
	if (__atomic_exchange_n(&ST.busy, 1, __ATOMIC_ACQUIRE))
		return;		/* another thread (or this one, interrupted) records */
	if (size > __atomic_load_n(&ST.max_size, __ATOMIC_RELAXED)) {
		n = usft_stack_trace_save_fregs(fregs, ip, parent_ip, frames, slots,
						USFT_STACK_ENTRIES);
		__atomic_store_n(&ST.seq, ST.seq + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		for (unsigned int i = 0; i < n; i++) {
			__atomic_store_n(&ST.entries[i], frames[i], __ATOMIC_RELAXED);
			__atomic_store_n(&ST.index[i], hi - slots[i], __ATOMIC_RELAXED);
		}
		__atomic_store_n(&ST.nr, n, __ATOMIC_RELAXED);
		__atomic_store_n(&ST.max_size, size, __ATOMIC_RELAXED);
		__atomic_store_n(&ST.seq, ST.seq + 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&ST.busy, 0, __ATOMIC_RELEASE);
}

static struct ftrace_ops stack_trace_ops = { .func = stack_trace_call };

static int stack_tracer_set(bool on)
{
	int ret = 0;

	if (on && !ST.registered) {
		ret = register_ftrace_function(&stack_trace_ops);
		ST.registered = !ret;
	} else if (!on && ST.registered) {
		ret = unregister_ftrace_function(&stack_trace_ops);
		ST.registered = false;
	}
	if (!ret)
		ST.enabled = on;
	return ret;
}

/* a consistent copy of the deepest stack; Return: its entries */
static unsigned int stack_copy(unsigned long *entries, unsigned long *index)
{
	for (int tries = 0; tries < 1000; tries++) {
		unsigned int s1 = __atomic_load_n(&ST.seq, __ATOMIC_ACQUIRE), n, s2;

		if (s1 & 1) {
			sched_yield();
			continue;
		}
		n = __atomic_load_n(&ST.nr, __ATOMIC_RELAXED);
		for (unsigned int i = 0; i < n && i < USFT_STACK_ENTRIES; i++) {
			entries[i] = __atomic_load_n(&ST.entries[i], __ATOMIC_RELAXED);
			index[i] = __atomic_load_n(&ST.index[i], __ATOMIC_RELAXED);
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&ST.seq, __ATOMIC_RELAXED);
		if (s1 == s2)
			return n;
	}
	return 0;
}

/* kernel t_show() and print_disabled() */
static void print_stack_trace(FILE *f)
{
	unsigned long entries[USFT_STACK_ENTRIES], index[USFT_STACK_ENTRIES];
	unsigned int n = stack_copy(entries, index);

	fprintf(f, "        Depth    Size   Location    (%u entries)\n"
		   "        -----    ----   --------\n", n);
	if (!ST.enabled && !__atomic_load_n(&ST.max_size, __ATOMIC_RELAXED))
		fputs("#\n"
		      "#  Stack tracer disabled\n"
		      "#\n"
		      "# To enable the stack tracer, either add 'stacktrace' to the\n"
		      "# kernel command line\n"
		      "# or 'echo 1 > /proc/sys/kernel/stack_tracer_enabled'\n"
		      "#\n", f);
	for (unsigned int i = 0; i < n; i++) {
		unsigned long size = i + 1 == n ? index[i] : index[i] - index[i + 1], off = 0;
		const char *name = usft_kallsyms_lookup(entries[i], &off);

		fprintf(f, "%3u) %8lu   %5lu   ", i, index[i], size);
		if (!name)
			fprintf(f, "0x%lx\n", entries[i]);
		else
			fprintf(f, "%s+0x%lx\n", name, off);
	}
}

int usft_stack_tracer_read(const char *file, FILE *f)
{
	if (!strcmp(file, "stack_trace"))
		print_stack_trace(f);
	else if (!strcmp(file, "stack_max_size"))
		fprintf(f, "%lu\n", __atomic_load_n(&ST.max_size, __ATOMIC_RELAXED));
	else if (!strcmp(file, "stack_trace_filter")) {
		if (!usft_print_ops_hash(f, &stack_trace_ops, 0))
			fputs("#### all functions enabled ####\n", f);
	} else if (!strcmp(file, "stack_tracer_enabled"))
		fprintf(f, "%d\n", ST.enabled);
	else
		return -ENOENT;
	return 0;
}

static bool blank(const char *v, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!isspace((unsigned char)v[i]))
			return false;
	return true;
}

int usft_stack_tracer_write(const char *file, const char *v, size_t len, bool append, char *why,
			    size_t wlen)
{
	unsigned long n;
	char *copy;
	int ret;

	if (!strcmp(file, "stack_max_size")) {
		if (usft_tracefs_parse_ulong(v, len, 10, &n)) {
			snprintf(why, wlen, "stack_max_size takes a number of bytes (0 starts over)");
			return -EINVAL;
		}
		__atomic_store_n(&ST.max_size, n, __ATOMIC_RELAXED);
		return 0;
	}
	if (!strcmp(file, "stack_tracer_enabled")) {
		if (usft_tracefs_parse_ulong(v, len, 10, &n)) {
			snprintf(why, wlen, "stack_tracer_enabled takes 0 or 1");
			return -EINVAL;
		}
		ret = stack_tracer_set(n != 0);
		if (ret)
			snprintf(why, wlen, "the stack tracer's callback: %s", strerror(-ret));
		return ret;
	}
	if (strcmp(file, "stack_trace_filter"))
		return -ENOENT;
	/* set_ftrace_filter's globs (`>` replaces, `>>` adds, `!glob` removes) */
	if (blank(v, len))
		return append ? 0 : ftrace_set_filter(&stack_trace_ops, NULL, 0, 1);
	copy = strndup(v, len);
	if (!copy)
		return -ENOMEM;
	for (size_t i = 0; copy[i]; i++)
		if (copy[i] == '\n' || copy[i] == '\t')
			copy[i] = ' ';
	/* a dlclose() cleans it also while the stack tracer is off */
	ret = usft_track_ops_hashes(&stack_trace_ops, true);
	if (!ret)
		ret = ftrace_set_filter(&stack_trace_ops, (unsigned char *)copy, -1, !append);
	if (ret)
		snprintf(why, wlen, ret == -EINVAL ? "'%.200s' matches no function (see "
			 "available_filter_functions)" : "%.200s: %s", copy, strerror(-ret));
	free(copy);
	return ret;
}

/* detach: the stack tracer off, its filter and deepest stack gone */
void usft_stack_tracer_reset(void)
{
	stack_tracer_set(false);
	ftrace_free_filter(&stack_trace_ops);
	__atomic_store_n(&ST.max_size, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ST.nr, 0, __ATOMIC_RELAXED);
}

/* ---- the stacks of a tracefs trace array ----------------------------------- */

/*
 * A trace array's ring holds 64-byte entries; a TA_STACK entry names its
 * frames by position in this second ring, of words: a tag word (the
 * position itself), then the frames.  A writer reserves its words with
 * one atomic add, writes the frames, then the tag; a reader takes a stack
 * whose tag is right and whose words no later reservation has reached
 * since, checked again after the copy (the kernel's stack entries live in
 * the ring itself).  STORE_WORDS is 8 MiB of address space, touched as it
 * is used: about 90,000 stacks of 10 frames, more than the default ring's
 * entries.
 */
#define STORE_WORDS	(1UL << 20)

struct usft_stack_store {
	unsigned long head __attribute__((aligned(64)));
	unsigned long *w;
};

struct usft_stack_store *usft_stack_store_new(void)
{
	struct usft_stack_store *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->w = mmap(NULL, STORE_WORDS * sizeof(long), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (s->w == MAP_FAILED) {
		free(s);
		return NULL;
	}
	return s;
}

void usft_stack_store_free(struct usft_stack_store *s)
{
	if (!s)
		return;
	munmap(s->w, STORE_WORDS * sizeof(long));
	free(s);
}

unsigned long usft_stack_store_put(struct usft_stack_store *s, const unsigned long *f,
				   unsigned int n)
{
	unsigned long pos = __atomic_fetch_add(&s->head, n + 1, __ATOMIC_RELAXED);

	__atomic_store_n(&s->w[pos % STORE_WORDS], ~pos, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < n; i++)
		__atomic_store_n(&s->w[(pos + 1 + i) % STORE_WORDS], f[i], __ATOMIC_RELAXED);
	__atomic_store_n(&s->w[pos % STORE_WORDS], pos, __ATOMIC_RELEASE);
	return pos + 1;
}

/* whether the words [pos, pos + words) are still the ones written there */
static bool store_holds(struct usft_stack_store *s, unsigned long pos, unsigned long words)
{
	return __atomic_load_n(&s->head, __ATOMIC_ACQUIRE) - pos <= STORE_WORDS - words;
}

unsigned int usft_stack_store_get(struct usft_stack_store *s, unsigned long nr, unsigned int n,
				  unsigned long *f)
{
	unsigned long pos = nr - 1;

	if (!nr || n > USFT_STACK_ENTRIES || !store_holds(s, pos, n + 1UL) ||
	    __atomic_load_n(&s->w[pos % STORE_WORDS], __ATOMIC_ACQUIRE) != pos)
		return 0;
	for (unsigned int i = 0; i < n; i++)
		f[i] = __atomic_load_n(&s->w[(pos + 1 + i) % STORE_WORDS], __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return store_holds(s, pos, n + 1UL) ? n : 0;
}
