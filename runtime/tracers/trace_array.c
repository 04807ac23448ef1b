// SPDX-License-Identifier: MIT
/*
 * tracers/trace_array.c - the tracefs of a traced process, served through
 * the control channel to `usft mount` (docs/tracefs.md).
 *
 * A trace array (kernel kernel/trace/trace.h: struct trace_array) is the
 * top-level tracefs directory or one instances/NAME: its own ftrace_ops
 * (the function tracer and the set_ftrace_filter/set_ftrace_notrace
 * hashes), its own fgraph_ops (function_graph), ring buffer, tracing_on,
 * clock, cpumask, pid lists and options.  The tracers are live as in the
 * kernel: `echo function > current_tracer` registers the array's ops at
 * once, a filter write while it runs updates the text in one batch.
 *
 * The ring (kernel ring_buffer.c, overwrite mode) is one array of 64-byte
 * entries per trace array, shared by every thread: a producer takes a
 * position with one atomic add and marks the entry's sequence word odd
 * while it fills it, even (2 * position + 2) when done, so the reader (the
 * control thread) takes only whole entries and counts what was overwritten
 * under it as lost.  The hot path: no lock, no allocation, no syscall (one
 * gettid() per thread lifetime, errno kept), signal-safe (a handler takes
 * its own position).
 *
 * Everything here but the callbacks runs on the control thread, one request
 * at a time (tracers/control.c), so the arrays' configuration needs no lock
 * of its own.  What a callback reads through a pointer (pid lists, the
 * set_graph_* sets) is replaced, never changed in place, and the old copy
 * is freed only once the ops that could read it are unregistered.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <usft/fgraph.h>
#include <usft/ftrace.h>
#include <usft/ftrace_probe.h>
#include <usft/usft.h>
#include "tid.h"
#include <usft/stacktrace.h>
#include "trace_array.h"
#include "trace_stack.h"
#include "trace_events.h"
#include "trace_mod.h"
#include "tracer.h"

/* ---- the ring ------------------------------------------------------------ */

enum ta_type { TA_FUNC = 1, TA_GENT, TA_GRET, TA_MARK, TA_STACK, TA_EVENT };

struct ta_ent {
	uint64_t seq;		/* 2 * pos + 1 while written, 2 * pos + 2 when whole */
	uint64_t ts;
	uint32_t tid;
	uint16_t cpu;
	uint8_t type;
	uint8_t depth;
	uint64_t a, b, c, d, e;	/* FUNC: ip, parent; GENT: func; GRET: func,
				   calltime, retval; MARK: marker number;
				   STACK: the function, the number of its stack
				   in the array's store, its frames;
				   EVENT: offset, length, id (trace_events.c) */
};

#define TA_MAX_ENTS	(1UL << 22)	/* mapped (MAP_NORESERVE) per array: 256 MiB */
#define TA_STALE	4096		/* an entry this far behind head and still not whole is lost */
#define TA_DEF_KB	1408		/* kernel's default buffer_size_kb */
#define TA_MARKS	64		/* trace_marker texts kept per array */
#define TA_MARK_LEN	1024
#define TA_MAX_PIDS	1024

struct ta_ring {
	struct ta_ent *ents;
	unsigned long mask;		/* entries in use - 1 */
	unsigned long head __attribute__((aligned(64)));	/* next position */
	unsigned long tail __attribute__((aligned(64)));	/* first not consumed */
	unsigned long lost;		/* reader: overwritten before read */
	unsigned long base;		/* head at the last clear: entries-written */
};

/* a sorted set of longs published to the callbacks (pids, graph functions) */
struct ta_set {
	struct ta_set *old;
	size_t n;
	unsigned long v[];
};

enum ta_tracer { TA_NOP, TA_FUNCTION, TA_GRAPH };
enum ta_clock { CLK_LOCAL, CLK_GLOBAL, CLK_COUNTER, CLK_MONO, CLK_MONO_RAW, CLK_BOOT, CLK_NR };
static const char *const clock_names[] = { "local", "global", "counter", "mono", "mono_raw",
					    "boot" };

/* options/ and trace_options (kernel TRACE_ITER_* and the tracers' own) */
struct ta_opt {
	const char *name;
	bool def;
	bool top_only;
};
static const struct ta_opt ta_opts[] = {
	{ "print-parent", true }, { "sym-offset", false }, { "sym-addr", false },
	{ "verbose", false }, { "raw", false }, { "hex", false }, { "bin", false },
	{ "block", false }, { "fields", false }, { "trace_printk", true }, { "annotate", true },
	{ "userstacktrace", false }, { "sym-userobj", false }, { "printk-msg-only", false },
	{ "context-info", true }, { "latency-format", false }, { "record-cmd", true },
	{ "record-tgid", false }, { "overwrite", true }, { "disable_on_free", false },
	{ "irq-info", true }, { "markers", true }, { "event-fork", false },
	{ "pause-on-trace", false }, { "hash-ptr", true }, { "function-trace", true },
	{ "function-fork", false }, { "display-graph", false }, { "stacktrace", false },
	/* the function tracer's */
	{ "func_stack_trace", false },
	/* function_graph's */
	{ "funcgraph-overrun", false }, { "funcgraph-cpu", true }, { "funcgraph-overhead", true },
	{ "funcgraph-proc", false }, { "funcgraph-duration", true }, { "funcgraph-abstime", false },
	{ "funcgraph-irqs", true }, { "funcgraph-tail", false }, { "funcgraph-retval", false },
	{ "funcgraph-retval-hex", false }, { "sleep-time", true, true }, { "graph-time", true, true },
};
#define NR_OPTS (sizeof(ta_opts) / sizeof(ta_opts[0]))
enum {
	OPT_PRINT_PARENT, OPT_SYM_OFFSET, OPT_SYM_ADDR, OPT_CONTEXT = 14, OPT_OVERWRITE = 18,
	OPT_PRINTK = 9, OPT_MARKERS = 21, OPT_PAUSE = 23, OPT_FUNC_STACK = 29, OPT_FG_OVERRUN, OPT_FG_CPU,
	OPT_FG_OVERHEAD, OPT_FG_PROC, OPT_FG_DURATION, OPT_FG_ABSTIME, OPT_FG_IRQS, OPT_FG_TAIL,
	OPT_FG_RETVAL, OPT_FG_RETVAL_HEX,
};
#define OPT(tr, o) (((tr)->options >> (o)) & 1)

/*
 * The texts of trace_marker writes and __trace_puts() (any thread): slot
 * nr % TA_MARKS holds text nr while its seq is 2 * nr + 2 (2 * nr + 1
 * while it is written; a writer that finds its slot being written drops
 * its text, as a full ring would).  The reader copies and checks seq again.
 */
struct ta_mark {
	unsigned long seq;
	char text[TA_MARK_LEN];
};

struct trace_array {
	struct trace_array *next;
	char name[64];			/* "" for the top level */
	int on;				/* tracing_on (callbacks read it) */
	int clock;			/* enum ta_clock (callbacks read it) */
	unsigned long cpumask;		/* callbacks: bit per CPU below 64 */
	enum ta_tracer tracer;
	unsigned long buffer_kb;	/* per CPU, as the kernel's */
	unsigned long long options;
	struct ta_ring ring;
	struct ftrace_ops ops;		/* function tracer; the filter hashes live here */
	struct fgraph_ops gops;		/* function_graph, its hashes kept equal to ops' */
	bool func_reg, graph_reg;
	struct ta_set *pids, *nopids;	/* set_ftrace_pid, set_ftrace_notrace_pid */
	struct ta_set *retired;		/* replaced sets, freed once nothing can read them */
	struct ta_ent *snap;		/* snapshot: a copy of the ring, NULL: not allocated */
	size_t snap_n;
	unsigned long marks_nr;
	struct ta_mark *marks;
	char *errlog;			/* error_log text */
	struct ta_mod *mods[2];		/* cached :mod: filters: set_ftrace_filter, _notrace */
	struct usft_stack_store *stacks;	/* TA_STACK frames (trace_stack.c) */
	int nr_errs;			/* its entries */
	bool ready;
};

static struct trace_array top;
static struct trace_array *instances;
static unsigned long ta_counter;	/* trace_clock counter */
static int nr_cpus = 1;

/* top level only: max_graph_depth, set_graph_function / set_graph_notrace */
static int graph_max_depth;
static struct ftrace_ops graph_fn_ops, graph_notrace_ops;	/* never registered: hashes */
static struct ta_set *graph_fn_set, *graph_nt_set;
/*
 * A dlclose() (any thread, ftrace_lock held) takes the unloaded object's
 * ips out of the published graph sets in place (ta_unloaded()); set_lock
 * keeps a retired set from being freed under it, unload_gen tells a
 * set_graph_* write that raced with it to build its set again.
 */
static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long unload_gen;
static void ta_unloaded(unsigned long lo, unsigned long hi);
static __thread int graph_start __attribute__((tls_model("initial-exec")));
static __thread int graph_nt_depth __attribute__((tls_model("initial-exec")));

