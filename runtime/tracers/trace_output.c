// SPDX-License-Identifier: MIT
/*
 * tracers/trace_output.c - the kernel's text formats (kernel/trace/
 * trace_output.c, trace_functions_graph.c, the function profiler's
 * trace_stat files), written from a trace file.
 *
 * function:        "comm-tid [cpu] sec.usec: func <-parent"
 * function_graph:  " cpu)  comm-tid  | duration |  func() {" ... with the
 *                  funcgraph-proc column on (threads matter in a process),
 *                  funcgraph-tail on (a closing brace names its function), two spaces per depth,
 *                  leaves folded to "func();", the kernel's overhead marks
 *                  and task-switch banners; frames left by longjmp or an
 *                  exception close with "(unwound)".
 * profile:         Function / Hit / Time / Avg / s^2 per process.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "trace_args.h"
#include "trace_read.h"

#define GRAPH_INDENT		2
#define PROCINFO_LENGTH		14

void usft_format_duration(char *buf, size_t len, uint64_t ns)
{
	char usecs[24], nsecs[8];
	unsigned long rem = (unsigned long)(ns % 1000);
	size_t l, n;

	snprintf(usecs, sizeof(usecs), "%" PRIu64, ns / 1000);
	n = (size_t)snprintf(buf, len, "%s", usecs);
	l = strlen(usecs);
	/* at most 7 digits in all */
	if (l < 7) {
		size_t slen = 8 - l < sizeof(nsecs) ? 8 - l : sizeof(nsecs);

		snprintf(nsecs, slen, "%03lu", rem);
		n += (size_t)snprintf(buf + n, len > n ? len - n : 0, ".%s", nsecs);
		l += strlen(nsecs) + 1;
	}
	n += (size_t)snprintf(buf + n, len > n ? len - n : 0, " us ");
	for (; l < 8 && n + 1 < len; l++)
		buf[n++] = ' ';
	buf[n < len ? n : len - 1] = 0;
}

static char find_mark(uint64_t d)
{
	static const struct { uint64_t val; char sym; } mark[] = {
		{ 1000000000ULL, '$' }, { 100000000ULL, '@' }, { 10000000ULL, '*' },
		{ 1000000ULL, '#' }, { 100000ULL, '!' }, { 10000ULL, '+' },
	};

	for (size_t i = 0; i < sizeof(mark) / sizeof(mark[0]); i++)
		if (d > mark[i].val)
			return mark[i].sym;
	return ' ';
}

static const char *sym_name(struct usft_trace *t, const struct usft_revent *e, uint64_t addr,
			    char *buf, size_t len)
{
	const char *n = usft_trace_sym(t, e->sess, e->epoch, addr, NULL);

	if (n)
		return n;
	snprintf(buf, len, "0x%" PRIx64, addr);
	return buf;
}

/*
 * A stack (EV_STACK and the EV_STACK_FRAME events after it) as the kernel's
 * trace_stack_print(): "<stack trace>" then " => func+0xoff" per frame.
 * function_graph wraps it in a comment (print_graph_comment()): "/\*" before,
 * " *\/" after its last frame.  Return: whether @e was one of these.
 */
static bool print_stack_part(FILE *out, struct usft_trace *t, struct usft_trace_iter *it,
			     const struct usft_revent *e, bool graph)
{
	unsigned int type = usft_rev_type(e);
	const struct usft_revent *n;
	uint64_t off = 0;
	const char *name;

	if (type == EV_STACK) {
		fputs(graph ? "/* <stack trace>\n" : "<stack trace>\n", out);
	} else if (type == EV_STACK_FRAME) {
		name = usft_trace_sym(t, e->sess, e->epoch, e->aux, &off);
		if (name && strchr(name, '+'))
			fprintf(out, " => %s\n", name);	/* "lib.so+0x..." already */
		else if (name)
			fprintf(out, " => %s+0x%" PRIx64 "\n", name, off);
		else
			fprintf(out, " => 0x%" PRIx64 "\n", e->aux);
	} else {
		return false;
	}
	n = graph ? usft_trace_iter_peek_same(it) : NULL;
	if (graph && (!n || usft_rev_type(n) != EV_STACK_FRAME))
		fputs(" */\n", out);
	return true;
}

