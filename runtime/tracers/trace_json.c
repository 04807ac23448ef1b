// SPDX-License-Identifier: MIT
/*
 * tracers/trace_json.c - Chrome trace-event JSON (the format Perfetto and
 * chrome://tracing load): process and thread names as metadata events,
 * function_graph frames as B/E pairs per thread, function tracer calls as
 * instant events, profiles as a "profile" track of slices per process.
 *
 * The B/E events of every thread nest: a return whose entry is not in the
 * file (lost, or entered before a fork) is left out, and frames still open
 * at the end of a thread are closed at its last timestamp.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "trace_args.h"
#include "trace_read.h"

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void json_name(FILE *out, struct usft_trace *t, unsigned int sess, uint32_t epoch,
		      uint64_t addr)
{
	const char *n = usft_trace_sym(t, sess, epoch, addr, NULL);
	char buf[32];

	if (!n) {
		snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
		n = buf;
	}
	json_str(out, n);
}

/* microseconds with nanosecond precision */
static void json_ts(FILE *out, uint64_t ns)
{
	fprintf(out, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
}

/* a JSON thread is (pid, tid): after exec the same pair has a new session */
struct jthread {
	int pid;
	uint32_t tid;
	uint32_t sess;
	unsigned int depth;		/* open B events */
	unsigned int cap;		/* of ip[] and d[], grown as frames open */
	uint64_t *ip;
	unsigned int *d;		/* event depth of each open frame */
	uint64_t last_ts;
	struct jthread *next;
};

static bool jt_push(struct jthread *j, uint64_t ip, unsigned int depth)
{
	if (j->depth == j->cap) {
		unsigned int cap = j->cap ? j->cap * 2 : 16;
		uint64_t *a = realloc(j->ip, cap * sizeof(*a));
		unsigned int *b;

		if (a)
			j->ip = a;
		b = a ? realloc(j->d, cap * sizeof(*b)) : NULL;
		if (!b)
			return false;
		j->d = b;
		j->cap = cap;
	}
	j->ip[j->depth] = ip;
	j->d[j->depth] = depth;
	j->depth++;
	return true;
}

static struct jthread *jt_get(struct jthread **tab, size_t nb, int pid, uint32_t tid)
{
	size_t h = (size_t)((((uint64_t)tid * 0x9e3779b97f4a7c15ULL) ^
			     ((uint64_t)(uint32_t)pid * 0xc2b2ae3d27d4eb4fULL)) >> 17) & (nb - 1);
	struct jthread *j;

	for (j = tab[h]; j; j = j->next)
		if (j->tid == tid && j->pid == pid)
			return j;
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->pid = pid;
	j->tid = tid;
	j->next = tab[h];
	tab[h] = j;
	return j;
}

static void ev_head(FILE *out, bool *first, const char *ph, struct usft_trace *t,
		    unsigned int sess, uint32_t tid, uint64_t ts)
{
	fprintf(out, "%s\n{\"ph\":\"%s\",\"pid\":%d,\"tid\":%u,\"ts\":", *first ? "" : ",", ph,
		t->sess[sess].pid, tid);
	json_ts(out, ts);
	*first = false;
}

/* frames still open when a thread's image ends (exec, exit): closed at its last event */
static void close_open(FILE *out, bool *first, struct usft_trace *t, struct jthread *j)
{
	while (j->depth) {
		j->depth--;
		ev_head(out, first, "E", t, j->sess, j->tid, j->last_ts);
		fputs(",\"cat\":\"function_graph\",\"name\":", out);
		json_name(out, t, j->sess, UINT32_MAX, j->ip[j->depth]);
		fputs(",\"args\":{\"unfinished\":true}}", out);
	}
}

/*
 * A return of the frame open at (@ip, @depth), not the innermost one: the
 * frames above it ran in another context (a coroutine switched away and
 * still suspended, or left for good): they end here, marked so.
 * Return: false when no open frame is that one.
 */
static bool close_to(FILE *out, bool *first, struct usft_trace *t, struct jthread *j,
		     const struct usft_revent *e, uint64_t ip, unsigned int depth)
{
	unsigned int k = j->depth;

	while (k && (j->ip[k - 1] != ip || j->d[k - 1] != depth))
		k--;
	if (!k)
		return false;
	while (j->depth > k) {
		j->depth--;
		ev_head(out, first, "E", t, e->sess, e->tid, e->ts);
		fputs(",\"cat\":\"function_graph\",\"name\":", out);
		json_name(out, t, e->sess, e->epoch, j->ip[j->depth]);
		fputs(",\"args\":{\"switched\":true}}", out);
	}
	return true;
}

/*
 * A profile (per-function tables, no timeline) as one Perfetto track per
 * process, "profile": a slice per function, heaviest first, laid end to
 * end from the session's start, as long as the function's total time, its
 * hits, total, average and variance in args.
 */
static void print_profile_track(FILE *out, bool *first, struct usft_rsession *s)
{
	uint64_t ts = s->base_ns;

	if (!s->nprof)
		return;
	usft_prof_sort(s);
	fprintf(out, "%s\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
		"\"args\":{\"name\":\"profile\"}}", *first ? "" : ",", s->pid, s->pid);
	*first = false;
	for (size_t k = 0; k < s->nprof; k++) {
		const struct usft_rprof *p = &s->prof[k];
		char buf[32];

		fprintf(out, ",\n{\"ph\":\"X\",\"cat\":\"profile\",\"pid\":%d,\"tid\":%d,\"ts\":",
			s->pid, s->pid);
		json_ts(out, ts);
		fputs(",\"dur\":", out);
		json_ts(out, p->time_ns);
		fputs(",\"name\":", out);
		if (!p->name)
			snprintf(buf, sizeof(buf), "0x%" PRIx64, p->addr);
		json_str(out, p->name ? p->name : buf);
		fprintf(out, ",\"args\":{\"hits\":%" PRIu64 ",\"time_ns\":%" PRIu64
			",\"avg_ns\":%" PRIu64 "}}", p->hits, p->time_ns,
			p->hits ? p->time_ns / p->hits : 0);
		ts += p->time_ns;
	}
}

/* ,"args":{"KEY":"1, 2"} when @e has values of @kind (-A, -R) */
static bool json_values(FILE *out, const struct usft_trace *t, const struct usft_revent *e,
			unsigned int kind, const char *key)
{
	const char *v = usft_trace_has_values(t) ? usft_trace_values(t, e, kind) : NULL;

	if (!v)
		return false;
	fprintf(out, ",\"args\":{\"%s\":", key);
	json_str(out, v);
	fputc('}', out);
	return true;
}

int usft_print_json(FILE *out, struct usft_trace *t, unsigned int flags)
{
	const char *tracer = usft_trace_tracer(t);
	struct jthread **tab;
	bool first = true, stk_open = false;
	unsigned int nfr = 0;
	size_t nb = 1024, nthreads = t->nsess;
	struct usft_trace_iter *it;
	const struct usft_revent *e;
	int err;

	for (size_t i = 0; i < t->nsess; i++)
		nthreads += t->sess[i].ntasks;
	while (nb < nthreads && nb < ((size_t)1 << 24))
		nb *= 2;
	tab = calloc(nb, sizeof(*tab));
	it = tab ? usft_trace_iter_new(t) : NULL;
	if (!it) {
		free(tab);
		return -ENOMEM;
	}
	fprintf(out, "{\"traceEvents\":[");
	for (size_t si = 0; si < t->nsess; si++) {
		struct usft_rsession *s = &t->sess[si];

		fprintf(out, "%s\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":",
			first ? "" : ",", s->pid);
		json_str(out, s->comm ? s->comm : "?");
		fputs("}}", out);
		first = false;
		for (size_t k = 0; k < s->ntasks; k++) {
			fprintf(out, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
				"\"args\":{\"name\":", s->pid, s->tasks[k].tid);
			json_str(out, s->tasks[k].comm);
			fputs("}}", out);
		}
	}
	while ((e = usft_trace_iter_next(it))) {
		unsigned int type = usft_rev_type(e), depth = usft_rev_depth(e);
		uint64_t ip = usft_rev_ip(e);
		struct jthread *j = jt_get(tab, nb, t->sess[e->sess].pid, e->tid);

		if (!j)
			break;
		if (j->sess != e->sess) {
			close_open(out, &first, t, j);
			j->sess = e->sess;
		}
		j->last_ts = e->ts;
		if (stk_open && type != EV_STACK_FRAME) {
			fputs("]}}", out);	/* the stack's frames end */
			stk_open = false;
		}
		switch (type) {
		case EV_FUNC:
			ev_head(out, &first, "i", t, e->sess, e->tid, e->ts);
			fputs(",\"s\":\"t\",\"cat\":\"function\",\"name\":", out);
			json_name(out, t, e->sess, e->epoch, ip);
			fputs(",\"args\":{\"parent\":", out);
			json_name(out, t, e->sess, e->epoch, e->aux);
			fputs("}}", out);
			break;
		case EV_GRAPH_ENT:
			if (j->depth > EV_DEPTH_MAX || !jt_push(j, ip, depth))
				break;
			ev_head(out, &first, "B", t, e->sess, e->tid, e->ts);
			fputs(",\"cat\":\"function_graph\",\"name\":", out);
			json_name(out, t, e->sess, e->epoch, ip);
			json_values(out, t, e, USFT_DATA_ARGS, "args");
			fputs("}", out);
			break;
		case EV_GRAPH_RET:
		case EV_GRAPH_GONE:
			/* close only what is open, innermost first */
			if (!close_to(out, &first, t, j, e, ip, depth))
				break;
			j->depth--;
			ev_head(out, &first, "E", t, e->sess, e->tid, e->ts);
			fputs(",\"cat\":\"function_graph\",\"name\":", out);
			json_name(out, t, e->sess, e->epoch, ip);
			if (type == EV_GRAPH_GONE)
				fputs(",\"args\":{\"unwound\":true}", out);
			else if (!json_values(out, t, e, USFT_DATA_RETVAL, "retval"))
				json_values(out, t, e, USFT_DATA_RETVAL_RAW, "retval");
			fputs("}", out);
			break;
		case EV_STACK:
			/* an instant event; its frames (EV_STACK_FRAME) come right after it */
			ev_head(out, &first, "i", t, e->sess, e->tid, e->ts);
			fputs(",\"s\":\"t\",\"cat\":\"stack\",\"name\":\"<stack trace>\","
			      "\"args\":{\"function\":", out);
			json_name(out, t, e->sess, e->epoch, ip);
			fputs(",\"frames\":[", out);
			stk_open = true;
			nfr = 0;
			break;
		case EV_STACK_FRAME: {
			uint64_t off = 0;
			const char *n = usft_trace_sym(t, e->sess, e->epoch, e->aux, &off);
			char buf[512];

			if (n && strchr(n, '+'))
				snprintf(buf, sizeof(buf), "%s", n);
			else if (n)
				snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, n, off);
			else
				snprintf(buf, sizeof(buf), "0x%" PRIx64, e->aux);
			if (!stk_open)
				break;
			if (nfr++)
				fputc(',', out);
			json_str(out, buf);
			break;
		}
		case EV_PRINT:
			/* trace_printk(): an instant on the thread, the text its name */
			ev_head(out, &first, "i", t, e->sess, e->tid, e->ts);
			fputs(",\"s\":\"t\",\"cat\":\"print\",\"name\":", out);
			json_str(out, usft_rev_text(e));
			fputs(",\"args\":{\"ip\":", out);
			json_name(out, t, e->sess, e->epoch, ip);
			fputs("}}", out);
			break;
		case EV_LOST:
			ev_head(out, &first, "i", t, e->sess, e->tid, e->ts);
			fprintf(out, ",\"s\":\"t\",\"cat\":\"usft\",\"name\":\"lost events\","
				"\"args\":{\"lost\":%" PRIu64 "}}", e->aux);
			break;
		default:
			break;
		}
	}
	if (stk_open)
		fputs("]}}", out);
	err = usft_trace_iter_error(it);
	usft_trace_iter_free(it);
	for (size_t h = 0; h < nb; h++) {
		for (struct jthread *j = tab[h]; j; j = j->next)
			close_open(out, &first, t, j);
	}
	for (size_t si = 0; si < t->nsess; si++)
		print_profile_track(out, &first, &t->sess[si]);
	fputs("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"tracer\":", out);
	json_str(out, tracer);
	fprintf(out, ",\"events\":%" PRIu64 ",\"lost\":%" PRIu64 "}", t->events, t->lost);
	fputs("\n}\n", out);
	for (size_t h = 0; h < nb; h++)
		while (tab[h]) {
			struct jthread *n = tab[h]->next;

			free(tab[h]->ip);
			free(tab[h]->d);
			free(tab[h]);
			tab[h] = n;
		}
	free(tab);
	return err ? err : ferror(out) ? -1 : 0;
}