static inline __attribute__((always_inline)) unsigned long long ta_now(int clock)
{
	struct timespec ts;

	switch (clock) {
	case CLK_COUNTER:
		return __atomic_add_fetch(&ta_counter, 1, __ATOMIC_RELAXED);
	case CLK_MONO:
	case CLK_GLOBAL:
		clock_gettime(CLOCK_MONOTONIC, &ts);
		break;
	case CLK_MONO_RAW:
		clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
		break;
	case CLK_BOOT:
		clock_gettime(CLOCK_BOOTTIME, &ts);
		break;
	default:
		return usft_trace_clock();
	}
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static inline __attribute__((always_inline)) bool set_has(const struct ta_set *s, unsigned long v)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->v[mid] == v)
			return true;
		if (s->v[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * Whether an event of this thread goes into @tr now (tracing_on, usft's own
 * work, cpumask, the pid lists); *@cpu set.
 */
static inline __attribute__((always_inline)) bool ta_wants(struct trace_array *tr, unsigned int *cpu)
{
	const struct ta_set *p;

	if (unlikely(!__atomic_load_n(&tr->on, __ATOMIC_RELAXED)))
		return false;
	if (unlikely(usft_tbuf_self == USFT_TBUF_SELF))
		return false;
	*cpu = *usft_tbuf_cpu_ptr();
	if (*cpu < 64 && !((__atomic_load_n(&tr->cpumask, __ATOMIC_RELAXED) >> *cpu) & 1))
		return false;
	p = __atomic_load_n(&tr->pids, __ATOMIC_ACQUIRE);
	if (p && !set_has(p, (unsigned long)usft_gettid()))
		return false;
	p = __atomic_load_n(&tr->nopids, __ATOMIC_ACQUIRE);
	if (p && set_has(p, (unsigned long)usft_gettid()))
		return false;
	return true;
}

/* reserve the next entry; Return: it, or NULL (not overwriting and full) */
static inline __attribute__((always_inline)) struct ta_ent *
ta_reserve(struct trace_array *tr, unsigned long *pos)
{
	struct ta_ring *r = &tr->ring;
	unsigned long mask = __atomic_load_n(&r->mask, __ATOMIC_RELAXED), p;
	struct ta_ent *e;

	if (unlikely(!OPT(tr, OPT_OVERWRITE)) &&
	    __atomic_load_n(&r->head, __ATOMIC_RELAXED) -
	    __atomic_load_n(&r->tail, __ATOMIC_RELAXED) > mask)
		return NULL;
	p = __atomic_fetch_add(&r->head, 1, __ATOMIC_RELAXED);
	e = &r->ents[p & mask];
	__atomic_store_n(&e->seq, 2 * p + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*pos = p;
	return e;
}

static inline __attribute__((always_inline)) void ta_commit(struct ta_ent *e, unsigned long p)
{
	__atomic_store_n(&e->seq, 2 * p + 2, __ATOMIC_RELEASE);
}

static inline __attribute__((always_inline)) void
ta_emit(struct trace_array *tr, unsigned int cpu, unsigned long long ts, int type, int depth,
	uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	unsigned long p;
	struct ta_ent *e = ta_reserve(tr, &p);

	if (unlikely(!e))
		return;
	e->ts = ts;
	e->tid = (uint32_t)usft_gettid();
	e->cpu = (uint16_t)cpu;
	e->type = (uint8_t)type;
	e->depth = (uint8_t)(depth > 255 ? 255 : depth);
	e->a = a;
	e->b = b;
	e->c = c;
	e->d = d;
	ta_commit(e, p);
}

/* ---- the callbacks ------------------------------------------------------------ */

static void ta_function_call(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			     struct ftrace_regs *fregs)
{
	struct trace_array *tr = op->private;
	unsigned int cpu;

	if (!ta_wants(tr, &cpu))
		return;
	ta_emit(tr, cpu, ta_now(tr->clock), TA_FUNC, 0, ip, parent_ip, 0, 0);
	if (unlikely(OPT(tr, OPT_FUNC_STACK))) {
		/* kernel function_stack_trace_call(): the stack after the call */
		unsigned long f[USFT_STACK_ENTRIES];
		unsigned int n = usft_stack_trace_save_fregs(fregs, ip, parent_ip, f, NULL,
							     USFT_STACK_ENTRIES);

		ta_emit(tr, cpu, ta_now(tr->clock), TA_STACK, 0, ip,
			usft_stack_store_put(tr->stacks, f, n), n, 0);
	}
}

static int ta_graph_entry(struct ftrace_graph_ent *trace, struct fgraph_ops *gops,
			  struct ftrace_regs *fregs)
{
	struct trace_array *tr = gops->private;
	int depth = trace->depth;
	unsigned int cpu;
	const struct ta_set *s;

	(void)fregs;
	if (tr == &top) {
		if (graph_nt_depth)
			return 0;	/* below a set_graph_notrace function */
		s = __atomic_load_n(&graph_nt_set, __ATOMIC_ACQUIRE);
		if (s && set_has(s, trace->func)) {
			graph_nt_depth = depth + 1;
			return 1;	/* its return ends the hole */
		}
		s = __atomic_load_n(&graph_fn_set, __ATOMIC_ACQUIRE);
		if (s) {
			if (!graph_start) {
				if (!set_has(s, trace->func))
					return 0;
				graph_start = depth + 1;
			}
			depth -= graph_start - 1;
		}
		if (graph_max_depth && depth >= graph_max_depth)
			return 0;
	}
	if (!ta_wants(tr, &cpu)) {
		if (tr == &top && graph_start == trace->depth + 1)
			graph_start = 0;
		return 0;
	}
	ta_emit(tr, cpu, trace->calltime, TA_GENT, depth, trace->func, 0, 0, 0);
	return 1;
}

static void ta_graph_return(struct ftrace_graph_ret *trace, struct fgraph_ops *gops,
			    struct ftrace_regs *fregs)
{
	struct trace_array *tr = gops->private;
	int depth = trace->depth;
	unsigned int cpu;

	(void)fregs;
	if (tr == &top) {
		if (graph_nt_depth) {
			if (graph_nt_depth == depth + 1)
				graph_nt_depth = 0;
			return;
		}
		if (graph_start) {
			int d = depth - (graph_start - 1);

			if (graph_start == depth + 1)
				graph_start = 0;
			depth = d;
		}
	}
	if (!ta_wants(tr, &cpu))
		return;
	ta_emit(tr, cpu, trace->rettime, TA_GRET, depth, trace->func, trace->calltime,
		trace->retval, trace->flags);
}

/*
 * The probe commands (func:traceon/traceoff/stacktrace, <usft/ftrace_probe.h>)
 * on a trace array: its tracing_on, and a stack entry in its buffer.  Called
 * in traced threads through the preload shim's usft_trace_array_ops
 * (trace_record.c), under the hot-path rules.
 */
bool usft_trace_array_is_on(struct trace_array *tr)
{
	return __atomic_load_n(&tr->on, __ATOMIC_RELAXED);
}

void usft_trace_array_set_on(struct trace_array *tr, bool on)
{
	__atomic_store_n(&tr->on, on ? 1 : 0, __ATOMIC_RELEASE);
}

void usft_trace_array_dump_stack(struct trace_array *tr, unsigned long ip, int skip)
{
	unsigned int cpu = *usft_tbuf_cpu_ptr(), n;
	unsigned long f[USFT_STACK_ENTRIES];

	if (usft_tbuf_self == USFT_TBUF_SELF || !__atomic_load_n(&tr->on, __ATOMIC_RELAXED))
		return;
	/* in a probe from the probed function; else past our own frame and @skip more */
	n = stack_trace_save(f, USFT_STACK_ENTRIES, skip > 0 ? (unsigned int)skip : 0);
	ta_emit(tr, cpu, ta_now(tr->clock), TA_STACK, 0, ip, usft_stack_store_put(tr->stacks, f, n),
		n, 0);
}

/* trace events (trace_events.c): whether @tr takes one now, and its entry */
bool usft_trace_array_event_ok(struct trace_array *tr, unsigned int *cpu, int *tid)
{
	if (unlikely(!__atomic_load_n(&tr->on, __ATOMIC_RELAXED)))
		return false;
	*cpu = *usft_tbuf_cpu_ptr();
	if (*cpu < 64 && !((__atomic_load_n(&tr->cpumask, __ATOMIC_RELAXED) >> *cpu) & 1))
		return false;
	*tid = usft_gettid();
	return true;
}

void usft_trace_array_event_commit(struct trace_array *tr, unsigned int cpu, uint64_t off,
				   uint64_t len, uint64_t id)
{
	ta_emit(tr, cpu, ta_now(tr->clock), TA_EVENT, 0, off, len, id, 0);
}

/*
 * kernel tracing_log_err(): "[ts] LOC: error: ERR", the command, a caret
 * under @pos; the newest TRACING_LOG_ERRS_MAX (8) entries are kept
 */
void usft_trace_array_log_err(struct trace_array *tr, const char *loc, const char *cmd,
			      const char *err, int pos)
{
	unsigned long long ts = usft_trace_clock();
	char *out = NULL;
	size_t ol = 0;
	FILE *f = open_memstream(&out, &ol);

	if (!f)
		return;
	if (tr->errlog) {
		const char *keep = tr->errlog;

		if (tr->nr_errs >= 8) {
			keep = strstr(keep, "^\n");
			keep = keep ? keep + 2 : "";
			tr->nr_errs--;
		}
		fputs(keep, f);
	}
	fprintf(f, "[%5llu.%06llu] %s: error: %s\n  Command: %s\n%*s^\n", ts / 1000000000ULL,
		ts % 1000000000ULL / 1000, loc, err, cmd, 11 + (pos > 0 ? pos : 0), "");
	fclose(f);
	free(tr->errlog);
	tr->errlog = out;
	tr->nr_errs++;
}

/* ---- arrays -------------------------------------------------------------------- */

static void ta_init_defaults(struct trace_array *tr)
{
	tr->on = 1;
	tr->clock = CLK_LOCAL;
	tr->cpumask = ~0UL;
	tr->buffer_kb = TA_DEF_KB;
	tr->options = 0;
	for (unsigned int i = 0; i < NR_OPTS; i++)
		if (ta_opts[i].def)
			tr->options |= 1ULL << i;
}

static unsigned long ring_entries(unsigned long kb)
{
	unsigned long want = kb * 1024 * (unsigned long)nr_cpus / sizeof(struct ta_ent), n = 64;

	while (n < want && n < TA_MAX_ENTS)
		n <<= 1;
	return n;
}

static int ta_setup(struct trace_array *tr, const char *name)
{
	long c = sysconf(_SC_NPROCESSORS_CONF);

	nr_cpus = c > 0 ? (int)c : 1;
	usft_tid_init();
	snprintf(tr->name, sizeof(tr->name), "%s", name);
	ta_init_defaults(tr);
	/* a dlclose() cleans the filters of a tracer not running too */
	if (usft_track_ops_hashes(&tr->ops, true) || usft_track_ops_hashes(&tr->gops.ops, true)) {
		usft_track_ops_hashes(&tr->ops, false);
		return -ENOMEM;
	}
	tr->ring.ents = mmap(NULL, TA_MAX_ENTS * sizeof(struct ta_ent), PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (tr->ring.ents == MAP_FAILED) {
		tr->ring.ents = NULL;
		goto untrack;
	}
	tr->marks = calloc(TA_MARKS, sizeof(*tr->marks));
	tr->stacks = usft_stack_store_new();
	if (!tr->marks || !tr->stacks) {
		free(tr->marks);
		usft_stack_store_free(tr->stacks);
		tr->marks = NULL;
		tr->stacks = NULL;
		munmap(tr->ring.ents, TA_MAX_ENTS * sizeof(struct ta_ent));
		tr->ring.ents = NULL;
		goto untrack;
	}
	tr->ring.mask = ring_entries(tr->buffer_kb) - 1;
	tr->ops.func = ta_function_call;
	tr->ops.private = tr;
	tr->gops.entryfunc = ta_graph_entry;
	tr->gops.retfunc = ta_graph_return;
	tr->gops.private = tr;
	if (tr == &top) {
		usft_track_ops_hashes(&graph_fn_ops, true);
		usft_track_ops_hashes(&graph_notrace_ops, true);
		usft_set_unload_hook(ta_unloaded);
	}
	tr->ready = true;
	usft_tr_ops_install();
	usft_trace_events_init();
	return 0;
untrack:
	usft_track_ops_hashes(&tr->ops, false);
	usft_track_ops_hashes(&tr->gops.ops, false);
	return -ENOMEM;
}

static struct trace_array *ta_top(void)
{
	if (!top.ready && ta_setup(&top, ""))
		return NULL;
	return &top;
}

/* the sets nothing can read any more (no ops of @tr registered) */
static void free_retired(struct ta_set **list)
{
	pthread_mutex_lock(&set_lock);
	while (*list) {
		struct ta_set *s = *list;

		*list = s->old;
		free(s);
	}
	pthread_mutex_unlock(&set_lock);
}

/*
 * Take [lo, hi) out of a published set without replacing it: a callback
 * may be searching it.  The entries in range are contiguous; each becomes
 * the entry before them (0 at the start), in ascending order, so the array
 * is sorted at every moment and a search for any value outside [lo, hi)
 * answers as before.
 */
static void set_drop_range(struct ta_set *s, unsigned long lo, unsigned long hi)
{
	size_t i = 0;
	unsigned long v;

	while (i < s->n && s->v[i] < lo)
		i++;
	v = i ? s->v[i - 1] : 0;
	for (; i < s->n && s->v[i] < hi; i++)
		__atomic_store_n(&s->v[i], v, __ATOMIC_RELAXED);
}

/* usft_set_unload_hook(): [lo, hi) was an object's text, now unloaded */
static void ta_unloaded(unsigned long lo, unsigned long hi)
{
	struct ta_set *s;

	pthread_mutex_lock(&set_lock);
	__atomic_add_fetch(&unload_gen, 1, __ATOMIC_ACQ_REL);
	s = __atomic_load_n(&graph_fn_set, __ATOMIC_ACQUIRE);
	if (s)
		set_drop_range(s, lo, hi);
	s = __atomic_load_n(&graph_nt_set, __ATOMIC_ACQUIRE);
	if (s)
		set_drop_range(s, lo, hi);
	pthread_mutex_unlock(&set_lock);
}

static void publish_set(struct ta_set **slot, struct ta_set *s, struct ta_set **retired)
{
	struct ta_set *old = *slot;

	__atomic_store_n(slot, s, __ATOMIC_RELEASE);
	if (old) {
		old->old = *retired;
		*retired = old;
	}
}

static void ta_clear(struct trace_array *tr)
{
	unsigned long h = __atomic_load_n(&tr->ring.head, __ATOMIC_ACQUIRE);

	__atomic_store_n(&tr->ring.tail, h, __ATOMIC_RELEASE);
	tr->ring.base = h;
	tr->ring.lost = 0;
}

static void ta_stop_tracer(struct trace_array *tr)
{
	if (tr->func_reg)
		unregister_ftrace_function(&tr->ops);
	if (tr->graph_reg)
		unregister_ftrace_graph(&tr->gops);
	tr->func_reg = tr->graph_reg = false;
	tr->tracer = TA_NOP;
	free_retired(&tr->retired);
}

static struct trace_array *ta_find(const char *name, size_t len)
{
	for (struct trace_array *tr = instances; tr; tr = tr->next)
		if (strlen(tr->name) == len && !memcmp(tr->name, name, len))
			return tr;
	return NULL;
}

int usft_tracefs_mkdir(const char *name, char *why, size_t wlen)
{
	struct trace_array *tr;
	int ret;

	if (!*name || strlen(name) >= sizeof(tr->name) || strchr(name, '/') ||
	    !strcmp(name, ".") || !strcmp(name, "..")) {
		snprintf(why, wlen, "instance names are 1 to 63 bytes, no '/'");
		return -EINVAL;
	}
	if (ta_find(name, strlen(name))) {
		snprintf(why, wlen, "instance '%s' exists", name);
		return -EEXIST;
	}
	if (!ta_top()) {
		snprintf(why, wlen, "no memory for the top-level buffer");
		return -ENOMEM;
	}
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return -ENOMEM;
	ret = ta_setup(tr, name);
	if (ret) {
		free(tr);
		snprintf(why, wlen, "no memory for the instance's buffer");
		return ret;
	}
	tr->next = instances;
	instances = tr;
	return 0;
}

int usft_tracefs_rmdir(const char *name, char *why, size_t wlen)
{
	struct trace_array **pp, *tr;

	for (pp = &instances; (tr = *pp); pp = &tr->next)
		if (!strcmp(tr->name, name))
			break;
	if (!tr) {
		snprintf(why, wlen, "no instance '%s'", name);
		return -ENOENT;
	}
	/* out of a dlopen()'s reach first (ta_mod_process() walks the arrays) */
	ta_mod_lock();
	*pp = tr->next;
	ta_mod_free(tr->mods[0]);
	ta_mod_free(tr->mods[1]);
	ta_mod_unlock();
	ta_stop_tracer(tr);
	clear_ftrace_function_probes(tr);
	usft_trace_events_remove(tr);
	ftrace_free_filter(&tr->ops);
	ftrace_free_filter(&tr->gops.ops);
	usft_track_ops_hashes(&tr->ops, false);
	usft_track_ops_hashes(&tr->gops.ops, false);
	/* no callback of tr runs any more: its ops are unregistered */
	munmap(tr->ring.ents, TA_MAX_ENTS * sizeof(struct ta_ent));
	free(tr->pids);
	free(tr->nopids);
	free(tr->snap);
	free(tr->marks);
	usft_stack_store_free(tr->stacks);
	free(tr->errlog);
	free(tr);
	return 0;
}

/* ---- reading the ring ----------------------------------------------------------- */

/*
 * The entry at *@pos into @out, *@pos advanced past it and past entries
 * overwritten before they could be read (counted in ring.lost).
 * Return: true, or false when *@pos is not written yet.
 */
static bool ring_get(struct ta_ring *r, unsigned long *pos, struct ta_ent *out)
{
	for (;;) {
		unsigned long head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		unsigned long mask = r->mask, p = *pos, s1, s2;
		struct ta_ent *e;

		if (p >= head)
			return false;
		if (head - p > mask + 1) {
			r->lost += head - p - (mask + 1);
			p = *pos = head - (mask + 1);
		}
		e = &r->ents[p & mask];
		s1 = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
		if (s1 == 2 * p + 2) {
			memcpy(out, e, sizeof(*out));
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			s2 = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
			*pos = p + 1;
			if (s2 == s1)
				return true;
			r->lost++;
			continue;
		}
		if (s1 > 2 * p + 2 || head - p > TA_STALE) {
			/* overwritten, or its writer never finished (a thread killed in it) */
			r->lost++;
			*pos = p + 1;
			continue;
		}
		return false;
	}
}

/* ---- formatting ------------------------------------------------------------------ */

struct comm_cache {
	unsigned int tid[64];
	char comm[64][17];
	char pre[64][26];	/* "%16s-%-7u" of comm and tid: func_line()'s, "" not yet */
	unsigned int n;
};

/* @tid's slot in @cc, its comm read in once; Return: it, -1 for tid 0 */
static int comm_slot(struct comm_cache *cc, unsigned int tid)
{
	char path[64];
	unsigned int i;
	ssize_t n;
	int fd;

	if (!tid)
		return -1;
	for (i = 0; i < cc->n; i++)
		if (cc->tid[i] == tid)
			return (int)i;
	i = cc->n < 64 ? cc->n++ : tid % 64;
	cc->tid[i] = tid;
	cc->pre[i][0] = 0;
	snprintf(cc->comm[i], sizeof(cc->comm[i]), "<...>");
	snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, cc->comm[i], 16);
		close(fd);
		if (n > 0) {
			cc->comm[i][n] = 0;
			cc->comm[i][strcspn(cc->comm[i], "\n")] = 0;
		}
	}
	return (int)i;
}

static const char *comm_of(struct comm_cache *cc, unsigned int tid)
{
	int i = comm_slot(cc, tid);

	return i < 0 ? "<...>" : cc->comm[i];
}

/*
 * The names of one request's lines: a trace_pipe read prints the same few
 * functions thousands of times, one usft_kallsyms_lookup() (a lock and two
 * searches) each.  Formatting runs on the control thread only, one request
 * at a time; sym_gen moves on at each request, so no name is kept across a
 * dlclose() that came between two requests.
 */
static struct sym_slot {
	unsigned long addr, off, gen;
	const char *name;
	size_t len;
} sym_cache[256];
static unsigned long sym_gen = 1;

static struct sym_slot *sym_slot_of(unsigned long addr)
{
	struct sym_slot *s = &sym_cache[(addr ^ addr >> 8 ^ addr >> 16) & 255];

	if (s->gen != sym_gen || s->addr != addr) {
		s->off = 0;
		s->name = usft_kallsyms_lookup(addr, &s->off);
		s->len = s->name ? strlen(s->name) : 0;
		s->addr = addr;
		s->gen = sym_gen;
	}
	return s;
}

static const char *sym_lookup(unsigned long addr, unsigned long *off)
{
	struct sym_slot *s = sym_slot_of(addr);

	*off = s->off;
	return s->name;
}

/* kernel %ps / %pS (sym-offset) / sym-addr */
static void print_sym(FILE *f, struct trace_array *tr, unsigned long addr, bool site)
{
	unsigned long off = 0;
	const char *name = addr ? sym_lookup(addr, &off) : NULL;

	if (!name) {
		fprintf(f, "0x%lx", addr);
		return;
	}
	fputs(name, f);
	if (OPT(tr, OPT_SYM_OFFSET))
		fprintf(f, "+0x%lx", site ? 0 : off);
	if (OPT(tr, OPT_SYM_ADDR))
		fprintf(f, " <%016lx>", addr);
}

static void print_ts(FILE *f, struct trace_array *tr, unsigned long long ts)
{
	if (tr->clock == CLK_COUNTER)
		fprintf(f, "%llu", ts);
	else
		fprintf(f, "%5llu.%06llu", ts / 1000000000ULL, ts % 1000000000ULL / 1000);
}

static void print_context(FILE *f, struct trace_array *tr, struct comm_cache *cc,
			  const struct ta_ent *e)
{
	if (!OPT(tr, OPT_CONTEXT))
		return;
	fprintf(f, "%16s-%-7u [%03u] %s ", comm_of(cc, e->tid), e->tid,
		e->cpu == EV_CPU_UNKNOWN ? 0 : e->cpu, OPT(tr, 20) ? "....." : "");
	print_ts(f, tr, e->ts);
	fputs(": ", f);
}

static const char *mark_text(const struct trace_array *tr, const struct ta_ent *e, char *buf,
			     size_t len);

/* trace_marker's line, or trace_printk()'s (the kernel's bprint/print: "func: text") */
static void print_mark(FILE *f, struct trace_array *tr, const struct ta_ent *e)
{
	char buf[TA_MARK_LEN];

	if (e->b) {
		print_sym(f, tr, e->b, false);
		fprintf(f, ": %s\n", mark_text(tr, e, buf, sizeof(buf)));
	} else {
		fprintf(f, "tracing_mark_write: %s\n", mark_text(tr, e, buf, sizeof(buf)));
	}
}

static void print_dur(FILE *f, struct trace_array *tr, unsigned long long ns, bool have)
{
	char num[32];
	int len;

	if (!OPT(tr, OPT_FG_DURATION))
		return;
	if (!have) {
		fputs("              |  ", f);
		return;
	}
	if (OPT(tr, OPT_FG_OVERHEAD)) {
		char c = ns > 1000000000ULL ? '$' : ns > 100000000ULL ? '@' : ns > 10000000ULL ? '*' :
			 ns > 1000000ULL ? '#' : ns > 100000ULL ? '!' : ns > 10000ULL ? '+' : ' ';
		fputc(c, f);
	} else {
		fputc(' ', f);
	}
	/* kernel trace_print_graph_duration(): usecs, then up to 3 decimals within 7 digits */
	len = snprintf(num, sizeof(num), "%llu", ns / 1000);
	if (len < 7) {
		int dec = 7 - len < 3 ? 7 - len : 3;
		unsigned long long rem = ns % 1000;

		for (int k = dec; k < 3; k++)
			rem /= 10;
		len += snprintf(num + len, sizeof(num) - (size_t)len, ".%0*llu", dec, rem);
	}
	fprintf(f, " %s us %*s|  ", num, len < 8 ? 8 - len : 0, "");
}

/* one function_graph line; @next: the following entry of the batch, if any */
static bool print_graph(FILE *f, struct trace_array *tr, struct comm_cache *cc,
			const struct ta_ent *e, const struct ta_ent *next)
{
	bool leaf = e->type == TA_GENT && next && next->type == TA_GRET && next->tid == e->tid &&
		    next->a == e->a && next->depth == e->depth;

	if (OPT(tr, OPT_FG_ABSTIME)) {
		print_ts(f, tr, e->ts);
		fputs(" |  ", f);
	}
	if (OPT(tr, OPT_FG_CPU))
		fprintf(f, " %*u) ", nr_cpus > 10 ? 2 : 1, e->cpu == EV_CPU_UNKNOWN ? 0 : e->cpu);
	if (OPT(tr, OPT_FG_PROC))
		fprintf(f, "%8.8s-%-5u | ", comm_of(cc, e->tid), e->tid);
	if (e->type == TA_MARK || e->type == TA_EVENT) {
		char ev[1024], buf[TA_MARK_LEN];

		/* kernel print_graph_comment(): an event or marker as a comment in the tree */
		if (e->type == TA_EVENT && !usft_trace_event_format(tr, e->a, e->b, e->c, ev,
								    sizeof(ev)))
			snprintf(ev, sizeof(ev), "<event lost>");
		print_dur(f, tr, 0, false);
		/* kernel print_graph_comment(): indented below the open call, none at the outermost */
		fprintf(f, "%*s/* %s */\n", e->depth > 1 ? e->depth * 2 : 0, "",
			e->type == TA_EVENT ? ev : mark_text(tr, e, buf, sizeof(buf)));
		return false;
	}
	if (leaf) {
		print_dur(f, tr, next->ts - next->b, true);
		fprintf(f, "%*s", e->depth * 2, "");
		print_sym(f, tr, e->a, true);
		if (OPT(tr, OPT_FG_RETVAL))
			fprintf(f, OPT(tr, OPT_FG_RETVAL_HEX) ? "(); /* = 0x%lx */\n" :
				"(); /* = %ld */\n", (long)next->c);
		else
			fputs("();\n", f);
		return true;
	}
	if (e->type == TA_GENT) {
		print_dur(f, tr, 0, false);
		fprintf(f, "%*s", e->depth * 2, "");
		print_sym(f, tr, e->a, true);
		fputs("() {\n", f);
		return false;
	}
	print_dur(f, tr, e->ts - e->b, true);
	fprintf(f, "%*s}", e->depth * 2, "");
	if (OPT(tr, OPT_FG_TAIL) || OPT(tr, OPT_FG_RETVAL)) {
		fputs(" /* ", f);
		print_sym(f, tr, e->a, true);
		if (OPT(tr, OPT_FG_RETVAL))
			fprintf(f, OPT(tr, OPT_FG_RETVAL_HEX) ? " = 0x%lx" : " = %ld", (long)e->c);
		fputs(" */", f);
	}
	fputc('\n', f);
	return false;
}

/* @v in decimal at @p, at least @width digits (zero-padded); Return: the end */
static char *put_dec(char *p, unsigned long long v, int width)
{
	static const char pairs[] = "0001020304050607080910111213141516171819"
				    "2021222324252627282930313233343536373839"
				    "4041424344454647484950515253545556575859"
				    "6061626364656667686970717273747576777879"
				    "8081828384858687888990919293949596979899";
	char d[24], *q = d + sizeof(d);
	int n;

	while (v >= 100) {	/* two digits a division */
		q -= 2;
		memcpy(q, pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		q -= 2;
		memcpy(q, pairs + 2 * v, 2);
	} else {
		*--q = (char)('0' + v);
	}
	while (d + sizeof(d) - q < width)
		*--q = '0';
	n = (int)(d + sizeof(d) - q);
	memcpy(p, q, (size_t)n);
	return p + n;
}

/* what print_sym() prints for @addr without sym-offset/sym-addr; Return: the end */
static char *put_sym(char *p, unsigned long addr)
{
	struct sym_slot *s;

	if (!addr)
		return p + sprintf(p, "0x0");
	s = sym_slot_of(addr);
	if (!s->name)
		return p + sprintf(p, "0x%lx", addr);
	memcpy(p, s->name, s->len);
	return p + s->len;
}

#define FUNC_LINE_MAX	(26 + 32 + 2 * 24 + 2 * FUNC_NAME_MAX)
#define FUNC_NAME_MAX	256

/* func_line() serves @tr's options: context shown, no sym-offset/sym-addr */
static bool func_line_ok(struct trace_array *tr)
{
	return OPT(tr, OPT_CONTEXT) && !OPT(tr, OPT_SYM_OFFSET) && !OPT(tr, OPT_SYM_ADDR);
}

/*
 * The function tracer's line (func_line_ok() options), the text
 * print_context() and print_sym() make, built at @p without a stdio call
 * per field: a trace_pipe reader that keeps up formats millions a second.
 * Return: its length (at most FUNC_LINE_MAX), 0 for a name longer than
 * FUNC_NAME_MAX (the general path prints it).
 */
static size_t func_line(char *p0, struct trace_array *tr, struct comm_cache *cc,
			const struct ta_ent *e)
{
	char *p = p0;
	int i;

	if ((e->a && sym_slot_of(e->a)->len > FUNC_NAME_MAX) ||
	    (OPT(tr, OPT_PRINT_PARENT) && e->b && sym_slot_of(e->b)->len > FUNC_NAME_MAX))
		return 0;
	i = comm_slot(cc, e->tid);
	if (i >= 0) {
		if (!cc->pre[i][0]) {
			char comm[sizeof(cc->comm[i])];

			memcpy(comm, cc->comm[i], sizeof(comm));
			snprintf(cc->pre[i], sizeof(cc->pre[i]), "%16s-%-7u", comm, e->tid);
		}
		p = stpcpy(p, cc->pre[i]);
	} else {
		p += sprintf(p, "%16s-%-7u", "<...>", e->tid);
	}
	memcpy(p, " [", 2);
	p = put_dec(p + 2, e->cpu == EV_CPU_UNKNOWN ? 0 : e->cpu, 3);
	memcpy(p, "] ", 2);
	p += 2;
	if (OPT(tr, 20)) {
		memcpy(p, ".....", 5);
		p += 5;
	}
	*p++ = ' ';
	if (tr->clock == CLK_COUNTER) {
		p = put_dec(p, e->ts, 0);
	} else {
		unsigned long long sec = e->ts / 1000000000ULL;
		int w = (int)(put_dec(p, sec, 0) - p);

		if (w < 5) {	/* %5llu */
			memmove(p + 5 - w, p, (size_t)w);
			memset(p, ' ', (size_t)(5 - w));
			w = 5;
		}
		p += w;
		*p++ = '.';
		p = put_dec(p, e->ts % 1000000000ULL / 1000, 6);
	}
	memcpy(p, ": ", 2);
	p = put_sym(p + 2, e->a);
	if (OPT(tr, OPT_PRINT_PARENT)) {
		memcpy(p, " <-", 3);
		p = put_sym(p + 3, e->b);
	}
	*p++ = '\n';
	return (size_t)(p - p0);
}

/* the function line through func_line(); Return: false: not printed */
static bool print_func_line(FILE *f, struct trace_array *tr, struct comm_cache *cc,
			    const struct ta_ent *e)
{
	char line[FUNC_LINE_MAX];
	size_t n = func_line_ok(tr) ? func_line(line, tr, cc, e) : 0;

	if (n)
		fwrite(line, 1, n, f);
	return n;
}

/* one entry; Return: whether @next was printed with it (a graph leaf) */
static bool print_ent(FILE *f, struct trace_array *tr, struct comm_cache *cc,
		      const struct ta_ent *e, const struct ta_ent *next)
{
	if (e->type == TA_FUNC && print_func_line(f, tr, cc, e))
		return false;
	if (e->type == TA_GENT || e->type == TA_GRET ||
	    ((e->type == TA_MARK || e->type == TA_EVENT) && tr->tracer == TA_GRAPH))
		return print_graph(f, tr, cc, e, next);
	print_context(f, tr, cc, e);
	if (e->type == TA_MARK) {
		print_mark(f, tr, e);
		return false;
	}
	if (e->type == TA_EVENT) {
		char ev[1024];

		if (usft_trace_event_format(tr, e->a, e->b, e->c, ev, sizeof(ev)))
			fprintf(f, "%s\n", ev);
		else
			fputs("<event lost>\n", f);
		return false;
	}
	if (e->type == TA_STACK) {
		/* kernel trace_stack_print() */
		unsigned long fr[USFT_STACK_ENTRIES];
		unsigned int n = usft_stack_store_get(tr->stacks, e->b, (unsigned int)e->c, fr);

		fputs("<stack trace>\n", f);
		if (!n && e->c)
			fputs(" => <overwritten>\n", f);
		for (unsigned int i = 0; i < n; i++) {
			fputs(" => ", f);
			print_sym(f, tr, fr[i], !i);
			fputc('\n', f);
		}
		return false;
	}
	print_sym(f, tr, e->a, true);
	if (OPT(tr, OPT_PRINT_PARENT)) {
		fputs(" <-", f);
		print_sym(f, tr, e->b, false);
	}
	fputc('\n', f);
	return false;
}

static const char *tracer_name(enum ta_tracer t)
{
	return t == TA_FUNCTION ? "function" : t == TA_GRAPH ? "function_graph" : "nop";
}

static void print_header(FILE *f, struct trace_array *tr, unsigned long in_buf,
			 unsigned long written)
{
	fprintf(f, "# tracer: %s\n#\n", tracer_name(tr->tracer));
	if (tr->tracer == TA_GRAPH) {
		fprintf(f, "# CPU  DURATION                  FUNCTION CALLS\n"
			   "# |     |   |                     |   |   |   |\n");
		return;
	}
	fprintf(f, "# entries-in-buffer/entries-written: %lu/%lu   #P:%d\n#\n", in_buf, written,
		nr_cpus);
	fprintf(f, "#                                _-----=> irqs-off/BH-disabled\n"
		   "#                               / _----=> need-resched\n"
		   "#                              | / _---=> hardirq/softirq\n"
		   "#                              || / _--=> preempt-depth\n"
		   "#                              ||| / _-=> migrate-disable\n"
		   "#                              |||| /     delay\n"
		   "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
		   "#              | |         |   |||||     |         |\n");
}

/* what `trace` shows, without consuming: the entries in [tail, head) */
static int ta_collect(struct trace_array *tr, struct ta_ent **out, size_t *n)
{
	struct ta_ring *r = &tr->ring;
	unsigned long pos = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	unsigned long head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	size_t cap = head - pos > r->mask + 1 ? r->mask + 1 : head - pos, k = 0;
	struct ta_ent *v = malloc((cap ? cap : 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	while (k < cap && pos < head && ring_get(r, &pos, &v[k]))
		k++;
	*out = v;
	*n = k;
	return 0;
}

static void print_ents(FILE *f, struct trace_array *tr, const struct ta_ent *v, size_t n)
{
	struct comm_cache cc = { .n = 0 };

	for (size_t i = 0; i < n; i++) {
		const struct ta_ent *next = NULL;

		if (v[i].type == TA_GENT)
			for (size_t j = i + 1; j < n && j < i + 64; j++)
				if (v[j].tid == v[i].tid) {
					next = &v[j];
					break;
				}
		if (print_ent(f, tr, &cc, &v[i], next) && next == &v[i + 1])
			i++;
		else if (next && next != &v[i + 1] && next->type == TA_GRET &&
			 next->a == v[i].a && next->depth == v[i].depth) {
			/* printed as a leaf; its return comes later in the batch: skip it there */
			((struct ta_ent *)next)->type = 0;
		}
	}
}

static int read_trace(FILE *f, struct trace_array *tr)
{
	struct ta_ent *v;
	size_t n;
	int on = tr->on, ret;

	if (OPT(tr, OPT_PAUSE))
		__atomic_store_n(&tr->on, 0, __ATOMIC_RELEASE);
	ret = ta_collect(tr, &v, &n);
	if (OPT(tr, OPT_PAUSE))
		__atomic_store_n(&tr->on, on, __ATOMIC_RELEASE);
	if (ret)
		return ret;
	print_header(f, tr, n, tr->ring.head - tr->ring.base);
	print_ents(f, tr, v, n);
	free(v);
	return 0;
}

/* ---- function_profile_enabled, trace_stat/functionN (kernel ftrace_profile) ---- */

/*
 * Per CPU, per function: hits and time (graph-time: children included),
 * kept in open-addressed tables whose keys (every site, read-only) are
 * built before the profiler's fgraph_ops is registered; the callbacks only
 * add (relaxed atomics).  The filter is the top level's set_ftrace_filter,
 * as the kernel's profiler shares the global ops' hash.
 */
static size_t ops_hash_ips(struct ftrace_ops *hops, unsigned long *ips, size_t max);

struct prof_ent {
	unsigned long hits;
	unsigned long long time, time_sq;	/* ns, us^2 */
};

static struct {
	bool on, reg;
	unsigned long *keys;		/* 0: empty */
	unsigned long mask;
	struct prof_ent *ents;		/* [cpu][mask + 1] */
	int ncpu;
	struct fgraph_ops gops;
} P;

static inline __attribute__((always_inline)) long prof_slot(unsigned long ip)
{
	unsigned long i = (ip * 0x9e3779b97f4a7c15UL) >> 17;

	for (unsigned long k = 0; k <= P.mask; k++, i++) {
		unsigned long key = P.keys[i & P.mask];

		if (key == ip)
			return (long)(i & P.mask);
		if (!key)
			return -1;
	}
	return -1;
}

static int prof_entry(struct ftrace_graph_ent *trace, struct fgraph_ops *gops,
		      struct ftrace_regs *fregs)
{
	(void)trace;
	(void)gops;
	(void)fregs;
	return usft_tbuf_self != USFT_TBUF_SELF;
}

static void prof_return(struct ftrace_graph_ret *trace, struct fgraph_ops *gops,
			struct ftrace_regs *fregs)
{
	long slot = prof_slot(trace->func);
	unsigned int cpu = *usft_tbuf_cpu_ptr();
	unsigned long long d = trace->rettime - trace->calltime, us = d / 1000;
	struct prof_ent *e;

	(void)gops;
	(void)fregs;
	if (slot < 0)
		return;
	e = &P.ents[(cpu < (unsigned int)P.ncpu ? cpu : 0) * (P.mask + 1) + (unsigned long)slot];
	__atomic_add_fetch(&e->hits, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&e->time, d, __ATOMIC_RELAXED);
	__atomic_add_fetch(&e->time_sq, us * us, __ATOMIC_RELAXED);
}

/* the profiler follows the top level's set_ftrace_filter */
static void prof_sync_filter(void)
{
	unsigned long *ips = malloc(65536 * sizeof(*ips));
	size_t n = ips ? ops_hash_ips(&top.ops, ips, 65536) : 0;

	ftrace_set_filter_ips(&P.gops.ops, n ? ips : NULL, (unsigned int)n, 0, 1);
	free(ips);
}

static int prof_tables(void)
{
	struct usft_stats st = { .sz = sizeof(st) };
	unsigned long *ips, size = 64;
	int n;

	if (P.keys)
		return 0;
	usft_stat(&st);
	ips = malloc((st.nr_sites + 1) * sizeof(*ips));
	if (!ips)
		return -ENOMEM;
	n = usft_match_sites("*", -1, ips, st.nr_sites + 1);
	while (size < 2 * (unsigned long)(n > 0 ? n : 1))
		size <<= 1;
	P.ncpu = nr_cpus;
	P.mask = size - 1;
	P.keys = calloc(size, sizeof(*P.keys));
	P.ents = calloc(size * (unsigned long)P.ncpu, sizeof(*P.ents));
	if (!P.keys || !P.ents) {
		free(P.keys);
		free(P.ents);
		P.keys = NULL;
		P.ents = NULL;
		free(ips);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		unsigned long k = (ips[i] * 0x9e3779b97f4a7c15UL) >> 17;

		while (P.keys[k & P.mask] && P.keys[k & P.mask] != ips[i])
			k++;
		P.keys[k & P.mask] = ips[i];
	}
	free(ips);
	return 0;
}

static int prof_enable(bool on, char *why, size_t wlen)
{
	int ret;

	if (on == P.on)
		return 0;
	if (!on) {
		if (P.reg)
			unregister_ftrace_graph(&P.gops);
		P.reg = P.on = false;
		return 0;	/* the stats stay readable, as the kernel's */
	}
	ret = prof_tables();
	if (ret) {
		snprintf(why, wlen, "no memory for the profile tables");
		return ret;
	}
	/* the kernel's ftrace_profile_reset(): a new run starts from zero */
	memset(P.ents, 0, (P.mask + 1) * (unsigned long)P.ncpu * sizeof(*P.ents));
	P.gops.entryfunc = prof_entry;
	P.gops.retfunc = prof_return;
	prof_sync_filter();
	ret = register_ftrace_graph(&P.gops);
	if (ret) {
		snprintf(why, wlen, "profiler not started: %s", strerror(-ret));
		return ret;
	}
	P.reg = P.on = true;
	return 0;
}

/*
 * The control channel goes (DETACH): nothing of the tracefs may stay
 * registered once the sites are put back, so every array goes back to nop,
 * its probes and the profiler off, the instances removed.  (The kernel's
 * tracefs has no detach.)
 */
void usft_tracefs_reset(void)
{
	char why[128];

	while (instances)
		usft_tracefs_rmdir(instances->name, why, sizeof(why));
	usft_stack_tracer_reset();
	if (!top.ready)
		return;
	ta_stop_tracer(&top);
	clear_ftrace_function_probes(&top);
	usft_trace_events_remove(&top);	/* every event off: the program's checks fail again */
	prof_enable(false, why, sizeof(why));
}

struct prof_line {
	unsigned long ip, hits;
	unsigned long long time, time_sq;
};

static int cmp_prof(const void *a, const void *b)
{
	const struct prof_line *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? 1 : -1;
	if (x->hits != y->hits)
		return x->hits < y->hits ? 1 : -1;
	return (x->ip > y->ip) - (x->ip < y->ip);
}

static void print_us(FILE *f, unsigned long long ns)
{
	char b[40];

	snprintf(b, sizeof(b), "%llu.%03llu us", ns / 1000, ns % 1000);
	fprintf(f, "    %-12s", b);
}

/* trace_stat/function@cpu: the kernel's columns, most time first */
static void print_prof(FILE *f, int cpu)
{
	struct prof_line *v;
	size_t n = 0;

	fputs("  Function                               Hit    Time            Avg             s^2\n"
	      "  --------                               ---    ----            ---             ---\n", f);
	if (!P.ents || cpu >= P.ncpu)
		return;
	v = malloc((P.mask + 1) * sizeof(*v));
	if (!v)
		return;
	for (unsigned long i = 0; i <= P.mask; i++) {
		const struct prof_ent *e = &P.ents[(unsigned long)cpu * (P.mask + 1) + i];
		unsigned long hits = __atomic_load_n(&e->hits, __ATOMIC_RELAXED);

		if (!P.keys[i] || !hits)
			continue;
		v[n++] = (struct prof_line){ P.keys[i], hits,
			__atomic_load_n(&e->time, __ATOMIC_RELAXED),
			__atomic_load_n(&e->time_sq, __ATOMIC_RELAXED) };
	}
	qsort(v, n, sizeof(*v), cmp_prof);
	for (size_t i = 0; i < n; i++) {
		unsigned long off;
		const char *name = usft_kallsyms_lookup(v[i].ip, &off);
		unsigned long long avg = v[i].time / v[i].hits, avg_us = avg / 1000;
		unsigned long long var = v[i].hits > 1 ?
			(v[i].time_sq - v[i].hits * avg_us * avg_us) / (v[i].hits - 1) : 0;

		if (v[i].time_sq < v[i].hits * avg_us * avg_us)
			var = 0;
		if (name)
			fprintf(f, "  %-30.30s  %10lu", name, v[i].hits);
		else
			fprintf(f, "  %#-30lx  %10lu", v[i].ip, v[i].hits);
		print_us(f, v[i].time);
		print_us(f, avg);
		print_us(f, var * 1000);
		fputc('\n', f);
	}
	free(v);
}

/* ---- files ---------------------------------------------------------------------- */

/* "instances/NAME/rest" -> NAME's array and "rest"; else the top level */
static struct trace_array *resolve(const char *path, const char **file)
{
	if (!strncmp(path, "instances/", 10)) {
		const char *n = path + 10, *sl = strchr(n, '/');
		struct trace_array *tr;

		if (!sl)
			return NULL;
		tr = ta_find(n, (size_t)(sl - n));
		*file = sl + 1;
		return tr;
	}
	*file = path;
	return ta_top();
}

/* the value of a one-number file: trailing whitespace stripped */
int usft_tracefs_parse_ulong(const char *v, size_t len, int base, unsigned long *out)
{
	char buf[64], *end;

	while (len && (v[len - 1] == '\n' || v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	while (len && (*v == ' ' || *v == '\t')) {
		v++;
		len--;
	}
	if (!len || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, v, len);
	buf[len] = 0;
	errno = 0;
	*out = strtoul(buf, &end, base);
	if (*end || errno || buf[0] == '-')
		return -EINVAL;
	return 0;
}

/* the first word of @v (trailing newline gone) into @buf */
static int parse_word(const char *v, size_t len, char *buf, size_t blen)
{
	while (len && (v[len - 1] == '\n' || v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	while (len && (*v == ' ' || *v == '\t')) {
		v++;
		len--;
	}
	if (len >= blen)
		return -EINVAL;
	memcpy(buf, v, len);
	buf[len] = 0;
	return 0;
}

static bool only_space(const char *v, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (v[i] != ' ' && v[i] != '\t' && v[i] != '\n')
			return false;
	return true;
}

static int set_tracer(struct trace_array *tr, const char *name, char *why, size_t wlen)
{
	enum ta_tracer t;
	int ret = 0;

	if (!strcmp(name, "nop"))
		t = TA_NOP;
	else if (!strcmp(name, "function"))
		t = TA_FUNCTION;
	else if (!strcmp(name, "function_graph"))
		t = TA_GRAPH;
	else {
		snprintf(why, wlen, "no tracer '%s' (cat available_tracers)", name);
		return -EINVAL;
	}
	if (t == tr->tracer)
		return 0;
	ta_stop_tracer(tr);
	if (t == TA_FUNCTION) {
		ret = register_ftrace_function(&tr->ops);
		tr->func_reg = !ret;
	} else if (t == TA_GRAPH) {
		ret = register_ftrace_graph(&tr->gops);
		tr->graph_reg = !ret;
	}
	if (ret) {
		snprintf(why, wlen, "%s not started: %s", name, strerror(-ret));
		return ret;
	}
	/* the kernel's tracing_set_tracer() starts the new tracer on an empty buffer */
	ta_clear(tr);
	tr->tracer = t;
	return 0;
}

/*
 * set_ftrace_filter / set_ftrace_notrace: the kernel's syntax.  Each token
 * is a command (func:traceon[:N], traceoff, stacktrace; !func:cmd removes:
 * the probe API runs it at once, as the kernel's ftrace_process_regex()) or
 * a glob; the globs of one write are one filter transaction, which replaces
 * the filter on the first write after an O_TRUNC open (@append false) even
 * when the write held only commands (the kernel's release installs the
 * emptied hash), and adds otherwise.
 */
static int write_filter(struct trace_array *tr, bool nt, const char *v, size_t len,
			bool append, char *why, size_t wlen)
{
	char *copy = strndup(v, len), *globs = calloc(1, len + 2), *save = NULL;
	struct ta_mod *mods = NULL;
	bool cached = !append && tr->mods[nt];
	size_t gl = 0;
	int ret = 0;

	if (!copy || !globs) {
		free(copy);
		free(globs);
		return -ENOMEM;
	}
	ta_mod_lock();
	/* the O_TRUNC open empties the cache too (kernel ftrace_regex_open()); a write stages a copy */
	if (append && ta_mod_dup(&mods, tr->mods[nt]))
		ret = -ENOMEM;
	for (char *t = strtok_r(copy, " \t\n", &save); t && !ret;
	     t = strtok_r(NULL, " \t\n", &save)) {
		int r = usft_ftrace_regex_cmd(tr, t, !nt);

		if (r < 0) {
			snprintf(why, wlen, r == -EINVAL ? "'%.200s': no such function or command "
				 "(see available_filter_functions; commands: traceon, traceoff, "
				 "stacktrace)" : "'%.200s': %s", t, strerror(-r));
			ret = r;
			break;
		}
		if (r != USFT_REGEX_GLOB)
			continue;
		/* kernel ftrace_mod_callback(): a :mod: glob matching nothing is cached */
		if (strstr(t, ":mod:") && usft_match_sites(t + (t[0] == '!'), -1, NULL, 0) <= 0) {
			ret = ta_mod_cache(&mods, t);
			if (ret == -EINVAL)
				snprintf(why, wlen, t[0] == '!' ? "'%.200s': no such cached filter (cat "
					 "the file)" : "'%.200s': that object is loaded and has no such "
					 "function (see available_filter_functions)", t);
			cached = true;
			continue;
		}
		memcpy(globs + gl, t, strlen(t));
		gl += strlen(t);
		globs[gl++] = ' ';
	}
	free(copy);
	if (!ret && (gl || !append || cached)) {
		unsigned char *buf = gl ? (unsigned char *)globs : NULL;

		globs[gl ? gl - 1 : 0] = 0;
		/* FL_MOD: a filter waiting for its object selects nothing meanwhile */
		ret = usft_ftrace_set_regex_mod(&tr->ops, buf, gl ? -1 : 0, !append, !nt, mods);
		if (ret)
			snprintf(why, wlen, ret == -EINVAL ? "'%.200s' matches no function (see "
				 "available_filter_functions)" : "%.200s: %s", globs, strerror(-ret));
		else
			/* the graph ops takes the same text: the same result */
			usft_ftrace_set_regex_mod(&tr->gops.ops, buf, gl ? -1 : 0, !append, !nt, mods);
	}
	if (!ret) {
		struct ta_mod *old = tr->mods[nt];

		tr->mods[nt] = mods;
		mods = old;
	}
	ta_mod_free(mods);
	ta_mod_unlock();
	free(globs);
	return ret;
}

/* kernel process_mod_list() for @tr's list @nt (ta_mod_lock() held) */
static void process_mod_list(struct trace_array *tr, bool nt)
{
	struct ta_mod *taken = ta_mod_take_loaded(&tr->mods[nt]);
	char buf[512];

	if (!taken)
		return;
	for (struct ta_mod *m = taken; m; m = m->next) {
		/* each on its own: one matching nothing is dropped as the kernel's is */
		snprintf(buf, sizeof(buf), "%s:mod:%s", m->func, m->module);
		usft_ftrace_set_regex_mod(&tr->ops, (unsigned char *)buf, -1, 0, !nt, true);
		usft_ftrace_set_regex_mod(&tr->gops.ops, (unsigned char *)buf, -1, 0, !nt, true);
	}
	ta_mod_free(taken);
	usft_ftrace_set_regex_mod(&tr->ops, NULL, 0, 0, !nt, tr->mods[nt]);
	usft_ftrace_set_regex_mod(&tr->gops.ops, NULL, 0, 0, !nt, tr->mods[nt]);
	if (tr == &top && P.reg && !nt)
		prof_sync_filter();
}

/* kernel process_cached_mods(): every array's filters waiting for an object now loaded */
void ta_mod_process(void)
{
	if (!top.ready)
		return;
	for (struct trace_array *tr = &top; tr; tr = tr == &top ? instances : tr->next)
		for (int nt = 0; nt < 2; nt++)
			if (tr->mods[nt])
				process_mod_list(tr, nt);
}

static int cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return (x > y) - (x < y);
}

static struct ta_set *set_make(const unsigned long *v, size_t n)
{
	struct ta_set *s = malloc(sizeof(*s) + (n ? n : 1) * sizeof(unsigned long));

	if (!s)
		return NULL;
	s->old = NULL;
	s->n = n;
	memcpy(s->v, v, n * sizeof(*v));
	qsort(s->v, n, sizeof(*v), cmp_ulong);
	return s;
}

/* set_ftrace_pid / set_ftrace_notrace_pid (kernel trace_pid_write()) */
static int write_pids(struct trace_array *tr, struct ta_set **slot, const char *v, size_t len,
		      bool append, char *why, size_t wlen)
{
	unsigned long pids[TA_MAX_PIDS];
	size_t n = 0;
	char *copy = strndup(v, len), *save = NULL;
	struct ta_set *s = NULL;

	if (!copy)
		return -ENOMEM;
	if (append && *slot) {
		n = (*slot)->n;
		memcpy(pids, (*slot)->v, n * sizeof(pids[0]));
	}
	for (char *t = strtok_r(copy, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
		char *end;
		unsigned long p = strtoul(t, &end, 10);

		if (*end || !p || p > 4194304 || t[0] == '-') {
			snprintf(why, wlen, "'%.40s' is not a pid", t);
			free(copy);
			return -EINVAL;
		}
		if (n == TA_MAX_PIDS) {
			snprintf(why, wlen, "at most %d pids", TA_MAX_PIDS);
			free(copy);
			return -ENOSPC;
		}
		pids[n++] = p;
	}
	free(copy);
	if (n && !(s = set_make(pids, n)))
		return -ENOMEM;
	publish_set(slot, s, &tr->retired);
	return 0;
}

static void print_pids(FILE *f, const struct ta_set *s)
{
	if (!s || !s->n) {
		fputs("no pid\n", f);
		return;
	}
	for (size_t i = 0; i < s->n; i++)
		if (!i || s->v[i] != s->v[i - 1])
			fprintf(f, "%lu\n", s->v[i]);
}

/* the sites of @hops' filter hash into @ips (by name: the hash's functions) */
static size_t ops_hash_ips(struct ftrace_ops *hops, unsigned long *ips, size_t max)
{
	char *names = NULL;
	size_t nl = 0, n = 0;
	FILE *m = open_memstream(&names, &nl);

	if (!m)
		return 0;
	usft_print_ops_hash(m, hops, 0);
	fclose(m);
	for (char *save = NULL, *t = strtok_r(names, "\n", &save); t && n < max;
	     t = strtok_r(NULL, "\n", &save)) {
		int k;

		t[strcspn(t, " ")] = 0;
		k = usft_match_sites(t, -1, ips + n, max - n);
		if (k > 0)
			n += (size_t)k;
	}
	free(names);
	return n;
}

/* set_graph_function / set_graph_notrace: a never-registered ops holds the hash */
static int write_graph_set(struct ftrace_ops *hops, struct ta_set **slot, const char *v,
			   size_t len, bool append, char *why, size_t wlen)
{
	unsigned long *ips;
	struct ta_set *s = NULL;
	char *copy;
	int ret, n;

	if (only_space(v, len)) {
		if (!append) {
			ftrace_set_filter(hops, NULL, 0, 1);
			publish_set(slot, NULL, &top.retired);
		}
		return 0;
	}
	copy = strndup(v, len);
	if (!copy)
		return -ENOMEM;
	ret = ftrace_set_filter(hops, (unsigned char *)copy, -1, !append);
	if (ret) {
		snprintf(why, wlen, "'%.200s' matches no function", copy);
		free(copy);
		return ret;
	}
	free(copy);
	/* the hash's sites as a sorted array for the callbacks */
	ips = malloc(65536 * sizeof(*ips));
	if (!ips)
		return -ENOMEM;
	for (;;) {
		unsigned long gen = __atomic_load_n(&unload_gen, __ATOMIC_ACQUIRE);

		s = NULL;
		n = (int)ops_hash_ips(hops, ips, 65536);
		if (n > 0)
			s = set_make(ips, (size_t)n);
		publish_set(slot, s, &top.retired);
		/* a dlclose() meanwhile may have missed this set: build it again */
		if (__atomic_load_n(&unload_gen, __ATOMIC_ACQUIRE) == gen)
			break;
	}
	free(ips);
	return 0;
}

/* kernel t_show() and t_mod_show(): the functions, then the cached :mod: filters */
static void print_filter(FILE *f, struct trace_array *tr, bool nt)
{
	ta_mod_lock();
	/* a filter waiting for its object (FL_MOD) is not "all functions" */
	if (!usft_print_ops_hash(f, &tr->ops, nt) && (nt || !tr->mods[0]))
		fputs(nt ? "#### no functions disabled ####\n" : "#### all functions enabled ####\n", f);
	ta_mod_show(f, tr->mods[nt]);
	ta_mod_unlock();
}

static void print_opts(FILE *f, struct trace_array *tr)
{
	for (unsigned int i = 0; i < NR_OPTS; i++)
		if (tr == &top || !ta_opts[i].top_only)
			fprintf(f, "%s%s\n", OPT(tr, i) ? "" : "no", ta_opts[i].name);
}

static int find_opt(const char *name)
{
	for (unsigned int i = 0; i < NR_OPTS; i++)
		if (!strcmp(ta_opts[i].name, name))
			return (int)i;
	return -1;
}

static int set_opt(struct trace_array *tr, const char *name, bool on, char *why, size_t wlen)
{
	int i = find_opt(name);

	if (i < 0 || (tr != &top && ta_opts[i].top_only)) {
		snprintf(why, wlen, "no option '%s' (cat trace_options)", name);
		return -EINVAL;
	}
	if (on)
		tr->options |= 1ULL << i;
	else
		tr->options &= ~(1ULL << i);
	return 0;
}

static void print_clock(FILE *f, struct trace_array *tr)
{
	for (int i = 0; i < CLK_NR; i++)
		fprintf(f, i == tr->clock ? "%s[%s]" : "%s%s", i ? " " : "", clock_names[i]);
	fputc('\n', f);
}

/*
 * A print entry: @v (not NUL-terminated, @len bytes) as text number
 * marks_nr, @ip the caller of __trace_puts() (0: trace_marker), at the
 * thread's function_graph depth (the comment's indent).  Any thread.
 * Return: whether it is in the ring.
 */
static bool ta_print(struct trace_array *tr, unsigned long ip, const char *v, size_t len)
{
	unsigned long nr, old, p;
	struct ta_mark *m;
	struct ta_ent *e;

	nr = __atomic_add_fetch(&tr->marks_nr, 1, __ATOMIC_RELAXED);
	m = &tr->marks[nr % TA_MARKS];
	old = __atomic_load_n(&m->seq, __ATOMIC_RELAXED);
	if ((old & 1) || !__atomic_compare_exchange_n(&m->seq, &old, 2 * nr + 1, false,
						      __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return false;
	if (len >= TA_MARK_LEN)
		len = TA_MARK_LEN - 1;
	memcpy(m->text, v, len);
	while (len && m->text[len - 1] == '\n')
		len--;
	m->text[len] = 0;
	__atomic_store_n(&m->seq, 2 * nr + 2, __ATOMIC_RELEASE);
	e = ta_reserve(tr, &p);
	if (!e)
		return false;
	e->ts = ta_now(tr->clock);
	e->tid = ip ? (uint32_t)usft_gettid() : 0;
	e->cpu = ip ? (uint16_t)*usft_tbuf_cpu_ptr() : 0;
	e->type = TA_MARK;
	{
		int d = ip ? usft_fgraph_depth() : 0;

		e->depth = (uint8_t)(d > 255 ? 255 : d);
	}
	e->a = nr;
	e->b = ip;
	ta_commit(e, p);
	return true;
}

static int write_marker(struct trace_array *tr, const char *v, size_t len)
{
	if (!tr->on || !OPT(tr, OPT_MARKERS))
		return 0;	/* the kernel drops it too (and says the bytes were written) */
	ta_print(tr, 0, v, len);
	return 0;
}

bool usft_trace_array_puts(struct trace_array *tr, unsigned long ip, const char *str, size_t len)
{
	if (!tr)
		tr = &top;
	/* the kernel's __trace_array_puts(): tracing_on, TRACE_ITER_PRINTK */
	if (!__atomic_load_n(&tr->ready, __ATOMIC_ACQUIRE) ||
	    !__atomic_load_n(&tr->on, __ATOMIC_RELAXED) || !OPT(tr, OPT_PRINTK))
		return false;
	return ta_print(tr, ip, str, len);
}

/* the text of print entry @e into @buf, or "<overwritten>" */
static const char *mark_text(const struct trace_array *tr, const struct ta_ent *e, char *buf,
			     size_t len)
{
	const struct ta_mark *m = &tr->marks[e->a % TA_MARKS];
	unsigned long seq = __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE);

	if (seq != 2 * e->a + 2)
		return "<overwritten>";
	snprintf(buf, len, "%s", m->text);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&m->seq, __ATOMIC_RELAXED) == seq ? buf : "<overwritten>";
}

static void print_snapshot(FILE *f, struct trace_array *tr)
{
	if (!tr->snap) {
		fprintf(f, "# tracer: %s\n#\n# * Snapshot is freed *\n#\n", tracer_name(tr->tracer));
		fputs("# Snapshot commands:\n"
		      "# echo 0 > snapshot : Clears and frees snapshot buffer\n"
		      "# echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n"
		      "#                      Takes a snapshot of the main buffer.\n"
		      "# echo 2 > snapshot : Clears snapshot buffer (but does not allocate or free)\n"
		      "#                      (Doesn't have to be '2' works with any number that\n"
		      "#                       is not a '0' or '1')\n", f);
		return;
	}
	print_header(f, tr, tr->snap_n, tr->snap_n);
	fputs("# * Snapshot is allocated *\n#\n", f);
	print_ents(f, tr, tr->snap, tr->snap_n);
}

static int write_snapshot(struct trace_array *tr, unsigned long v)
{
	struct ta_ent *e;
	size_t n;
	int ret;

	if (v == 0) {
		free(tr->snap);
		tr->snap = NULL;
		tr->snap_n = 0;
		return 0;
	}
	if (v != 1) {
		if (tr->snap)
			tr->snap_n = 0;
		return 0;
	}
	/* kernel: swap the buffers; here: copy the main one out and clear it */
	ret = ta_collect(tr, &e, &n);
	if (ret)
		return ret;
	free(tr->snap);
	tr->snap = e;
	tr->snap_n = n;
	ta_clear(tr);
	return 0;
}

static const char readme_text[] =
	"tracing mini-HOWTO (usft: the tracefs of one traced process, docs/tracefs.md)\n\n"
	"# echo 0 > tracing_on : quick way to disable tracing\n"
	"# echo 1 > tracing_on : quick way to re-enable tracing\n\n"
	" Important files:\n"
	"  trace\t\t\t- The static contents of the buffer\n"
	"\t\t\t  To clear the buffer write into this file: echo > trace\n"
	"  trace_pipe\t\t- A consuming read to see the contents of the buffer\n"
	"  current_tracer\t- function and latency tracers\n"
	"  available_tracers\t- list of configured tracers for current_tracer\n"
	"  error_log\t- error log for failed commands (that support it)\n"
	"  buffer_size_kb\t- view and modify size of per cpu buffer\n"
	"  buffer_total_size_kb  - view total size of all cpu buffers\n\n"
	"  trace_clock\t\t- change the clock used to order events\n"
	"       local:   Per cpu clock but may not be synced across CPUs\n"
	"      global:   Synced across CPUs but slows tracing down.\n"
	"     counter:   Not a clock, but just an increment\n"
	"        mono:   Monotonic clock\n"
	"    mono_raw:   Monotonic clock, no NTP adjustment\n"
	"        boot:   Monotonic clock, counts suspend time\n"
	"\n  trace_marker\t\t- Writes into this file writes into the kernel buffer\n\n"
	"  tracing_cpumask\t- Limit which CPUs to trace\n"
	"  instances\t\t- Make sub-buffers with: mkdir instances/foo\n"
	"\t\t\t  Remove sub-buffer with rmdir\n"
	"  trace_options\t\t- Set format or modify how tracing happens\n"
	"\t\t\t  Disable an option by prefixing 'no' to the\n"
	"\t\t\t  option name\n"
	"\n  available_filter_functions - list of functions that can be filtered on\n"
	"  set_ftrace_filter\t- echo function name in here to only trace these\n"
	"\t\t\t  functions\n"
	"\t     accepts: func_full_name or glob-matching-pattern\n"
	"\t     modules: Can select a group via module\n"
	"\t      Format: :mod:<module-name>\n"
	"\t     example: echo :mod:libc > set_ftrace_filter\n"
	"\t    triggers: a command to perform when function is hit\n"
	"\t      Format: <function>:<trigger>[:count]\n"
	"\t     trigger: traceon, traceoff\n"
	"\t\t      stacktrace\n"
	"\t\t      enable_event:<system>:<event>\n"
	"\t\t      disable_event:<system>:<event>\n"
	"\t     example: echo do_fault:traceoff > set_ftrace_filter\n"
	"\t              echo do_trap:traceoff:3 > set_ftrace_filter\n"
	"\t     To remove trigger without count:\n"
	"\t       echo '!<function>:<trigger> > set_ftrace_filter\n"
	"\t     To remove trigger with a count:\n"
	"\t       echo '!<function>:<trigger>:0 > set_ftrace_filter\n"
	"  set_ftrace_notrace\t- echo function name in here to never trace.\n"
	"\t    accepts: func_full_name, *func_end, func_begin*, *func_middle*\n"
	"\t    modules: Can select a group via module command :mod:\n"
	"  set_ftrace_pid\t- Write pid(s) to only function trace those pids\n"
	"\t\t    (function)\n"
	"  set_ftrace_notrace_pid\t- Write pid(s) to not function trace those pids\n"
	"\t\t    (function)\n"
	"  set_graph_function\t- Trace the nested calls of a function (function_graph)\n"
	"  set_graph_notrace\t- Do not trace the nested calls of a function (function_graph)\n"
	"  max_graph_depth\t- Trace a limited depth of nested calls (0 is unlimited)\n"
	"  stack_trace\t\t- Shows the max stack trace when active\n"
	"  stack_max_size\t- Shows current max stack size that was traced\n"
	"\t\t\t  Write into this file to reset the max size (trigger a\n"
	"\t\t\t  new trace)\n"
	"  stack_trace_filter\t- Like set_ftrace_filter but limits what stack_trace\n"
	"\t\t\t  traces\n"
	"  stack_tracer_enabled\t- 1 turns the stack tracer on (the kernel's sysctl\n"
	"\t\t\t  /proc/sys/kernel/stack_tracer_enabled)\n"
	"\n  snapshot\t\t- Like 'trace' but shows the content of the static\n"
	"\t\t\t  snapshot buffer. Read the contents for more\n"
	"\t\t\t  information\n"
	"  function_profile_enabled - per-function hits and times: trace_stat/function<cpu>\n"
	"  enabled_functions\t- the functions with a callback attached, and how\n"
	"  touched_functions\t- the functions whose call site was ever changed\n"
	"  set_event\t\t- Enables events by name written into it\n"
	"  available_events\t- list of the events this process defines\n"
	"  events/\t\t- Directory containing all trace event subsystems:\n"
	"      enable\t\t- Write 0/1 to enable/disable tracing of all events\n"
	"  events/<system>/\t- Directory containing all trace events for <system>:\n"
	"      enable\t\t- Write 0/1 to enable/disable tracing of all <system>\n"
	"\t\t\t  events\n"
	"      filter\t\t- If set, only events passing filter are traced\n"
	"  events/<system>/<event>/\t- Directory containing control files for\n"
	"\t\t\t  <event>:\n"
	"      enable\t\t- Write 0/1 to enable/disable tracing of <event>\n"
	"      filter\t\t- If set, only events passing filter are traced\n"
	"      trigger\t\t- If set, a command to perform when event is hit\n"
	"\t    Format: <trigger>[:count][if <filter>]\n"
	"\t   trigger: traceon, traceoff\n"
	"\t            enable_event:<system>:<event>\n"
	"\t            disable_event:<system>:<event>\n"
	"\t\t    stacktrace\n";

/* the files every array has */
static int read_array_file(struct trace_array *tr, const char *file, FILE *f)
{
	int ret = usft_trace_events_read(tr, file, f);

	if (ret != -ENOENT)
		return ret;
	if (!strcmp(file, "current_tracer"))
		fprintf(f, "%s\n", tracer_name(tr->tracer));
	else if (!strcmp(file, "available_tracers"))
		fputs("function_graph function nop\n", f);
	else if (!strcmp(file, "tracing_on"))
		fprintf(f, "%d\n", tr->on);
	else if (!strcmp(file, "trace"))
		return read_trace(f, tr);
	else if (!strcmp(file, "set_ftrace_filter")) {
		int n = usft_ftrace_probes_show(tr, NULL, 0);
		char *buf = n > 0 ? malloc((size_t)n + 1) : NULL;

		print_filter(f, tr, false);
		if (buf && usft_ftrace_probes_show(tr, buf, (size_t)n + 1) <= n)
			fputs(buf, f);
		free(buf);
	}
	else if (!strcmp(file, "set_ftrace_notrace"))
		print_filter(f, tr, true);
	else if (!strcmp(file, "set_ftrace_pid"))
		print_pids(f, tr->pids);
	else if (!strcmp(file, "set_ftrace_notrace_pid"))
		print_pids(f, tr->nopids);
	else if (!strcmp(file, "buffer_size_kb"))
		fprintf(f, "%lu\n", tr->buffer_kb);
	else if (!strcmp(file, "buffer_total_size_kb"))
		fprintf(f, "%lu\n", tr->buffer_kb * (unsigned long)nr_cpus);
	else if (!strcmp(file, "trace_clock"))
		print_clock(f, tr);
	else if (!strcmp(file, "tracing_cpumask"))
		fprintf(f, "%lx\n", tr->cpumask & (nr_cpus >= 64 ? ~0UL : (1UL << nr_cpus) - 1));
	else if (!strcmp(file, "trace_options"))
		print_opts(f, tr);
	else if (!strncmp(file, "options/", 8)) {
		int i = find_opt(file + 8);

		if (i < 0 || (tr != &top && ta_opts[i].top_only))
			return -ENOENT;
		fprintf(f, "%d\n", (int)OPT(tr, i));
	} else if (!strcmp(file, "snapshot"))
		print_snapshot(f, tr);
	else if (!strcmp(file, "error_log"))
		fputs(tr->errlog ? tr->errlog : "", f);
	else if (!strcmp(file, "trace_pipe")) {
		/* not its text (PIPE consumes that): whether a read would find some */
		struct ta_ent e;
		unsigned long pos = __atomic_load_n(&tr->ring.tail, __ATOMIC_ACQUIRE);

		if (ring_get(&tr->ring, &pos, &e))
			fputs("ready\n", f);
	} else if (!strcmp(file, "trace_marker"))
		return -EINVAL;
	else
		return -ENOENT;
	return 0;
}

static void print_instances(FILE *f)
{
	for (struct trace_array *tr = instances; tr; tr = tr->next)
		fprintf(f, "%s\n", tr->name);
}

int usft_tracefs_read(const char *path, FILE *f, char *why, size_t wlen)
{
	const char *file;
	struct trace_array *tr = resolve(path, &file);
	int ret;

	sym_gen++;
	if (!tr) {
		snprintf(why, wlen, "no instance in '%s'", path);
		return -ENOENT;
	}
	if (tr == &top) {
		ret = usft_stack_tracer_read(file, f);	/* trace_stack.c */
		if (ret != -ENOENT)
			return ret;
		if (!strcmp(file, "available_filter_functions"))
			return usft_print_available_functions(f, 0), 0;
		if (!strcmp(file, "available_filter_functions_addrs"))
			return usft_print_available_functions(f, 1), 0;
		if (!strcmp(file, "enabled_functions"))
			return usft_print_enabled_functions(f), 0;
		if (!strcmp(file, "touched_functions"))
			return usft_print_touched_functions(f), 0;
		if (!strcmp(file, "set_graph_function"))
			{
			if (!usft_print_ops_hash(f, &graph_fn_ops, 0))
				fputs("#### all functions enabled ####\n", f);
			return 0;
		}
		if (!strcmp(file, "set_graph_notrace"))
			return usft_print_ops_hash(f, &graph_notrace_ops, 0), 0;
		if (!strcmp(file, "max_graph_depth"))
			return fprintf(f, "%d\n", graph_max_depth), 0;
		if (!strcmp(file, "README"))
			return fputs(readme_text, f), 0;
		if (!strcmp(file, "instances"))
			return print_instances(f), 0;
		if (!strcmp(file, "function_profile_enabled"))
			return fprintf(f, "%d\n", P.on), 0;
		if (!strcmp(file, "trace_stat")) {
			for (int c = 0; c < nr_cpus; c++)
				fprintf(f, "function%d\n", c);
			return 0;
		}
		if (!strncmp(file, "trace_stat/function", 19)) {
			char *end;
			long c = strtol(file + 19, &end, 10);

			if (*end || c < 0 || c >= nr_cpus || !file[19])
				return -ENOENT;
			return print_prof(f, (int)c), 0;
		}
	}
	ret = read_array_file(tr, file, f);
	if (ret == -ENOENT)
		snprintf(why, wlen, "no file '%s'", path);
	else if (ret == -EINVAL)
		snprintf(why, wlen, "'%s' is not readable", path);
	return ret;
}

int usft_tracefs_trunc(const char *path, char *why, size_t wlen)
{
	const char *file;
	struct trace_array *tr = resolve(path, &file);

	if (!tr) {
		snprintf(why, wlen, "no instance in '%s'", path);
		return -ENOENT;
	}
	if (!strcmp(file, "trace"))
		ta_clear(tr);
	else if (!strcmp(file, "snapshot") && tr->snap)
		tr->snap_n = 0;
	return 0;
}

static int write_top_file(const char *file, const char *v, size_t len, bool append, char *why,
			  size_t wlen)
{
	unsigned long n;
	int r = usft_stack_tracer_write(file, v, len, append, why, wlen);	/* trace_stack.c */

	if (r != -ENOENT)
		return r;
	if (!strcmp(file, "set_graph_function"))
		return write_graph_set(&graph_fn_ops, &graph_fn_set, v, len, append, why, wlen);
	if (!strcmp(file, "set_graph_notrace"))
		return write_graph_set(&graph_notrace_ops, &graph_nt_set, v, len, append, why, wlen);
	if (!strcmp(file, "function_profile_enabled")) {
		if (usft_tracefs_parse_ulong(v, len, 10, &n)) {
			snprintf(why, wlen, "function_profile_enabled takes 0 or 1");
			return -EINVAL;
		}
		return prof_enable(n != 0, why, wlen);
	}
	if (!strcmp(file, "max_graph_depth")) {
		if (usft_tracefs_parse_ulong(v, len, 10, &n) || n > 100000) {
			snprintf(why, wlen, "max_graph_depth takes a number, 0: no limit");
			return -EINVAL;
		}
		graph_max_depth = (int)n;
		return 0;
	}
	return -ENOENT;
}

int usft_tracefs_write(const char *path, const char *v, size_t len, bool append, char *why,
		       size_t wlen)
{
	const char *file;
	struct trace_array *tr = resolve(path, &file);
	char word[64];
	unsigned long n;
	int ret;

	if (!tr) {
		snprintf(why, wlen, "no instance in '%s'", path);
		return -ENOENT;
	}
	if (tr == &top) {
		ret = write_top_file(file, v, len, append, why, wlen);
		if (ret != -ENOENT)
			return ret;
	}
	if (!strcmp(file, "current_tracer")) {
		if (parse_word(v, len, word, sizeof(word)) || !*word) {
			snprintf(why, wlen, "current_tracer takes a tracer name");
			return -EINVAL;
		}
		return set_tracer(tr, word, why, wlen);
	}
	if (!strcmp(file, "tracing_on")) {
		if (usft_tracefs_parse_ulong(v, len, 10, &n)) {
			snprintf(why, wlen, "tracing_on takes a number");
			return -EINVAL;
		}
		__atomic_store_n(&tr->on, n ? 1 : 0, __ATOMIC_RELEASE);
		return 0;
	}
	if (!strcmp(file, "trace")) {
		ta_clear(tr);
		return 0;
	}
	if (!strcmp(file, "set_ftrace_filter") || !strcmp(file, "set_ftrace_notrace")) {
		bool nt = !strcmp(file, "set_ftrace_notrace");
		int r = write_filter(tr, nt, v, len, append, why, wlen);

		if (!r && tr == &top && P.reg && file[8] == 'f')
			prof_sync_filter();
		return r;
	}
	if (!strcmp(file, "set_ftrace_pid"))
		return write_pids(tr, &tr->pids, v, len, append, why, wlen);
	if (!strcmp(file, "set_ftrace_notrace_pid"))
		return write_pids(tr, &tr->nopids, v, len, append, why, wlen);
	if (!strcmp(file, "buffer_size_kb")) {
		unsigned long max = TA_MAX_ENTS * sizeof(struct ta_ent) / 1024 / (unsigned long)nr_cpus;

		if (usft_tracefs_parse_ulong(v, len, 10, &n) || !n || n > max) {
			snprintf(why, wlen, "buffer_size_kb takes 1..%lu", max);
			return -EINVAL;
		}
		/* the kernel's resize keeps the events; here the buffer starts empty */
		ta_clear(tr);
		tr->buffer_kb = n;
		__atomic_store_n(&tr->ring.mask, ring_entries(n) - 1, __ATOMIC_RELEASE);
		ta_clear(tr);
		return 0;
	}
	if (!strcmp(file, "trace_clock")) {
		if (!parse_word(v, len, word, sizeof(word)))
			for (int i = 0; i < CLK_NR; i++)
				if (!strcmp(word, clock_names[i])) {
					__atomic_store_n(&tr->clock, i, __ATOMIC_RELEASE);
					ta_clear(tr);
					return 0;
				}
		snprintf(why, wlen, "no clock '%.40s' (cat trace_clock)", word);
		return -EINVAL;
	}
	if (!strcmp(file, "tracing_cpumask")) {
		if (usft_tracefs_parse_ulong(v, len, 16, &n)) {
			snprintf(why, wlen, "tracing_cpumask takes a hex CPU mask");
			return -EINVAL;
		}
		__atomic_store_n(&tr->cpumask, n, __ATOMIC_RELEASE);
		return 0;
	}
	if (!strcmp(file, "trace_options")) {
		if (parse_word(v, len, word, sizeof(word)) || !*word) {
			snprintf(why, wlen, "trace_options takes an option, or no<option>");
			return -EINVAL;
		}
		if (!strncmp(word, "no", 2) && find_opt(word) < 0)
			return set_opt(tr, word + 2, false, why, wlen);
		return set_opt(tr, word, true, why, wlen);
	}
	if (!strncmp(file, "options/", 8)) {
		if (usft_tracefs_parse_ulong(v, len, 10, &n) || n > 1) {
			snprintf(why, wlen, "options take 0 or 1");
			return -EINVAL;
		}
		return set_opt(tr, file + 8, n, why, wlen);
	}
	if (!strcmp(file, "trace_marker"))
		return write_marker(tr, v, len);
	if (!strcmp(file, "snapshot")) {
		if (usft_tracefs_parse_ulong(v, len, 10, &n)) {
			snprintf(why, wlen, "snapshot takes 0, 1 or 2");
			return -EINVAL;
		}
		return write_snapshot(tr, n);
	}
	if (!strcmp(file, "error_log")) {
		free(tr->errlog);
		tr->errlog = NULL;
		tr->nr_errs = 0;
		return 0;
	}
	ret = usft_trace_events_write(tr, file, v, len, append, why, wlen);
	if (ret != -ENOENT)
		return ret;
	snprintf(why, wlen, "'%s' is not writable", path);
	return -EACCES;
}

int usft_tracefs_pipe_peek(const char *path, size_t max, FILE *f, unsigned long *start,
			   unsigned long *end, char *why, size_t wlen)
{
	const char *file;
	struct trace_array *tr = resolve(path, &file);
	struct comm_cache cc = { .n = 0 };
	struct ta_ring *r;
	unsigned long pos;
	struct ta_ent e, next;
	char batch[16384];	/* function lines, written out together */
	size_t bl = 0, out = 0;
	bool fast;

	sym_gen++;
	if (!tr) {
		snprintf(why, wlen, "no instance in '%s'", path);
		return -ENOENT;
	}
	fast = func_line_ok(tr);
	r = &tr->ring;
	pos = *start = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	while (out + bl + 512 < max && ring_get(r, &pos, &e)) {
		unsigned long peek = pos;
		bool have_next;
		size_t n;
		long at;

		if (!e.type)
			continue;
		if (fast && e.type == TA_FUNC && (n = func_line(batch + bl, tr, &cc, &e))) {
			bl += n;
			if (bl > sizeof(batch) - FUNC_LINE_MAX) {
				fwrite(batch, 1, bl, f);
				out += bl;
				bl = 0;
			}
			continue;
		}
		if (bl) {
			fwrite(batch, 1, bl, f);
			out += bl;
			bl = 0;
		}
		have_next = e.type == TA_GENT && ring_get(r, &peek, &next);
		at = ftell(f);
		if (print_ent(f, tr, &cc, &e, have_next ? &next : NULL))
			pos = peek;
		out += (size_t)(ftell(f) - at);
	}
	if (bl)
		fwrite(batch, 1, bl, f);
	*end = pos;
	return 0;
}

bool usft_tracefs_pipe_take(const char *path, unsigned long start, unsigned long end)
{
	const char *file;
	struct trace_array *tr = resolve(path, &file);

	if (!tr || __atomic_load_n(&tr->ring.tail, __ATOMIC_ACQUIRE) != start)
		return false;
	__atomic_store_n(&tr->ring.tail, end, __ATOMIC_RELEASE);
	return true;
}

int usft_tracefs_pipe(const char *path, size_t max, FILE *f, char *why, size_t wlen)
{
	unsigned long start, end;
	int ret = usft_tracefs_pipe_peek(path, max, f, &start, &end, why, wlen);

	if (!ret)
		usft_tracefs_pipe_take(path, start, end);
	return ret;
}