static int cpu_width(struct usft_trace *t)
{
	int max = 1;

	for (size_t i = 0; i < t->nsess; i++)
		if (t->sess[i].nr_cpus > max)
			max = t->sess[i].nr_cpus;
	return max > 1000 ? 4 : max > 100 ? 3 : max > 10 ? 2 : 1;
}

static unsigned int ev_cpu(const struct usft_revent *e)
{
	return e->cpu == EV_CPU_UNKNOWN ? 0 : e->cpu;
}

static void print_header(FILE *out, struct usft_trace *t, const char *tracer)
{
	int ncpu = 1;

	for (size_t i = 0; i < t->nsess; i++)
		if (t->sess[i].nr_cpus > ncpu)
			ncpu = t->sess[i].nr_cpus;
	fprintf(out, "# tracer: %s\n#\n", tracer);
	fprintf(out, "# entries-in-buffer/entries-written: %" PRIu64 "/%" PRIu64 "   #P:%d\n",
		t->events, t->events + t->lost, ncpu);
	if (t->lost)
		fprintf(out, "# lost events: %" PRIu64 "\n", t->lost);
	if (t->truncated)
		fprintf(out, "# the trace file ends inside a chunk (a process killed while writing, "
			"or a full disk)\n");
	fprintf(out, "#\n");
}

/* ---- function --------------------------------------------------------------- */

static void print_function(FILE *out, struct usft_trace *t, unsigned int flags)
{
	char b1[32], b2[32];

	if (!(flags & USFT_PRINT_NO_HEADER)) {
		print_header(out, t, "function");
		fprintf(out, "#           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n"
			     "#              | |         |         |         |\n");
	}
	struct usft_trace_iter *it = usft_trace_iter_new(t);
	const struct usft_revent *e;

	if (!it)
		return;
	while ((e = usft_trace_iter_next(it))) {
		unsigned long long us = e->ts / 1000;

		if (usft_rev_type(e) == EV_LOST) {
			fprintf(out, "TID:%u [LOST %" PRIu64 " EVENTS]\n", e->tid, e->aux);
			continue;
		}
		if (usft_rev_type(e) == EV_STACK_FRAME) {
			print_stack_part(out, t, it, e, false);
			continue;
		}
		if (usft_rev_type(e) == EV_PRINT) {
			/* the kernel's print entry: "func: text" */
			fprintf(out, "%16s-%-7u [%03u] %5llu.%06llu: %s: %s\n",
				usft_trace_comm(t, e->sess, (int)e->tid), e->tid, ev_cpu(e),
				us / 1000000, us % 1000000,
				sym_name(t, e, usft_rev_ip(e), b1, sizeof(b1)), usft_rev_text(e));
			continue;
		}
		if (usft_rev_type(e) != EV_FUNC && usft_rev_type(e) != EV_STACK)
			continue;
		fprintf(out, "%16s-%-7u [%03u] %5llu.%06llu: ",
			usft_trace_comm(t, e->sess, (int)e->tid), e->tid, ev_cpu(e),
			us / 1000000, us % 1000000);
		if (print_stack_part(out, t, it, e, false))
			continue;
		fprintf(out, "%s <-%s\n", sym_name(t, e, usft_rev_ip(e), b1, sizeof(b1)),
			sym_name(t, e, e->aux, b2, sizeof(b2)));
	}
	usft_trace_iter_free(it);
}

/* ---- function_graph ------------------------------------------------------------ */

static void print_proc(FILE *out, const char *comm, unsigned int tid)
{
	char s[64];
	int len = snprintf(s, sizeof(s), "%s-%u", comm, tid), spaces = 0;

	if (len < PROCINFO_LENGTH)
		spaces = PROCINFO_LENGTH - len;
	fprintf(out, "%*s%s%*s", spaces / 2, "", s, spaces - spaces / 2, "");
}

static void print_prefix(FILE *out, struct usft_trace *t, const struct usft_revent *e, int cw)
{
	fprintf(out, " %*u) ", cw, ev_cpu(e));
	print_proc(out, usft_trace_comm(t, e->sess, (int)e->tid), e->tid);
	fputs(" | ", out);
}

static void print_dur(FILE *out, uint64_t d, bool have)
{
	char buf[40];

	if (!have) {
		fputs("              |  ", out);
		return;
	}
	usft_format_duration(buf, sizeof(buf), d);
	fprintf(out, "%c %s|  ", find_mark(d), buf);
}

/* per thread: open entries by depth (grown to the deepest depth seen) */
struct gthread {
	uint32_t tid;
	uint32_t sess;
	unsigned int cap;
	unsigned int open;	/* calls open now: a comment's indent */
	uint64_t *ip, *ts;
	struct gthread *next;
};

/* hash buckets for per-thread state: about one per thread the file names */
static size_t thread_buckets(const struct usft_trace *t)
{
	size_t n = t->nsess, nb = 1024;

	for (size_t i = 0; i < t->nsess; i++)
		n += t->sess[i].ntasks;
	while (nb < n && nb < ((size_t)1 << 24))
		nb *= 2;
	return nb;
}

static size_t thread_hash(uint32_t sess, uint32_t tid, size_t nb)
{
	return (size_t)(((tid * 0x9e3779b97f4a7c15ULL) ^ (sess * 0xc2b2ae3d27d4eb4fULL)) >> 17) &
	       (nb - 1);
}

static struct gthread *gthread_get(struct gthread **tab, size_t nb, uint32_t sess, uint32_t tid)
{
	size_t h = thread_hash(sess, tid, nb);
	struct gthread *g;

	for (g = tab[h]; g; g = g->next)
		if (g->tid == tid && g->sess == sess)
			return g;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->tid = tid;
	g->sess = sess;
	g->next = tab[h];
	tab[h] = g;
	return g;
}

/* room for @depth; Return: false when out of memory */
static bool gthread_reserve(struct gthread *g, unsigned int depth)
{
	unsigned int cap = g->cap ? g->cap : 16;
	uint64_t *ip, *ts;

	if (depth < g->cap)
		return true;
	while (cap <= depth)
		cap *= 2;
	ip = realloc(g->ip, cap * sizeof(*ip));
	if (ip)
		g->ip = ip;
	ts = ip ? realloc(g->ts, cap * sizeof(*ts)) : NULL;
	if (!ts)
		return false;
	g->ts = ts;
	memset(g->ip + g->cap, 0, (cap - g->cap) * sizeof(*ip));
	g->cap = cap;
	return true;
}

static void print_graph(FILE *out, struct usft_trace *t, unsigned int flags)
{
	const size_t nb = thread_buckets(t);
	struct gthread **tab = calloc(nb, sizeof(*tab));
	struct usft_trace_iter *it = usft_trace_iter_new(t);
	const struct usft_revent *e;
	int cw = cpu_width(t);
	bool have_prev = false, vals = usft_trace_has_values(t);
	uint32_t prev_tid = 0, prev_sess = 0;
	char nb1[32];

	if (!tab || !it)
		goto out;
	if (!(flags & USFT_PRINT_NO_HEADER)) {
		print_header(out, t, "function_graph");
		fprintf(out, "# CPU  TASK/PID         DURATION                  FUNCTION CALLS\n"
			     "# |     |    |           |   |                     |   |   |   |\n");
	}
	while ((e = usft_trace_iter_next(it))) {
		unsigned int type = usft_rev_type(e), depth = usft_rev_depth(e);
		uint64_t ip = usft_rev_ip(e);
		struct gthread *g;
		const char *name;

		if (type == EV_LOST) {
			fprintf(out, "TID:%u [LOST %" PRIu64 " EVENTS]\n", e->tid, e->aux);
			continue;
		}
		if (type == EV_STACK_FRAME) {
			print_stack_part(out, t, it, e, true);
			continue;
		}
		if ((type < EV_GRAPH_ENT || type > EV_GRAPH_GONE) && type != EV_STACK &&
		    type != EV_PRINT)
			continue;
		g = gthread_get(tab, nb, e->sess, e->tid);
		if (!g)
			break;
		if (have_prev && (prev_tid != e->tid || prev_sess != e->sess)) {
			fputs(" ------------------------------------------\n", out);
			fprintf(out, " %*u) ", cw, ev_cpu(e));
			print_proc(out, usft_trace_comm(t, prev_sess, (int)prev_tid), prev_tid);
			fputs(" => ", out);
			print_proc(out, usft_trace_comm(t, e->sess, (int)e->tid), e->tid);
			fputs("\n ------------------------------------------\n\n", out);
		}
		have_prev = true;
		prev_tid = e->tid;
		prev_sess = e->sess;
		name = sym_name(t, e, ip, nb1, sizeof(nb1));
		print_prefix(out, t, e, cw);
		if (type == EV_STACK) {
			print_dur(out, 0, false);
			print_stack_part(out, t, it, e, true);
			continue;
		}
		if (type == EV_PRINT) {
			/*
			 * kernel print_graph_comment(): no duration, indented
			 * below the open call (none at the outermost level)
			 */
			print_dur(out, 0, false);
			fprintf(out, "%*s/* %s */\n",
				g->open > 1 ? (int)g->open * GRAPH_INDENT : 0, "", usft_rev_text(e));
			continue;
		}
		if (type == EV_GRAPH_ENT) {
			const struct usft_revent *r = usft_trace_iter_peek_same(it);
			unsigned int rt = r ? usft_rev_type(r) : 0;

			const char *args = vals ? usft_trace_values(t, e, USFT_DATA_ARGS) : NULL;

			if (r && (rt == EV_GRAPH_RET || rt == EV_GRAPH_GONE) && usft_rev_ip(r) == ip &&
			    usft_rev_depth(r) == depth) {
				const char *rv = vals ? usft_trace_values(t, r, USFT_DATA_RETVAL) : NULL;
				const char *raw = vals ? usft_trace_values(t, r, USFT_DATA_RETVAL_RAW) :
							 NULL;

				print_dur(out, r->ts - e->ts, true);
				/* uftrace's "f(1) = 2;", the kernel's "f(); /\* = 0x2 *\/" */
				fprintf(out, "%*s%s(%s)%s%s;%s%s%s", depth * GRAPH_INDENT, "", name,
					args ? args : "", rv ? " = " : "", rv ? rv : "",
					rt == EV_GRAPH_GONE ? " /* unwound */" : "",
					raw ? " /* = " : "", raw ? raw : "");
				if (raw)
					fputs(" */", out);
				fputc('\n', out);
				usft_trace_iter_drop_same(it);
				g->open = depth;
				continue;
			}
			if (gthread_reserve(g, depth)) {
				g->ip[depth] = ip;
				g->ts[depth] = e->ts;
			}
			g->open = depth + 1;
			print_dur(out, 0, false);
			fprintf(out, "%*s%s(%s) {\n", depth * GRAPH_INDENT, "", name, args ? args : "");
			continue;
		}
		g->open = depth;
		/* a return: its entry may be gone (lost, or made before a fork) */
		if (depth < g->cap && g->ip[depth] == ip) {
			print_dur(out, e->ts - g->ts[depth], true);
			g->ip[depth] = 0;
		} else {
			print_dur(out, 0, false);
		}
		{
			const char *rv = vals ? usft_trace_values(t, e, USFT_DATA_RETVAL) : NULL;
			const char *raw = vals ? usft_trace_values(t, e, USFT_DATA_RETVAL_RAW) : NULL;

			/* uftrace's "} = 42; /\* f *\/", the kernel's "} /\* f = 0x2a *\/" */
			fprintf(out, "%*s}%s%s%s /* %s%s%s%s */\n", depth * GRAPH_INDENT, "",
				rv ? " = " : "", rv ? rv : "", rv ? ";" : "", name,
				type == EV_GRAPH_GONE ? " (unwound)" : "", raw ? " = " : "",
				raw ? raw : "");
		}
	}
out:
	if (tab) {
		for (size_t i = 0; i < nb; i++)
			while (tab[i]) {
				struct gthread *n = tab[i]->next;

				free(tab[i]->ip);
				free(tab[i]->ts);
				free(tab[i]);
				tab[i] = n;
			}
		free(tab);
	}
	usft_trace_iter_free(it);
}

/* ---- profile ---------------------------------------------------------------- */

static int prof_cmp(const void *a, const void *b)
{
	const struct usft_rprof *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns > y->time_ns ? -1 : 1;
	return x->hits > y->hits ? -1 : x->hits < y->hits;
}

void usft_prof_sort(struct usft_rsession *s)
{
	if (s->nprof)
		qsort(s->prof, s->nprof, sizeof(*s->prof), prof_cmp);
}

static void print_profile(FILE *out, struct usft_trace *t, unsigned int flags)
{
	if (!(flags & USFT_PRINT_NO_HEADER))
		fprintf(out, "# tracer: profile\n#\n");
	for (size_t si = 0; si < t->nsess; si++) {
		struct usft_rsession *s = &t->sess[si];

		if (!s->nprof)
			continue;
		usft_prof_sort(s);
		fprintf(out, "# process %s-%d%s%s\n", s->comm ? s->comm : "?", s->pid,
			s->cmdline && *s->cmdline ? ": " : "", s->cmdline ? s->cmdline : "");
		fprintf(out, "  Function                               Hit    Time            Avg             s^2\n"
			     "  --------                               ---    ----            ---             ---\n");
		for (size_t i = 0; i < s->nprof; i++) {
			const struct usft_rprof *p = &s->prof[i];
			char name[32], tbuf[40], abuf[40], sbuf[40];
			double var = 0;
			uint64_t avg = p->hits ? p->time_ns / p->hits : 0;

			if (p->hits > 1) {
				double n = (double)p->hits, sum = (double)p->time_ns;

				/* sample variance, ns^2 -> reported in us^2 as the kernel */
				var = (n * p->time_sq - sum * sum) / (n * (n - 1)) / 1000.0;
				if (!(var >= 0))
					var = 0;	/* negative, or NaN from a hostile file */
			}
			usft_format_duration(tbuf, sizeof(tbuf), p->time_ns);
			usft_format_duration(abuf, sizeof(abuf), avg);
			usft_format_duration(sbuf, sizeof(sbuf),
					     var < 0x1p64 ? (uint64_t)var : UINT64_MAX);
			fprintf(out, "  %-30s  %10" PRIu64 "    %s    %s    %s\n",
				p->name ? p->name : (snprintf(name, sizeof(name), "0x%" PRIx64, p->addr), name),
				p->hits, tbuf, abuf, sbuf);
		}
		fputc('\n', out);
	}
}

int usft_print_text(FILE *out, struct usft_trace *t, unsigned int flags)
{
	const char *tracer = usft_trace_tracer(t);

	usft_trace_sort(t);
	if (!strcmp(tracer, "function"))
		print_function(out, t, flags);
	else if (!strcmp(tracer, "function_graph"))
		print_graph(out, t, flags);
	else if (!strcmp(tracer, "profile"))
		print_profile(out, t, flags);
	else
		fprintf(out, "# tracer: %s\n", tracer);
	return ferror(out) ? -1 : 0;
}
