// SPDX-License-Identifier: MIT
/*
 * tracers/trace_views.c - `usft report`'s aggregated views, in uftrace's
 * shapes (uftrace report, uftrace graph, folded stacks for flamegraph.pl):
 *
 *   summary  per function: total time, self time, calls, avg/min/max per
 *            call; sorted by -s keys; a recursive function's total counts
 *            its outermost calls only (the time is not counted twice)
 *   graph    every call of FUNC and what ran below it, merged by call
 *            path: "(calls) name" with the total time of the path
 *   folded   "main;outer;middle self_ns" per distinct call path
 *
 * They read the events of each thread in the order it wrote them (threads
 * apart, so the file order serves and nothing is sorted), through one
 * open-frame stack per thread.  A return closes the open frame of the same
 * function and depth; frames above it (left by longjmp, an exception or a
 * coroutine switch) end there.  A return with no such frame (its entry lost
 * or made before a fork) is skipped; frames still open at the end of a
 * thread end at its last event.  -t (the kernel's tracing_thresh) and -D
 * leave calls out: their time stays in their caller's self time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "trace_views.h"

bool usft_glob_match(const char *pat, const char *str);

/* ---- functions, interned by name -------------------------------------------- */

struct vname {
	char *name;
	uint64_t calls, total, self, min, max;
	struct vname *next;		/* hash chain */
};

/* (session, epoch, ip) -> its name: one lookup per site, not per event */
struct vsite {
	uint64_t ip;
	uint32_t sess;
	uint16_t epoch;
	struct vname *fn;
	struct vsite *next;
};

struct vnode {
	struct vname *fn;
	uint64_t calls, total, self;
	uint64_t seq;			/* first call: children print in call order */
	struct vnode *child, *sibling;
};

struct vframe {
	uint64_t ip, ts, child_ns;
	unsigned int depth;		/* the event's */
	struct vname *fn;
	struct vnode *node;		/* NULL: not under a graph root */
};

struct vthread {
	uint32_t sess, tid;
	struct vframe *st;
	unsigned int n, cap;
	uint64_t last_ts;
	struct vthread *next;
};

struct view {
	const struct usft_view_opts *o;
	struct usft_trace *t;
	struct vname **names;
	size_t nnames, nbnames;
	struct vsite **sites;
	size_t nsites, nbsites;
	struct vthread **threads;
	size_t nbthreads;
	struct vnode root;
	uint64_t seq;
	bool have_func, have_graph, nomem;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static bool rehash(void ***tab, size_t *nb, size_t n, size_t next_off,
		   uint64_t (*key)(const void *))
{
	size_t nnb = *nb ? *nb * 2 : 1024;
	void **nt;

	if (n < *nb)
		return true;
	nt = calloc(nnb, sizeof(*nt));
	if (!nt)
		return false;
	for (size_t i = 0; i < *nb; i++) {
		void *p = (*tab)[i];

		while (p) {
			void **link = (void **)((char *)p + next_off), *nx = *link;
			size_t h = (size_t)key(p) & (nnb - 1);

			*link = nt[h];
			nt[h] = p;
			p = nx;
		}
	}
	free(*tab);
	*tab = nt;
	*nb = nnb;
	return true;
}

static uint64_t vname_key(const void *p)
{
	return hash_str(((const struct vname *)p)->name);
}

static struct vname *intern(struct view *v, const char *name)
{
	struct vname *f;
	size_t h;

	if (!rehash((void ***)&v->names, &v->nbnames, v->nnames, offsetof(struct vname, next),
		    vname_key))
		return NULL;
	h = (size_t)hash_str(name) & (v->nbnames - 1);
	for (f = v->names[h]; f; f = f->next)
		if (!strcmp(f->name, name))
			return f;
	f = calloc(1, sizeof(*f));
	if (!f || !(f->name = strdup(name))) {
		free(f);
		return NULL;
	}
	f->min = UINT64_MAX;
	f->next = v->names[h];
	v->names[h] = f;
	v->nnames++;
	return f;
}

static uint64_t site_hash(uint64_t ip, uint32_t sess, uint16_t epoch)
{
	return ((ip * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)sess << 20) ^ epoch) >> 7;
}

static uint64_t vsite_key(const void *p)
{
	const struct vsite *s = p;

	return site_hash(s->ip, s->sess, s->epoch);
}

static struct vname *site_name(struct view *v, uint32_t sess, uint16_t epoch, uint64_t ip)
{
	struct vsite *s;
	const char *n;
	char buf[32];
	size_t h;

	if (!rehash((void ***)&v->sites, &v->nbsites, v->nsites, offsetof(struct vsite, next),
		    vsite_key))
		return NULL;
	h = (size_t)site_hash(ip, sess, epoch) & (v->nbsites - 1);
	for (s = v->sites[h]; s; s = s->next)
		if (s->ip == ip && s->sess == sess && s->epoch == epoch)
			return s->fn;
	n = usft_trace_sym(v->t, sess, epoch, ip, NULL);
	if (!n) {
		snprintf(buf, sizeof(buf), "0x%" PRIx64, ip);
		n = buf;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	*s = (struct vsite){ ip, sess, epoch, intern(v, n), v->sites[h] };
	if (!s->fn) {
		free(s);
		return NULL;
	}
	v->sites[h] = s;
	v->nsites++;
	return s->fn;
}

/* ---- selection ------------------------------------------------------------- */

/* @val in the comma list @list (NULL: every value) */
static bool in_list(const char *list, unsigned long val)
{
	const char *p = list;

	if (!list)
		return true;
	while (*p) {
		char *end;
		unsigned long n = strtoul(p, &end, 10);

		if (end == p)
			break;
		if (n == val)
			return true;
		p = *end == ',' ? end + 1 : end;
	}
	return false;
}

static bool list_ok(const char *list)
{
	const char *p = list;

	if (!list)
		return true;
	if (!*p)
		return false;
	while (*p) {
		char *end;

		if (*p < '0' || *p > '9')
			return false;
		strtoul(p, &end, 10);
		if (*end && *end != ',')
			return false;
		p = *end ? end + 1 : end;
		if (*end == ',' && !*p)
			return false;
	}
	return true;
}

struct select_lists {
	const char *pids, *tids;
};

static bool selected(const struct usft_trace *t, uint32_t sess, uint32_t tid, void *arg)
{
	const struct select_lists *l = arg;

	return in_list(l->pids, (unsigned long)t->sess[sess].pid) && in_list(l->tids, tid);
}

void usft_trace_select(struct usft_trace *t, const char *pids, const char *tids)
{
	struct select_lists l = { pids, tids };

	if (pids || tids)
		usft_trace_keep_threads(t, selected, &l);
}

/* ---- per-thread frames ------------------------------------------------------------ */

static uint64_t vthread_key(const void *p)
{
	const struct vthread *th = p;

	return ((th->tid * 0x9e3779b97f4a7c15ULL) ^ (th->sess * 0xc2b2ae3d27d4eb4fULL)) >> 17;
}

static struct vthread *thread_get(struct view *v, uint32_t sess, uint32_t tid)
{
	struct vthread key = { .sess = sess, .tid = tid }, *th;
	size_t h = (size_t)vthread_key(&key) & (v->nbthreads - 1);

	for (th = v->threads[h]; th; th = th->next)
		if (th->tid == tid && th->sess == sess)
			return th;
	th = calloc(1, sizeof(*th));
	if (!th)
		return NULL;
	*th = key;
	th->next = v->threads[h];
	v->threads[h] = th;
	return th;
}

static struct vnode *node_child(struct view *v, struct vnode *parent, struct vname *fn)
{
	struct vnode *c;

	for (c = parent->child; c; c = c->sibling)
		if (c->fn == fn)
			return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fn = fn;
	c->seq = v->seq++;
	c->sibling = parent->child;
	parent->child = c;
	return c;
}

static bool on_stack(const struct vthread *th, const struct vname *fn)
{
	for (unsigned int i = th->n; i-- > 0;)
		if (th->st[i].fn == fn)
			return true;
	return false;
}

static void push(struct view *v, struct vthread *th, const struct usft_revent *e)
{
	struct vframe *f, *up = th->n ? &th->st[th->n - 1] : NULL;
	struct vname *fn = site_name(v, e->sess, e->epoch, usft_rev_ip(e));

	if (!fn) {
		v->nomem = true;
		return;
	}
	if (th->n == th->cap) {
		unsigned int cap = th->cap ? th->cap * 2 : 32;
		void *p;

		if (cap > USFT_MAX_GRAPH_DEPTH * 4)
			return;		/* a hostile file: deeper than anything recorded */
		p = realloc(th->st, cap * sizeof(*th->st));
		if (!p) {
			v->nomem = true;
			return;
		}
		th->st = p;
		th->cap = cap;
	}
	f = &th->st[th->n];
	*f = (struct vframe){ .ip = usft_rev_ip(e), .ts = e->ts, .depth = usft_rev_depth(e),
			      .fn = fn };
	if (v->o->kind == USFT_VIEW_FOLDED)
		f->node = node_child(v, up ? up->node : &v->root, fn);
	else if (v->o->kind == USFT_VIEW_GRAPH) {
		if (up && up->node)
			f->node = node_child(v, up->node, fn);
		else if (usft_glob_match(v->o->graph_func, fn->name))
			f->node = node_child(v, &v->root, fn);
	}
	th->n++;
}

static void pop(struct view *v, struct vthread *th, uint64_t ts)
{
	struct vframe *f = &th->st[--th->n];
	uint64_t d = ts > f->ts ? ts - f->ts : 0;
	uint64_t self = d > f->child_ns ? d - f->child_ns : 0;
	struct vname *fn = f->fn;
	bool shown = d >= v->o->thresh_ns && (!v->o->max_depth || th->n < v->o->max_depth);

	if (!shown)
		return;		/* its time stays in its caller's self time */
	if (th->n)
		th->st[th->n - 1].child_ns += d;
	fn->calls++;
	fn->self += self;
	if (!on_stack(th, fn))
		fn->total += d;	/* the outermost of recursive calls */
	if (d < fn->min)
		fn->min = d;
	if (d > fn->max)
		fn->max = d;
	if (f->node) {
		f->node->calls++;
		f->node->total += d;
		f->node->self += self;
	}
}

static void feed(struct view *v, const struct usft_revent *e)
{
	unsigned int type = usft_rev_type(e);
	struct vthread *th;

	if (type == EV_LOST || type == EV_PAD)
		return;
	if (!in_list(v->o->pids, (unsigned long)v->t->sess[e->sess].pid) ||
	    !in_list(v->o->tids, e->tid))
		return;
	th = thread_get(v, e->sess, e->tid);
	if (!th) {
		v->nomem = true;
		return;
	}
	th->last_ts = e->ts;
	switch (type) {
	case EV_FUNC: {
		struct vname *fn = site_name(v, e->sess, e->epoch, usft_rev_ip(e));

		v->have_func = true;
		if (fn)
			fn->calls++;
		break;
	}
	case EV_GRAPH_ENT:
		v->have_graph = true;
		push(v, th, e);
		break;
	case EV_GRAPH_RET:
	case EV_GRAPH_GONE: {
		unsigned int k = th->n;

		while (k && (th->st[k - 1].ip != usft_rev_ip(e) ||
			     th->st[k - 1].depth != usft_rev_depth(e)))
			k--;
		if (!k)
			break;	/* its entry is not in the file */
		while (th->n >= k)
			pop(v, th, e->ts);
		break;
	}
	default:
		break;
	}
}

/*
 * The reader's events, each thread's in the order it wrote them.  The one
 * place the views meet the reader: a streaming reader hands them over here.
 */
static int feed_all(struct view *v)
{
	struct usft_trace_iter *it = usft_trace_iter_new(v->t);
	const struct usft_revent *e;
	int err;

	if (!it)
		return -ENOMEM;
	while (!v->nomem && (e = usft_trace_iter_next(it)))
		feed(v, e);
	err = usft_trace_iter_error(it);
	usft_trace_iter_free(it);
	if (err)
		return err;
	for (size_t h = 0; h < v->nbthreads; h++)
		for (struct vthread *th = v->threads[h]; th; th = th->next)
			while (th->n)
				pop(v, th, th->last_ts);
	return 0;
}

/* ---- printing ------------------------------------------------------------------- */

/* uftrace's time column: "  12.345 us" */
static void fmt_time(char *buf, size_t len, uint64_t ns)
{
	static const char *const unit[] = { "ns", "us", "ms", " s" };
	double x = (double)ns;
	unsigned int u = 0;

	while (x >= 1000.0 && u < 3) {
		x /= 1000.0;
		u++;
	}
	if (!u)
		snprintf(buf, len, "%7" PRIu64 " %s", ns, unit[0]);
	else
		snprintf(buf, len, "%7.3f %s", x, unit[u]);
}

enum sort_key { K_TOTAL, K_SELF, K_CALLS, K_AVG, K_MIN, K_MAX, K_FUNC, K_NONE };

static const struct { const char *name; enum sort_key key; } sort_keys[] = {
	{ "total", K_TOTAL }, { "self", K_SELF }, { "call", K_CALLS }, { "calls", K_CALLS },
	{ "avg", K_AVG }, { "min", K_MIN }, { "max", K_MAX }, { "func", K_FUNC },
	{ "function", K_FUNC }, { "name", K_FUNC },
};

static int parse_sort(const char *s, enum sort_key *keys, int max)
{
	int n = 0;

	if (!s)
		s = "total";
	while (*s) {
		size_t l = strcspn(s, ",");
		size_t i;

		for (i = 0; i < sizeof(sort_keys) / sizeof(sort_keys[0]); i++)
			if (strlen(sort_keys[i].name) == l && !strncmp(s, sort_keys[i].name, l))
				break;
		if (i == sizeof(sort_keys) / sizeof(sort_keys[0]) || n == max)
			return -1;
		keys[n++] = sort_keys[i].key;
		s += l;
		if (*s == ',' && !*++s)
			return -1;
	}
	return n ? n : -1;
}

const char *usft_view_check(const struct usft_view_opts *o)
{
	enum sort_key k[8];

	if (parse_sort(o->sort, k, 8) < 0)
		return "unknown sort key in -s (total, self, call, avg, min, max, func; "
		       "comma-separated)";
	if (!list_ok(o->tids))
		return "--tid takes thread ids: numbers separated by commas";
	if (!list_ok(o->pids))
		return "--pid takes process ids: numbers separated by commas";
	if (o->kind == USFT_VIEW_GRAPH && (!o->graph_func || !*o->graph_func))
		return "--graph takes a function name (or a glob)";
	return NULL;
}

static enum sort_key g_keys[8];
static int g_nkeys;

static uint64_t key_val(const struct vname *f, enum sort_key k)
{
	switch (k) {
	case K_TOTAL:
		return f->total;
	case K_SELF:
		return f->self;
	case K_CALLS:
		return f->calls;
	case K_AVG:
		return f->calls ? f->total / f->calls : 0;
	case K_MIN:
		return f->calls ? f->min : 0;
	case K_MAX:
		return f->max;
	default:
		return 0;
	}
}

static int vname_cmp(const void *a, const void *b)
{
	const struct vname *x = *(struct vname *const *)a, *y = *(struct vname *const *)b;

	for (int i = 0; i < g_nkeys; i++) {
		uint64_t p, q;

		if (g_keys[i] == K_FUNC) {
			int c = strcmp(x->name, y->name);

			if (c)
				return c;
			continue;
		}
		p = key_val(x, g_keys[i]);
		q = key_val(y, g_keys[i]);
		if (p != q)
			return p > q ? -1 : 1;
	}
	return strcmp(x->name, y->name);
}

static struct vname **sorted_names(struct view *v, size_t *n)
{
	struct vname **a = malloc((v->nnames + 1) * sizeof(*a));

	*n = 0;
	if (!a)
		return NULL;
	for (size_t h = 0; h < v->nbnames; h++)
		for (struct vname *f = v->names[h]; f; f = f->next)
			if (f->calls)
				a[(*n)++] = f;
	g_nkeys = parse_sort(v->o->sort, g_keys, 8);
	qsort(a, *n, sizeof(*a), vname_cmp);
	return a;
}

static void print_summary(FILE *out, struct view *v)
{
	size_t n;
	struct vname **a = sorted_names(v, &n);
	bool timed = v->have_graph;

	if (!a) {
		v->nomem = true;
		return;
	}
	if (!(v->o->flags & USFT_PRINT_NO_HEADER)) {
		if (timed)
			fprintf(out, "  Total time   Self time       Calls     Avg time     Min time"
				     "     Max time  Function\n"
				     "  ==========  ==========  ==========  ===========  ==========="
				     "  ===========  ====================\n");
		else
			fprintf(out, "       Calls  Function\n"
				     "  ==========  ====================\n");
	}
	for (size_t i = 0; i < n; i++) {
		const struct vname *f = a[i];
		char tt[24], st[24], av[24], mn[24], mx[24];

		if (!timed) {
			fprintf(out, "  %10" PRIu64 "  %s\n", f->calls, f->name);
			continue;
		}
		fmt_time(tt, sizeof(tt), f->total);
		fmt_time(st, sizeof(st), f->self);
		fmt_time(av, sizeof(av), f->calls ? f->total / f->calls : 0);
		fmt_time(mn, sizeof(mn), f->min);
		fmt_time(mx, sizeof(mx), f->max);
		fprintf(out, "  %s  %s  %10" PRIu64 "   %s   %s   %s  %s\n", tt, st, f->calls, av, mn,
			mx, f->name);
	}
	free(a);
}

/* the profile tracer's tables, merged by name, as a summary */
static void profile_summary(FILE *out, struct view *v)
{
	for (size_t si = 0; si < v->t->nsess; si++) {
		const struct usft_rsession *s = &v->t->sess[si];

		if (!in_list(v->o->pids, (unsigned long)s->pid))
			continue;
		for (size_t k = 0; k < s->nprof; k++) {
			const struct usft_rprof *p = &s->prof[k];
			char buf[32];
			struct vname *f;

			if (!p->name)
				snprintf(buf, sizeof(buf), "0x%" PRIx64, p->addr);
			f = intern(v, p->name ? p->name : buf);
			if (!f) {
				v->nomem = true;
				return;
			}
			f->calls += p->hits;
			f->total += p->time_ns;
		}
	}
	if (!(v->o->flags & USFT_PRINT_NO_HEADER))
		fprintf(out, "  Total time       Calls     Avg time  Function\n"
			     "  ==========  ==========  ===========  ====================\n");
	{
		size_t n;
		struct vname **a = sorted_names(v, &n);

		for (size_t i = 0; a && i < n; i++) {
			char tt[24], av[24];

			fmt_time(tt, sizeof(tt), a[i]->total);
			fmt_time(av, sizeof(av), a[i]->calls ? a[i]->total / a[i]->calls : 0);
			fprintf(out, "  %s  %10" PRIu64 "   %s  %s\n", tt, a[i]->calls, av, a[i]->name);
		}
		free(a);
	}
}

static int node_cmp(const void *a, const void *b)
{
	const struct vnode *x = *(struct vnode *const *)a, *y = *(struct vnode *const *)b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* children with calls, in the order they were first called */
static struct vnode **children(const struct vnode *n, size_t *cnt)
{
	struct vnode **a;
	size_t k = 0;

	for (const struct vnode *c = n->child; c; c = c->sibling)
		k += c->calls != 0;
	*cnt = k;
	a = malloc((k + 1) * sizeof(*a));
	if (!a)
		return NULL;
	k = 0;
	for (struct vnode *c = n->child; c; c = c->sibling)
		if (c->calls)
			a[k++] = c;
	qsort(a, k, sizeof(*a), node_cmp);
	return a;
}

/* uftrace graph's tree: " +-(calls) name" under "|" rails */
static void print_tree(FILE *out, const struct vnode *n, char *rail, size_t len, size_t cap)
{
	size_t cnt;
	struct vnode **c = children(n, &cnt);
	char tt[24];

	for (size_t i = 0; c && i < cnt; i++) {
		bool last = i + 1 == cnt;

		fmt_time(tt, sizeof(tt), c[i]->total);
		fprintf(out, "  %s : %.*s%s(%" PRIu64 ") %s\n", tt, (int)len, rail,
			cnt > 1 ? "+-" : "  ", c[i]->calls, c[i]->fn->name);
		if (len + 2 < cap) {
			memcpy(rail + len, cnt > 1 && !last ? "| " : "  ", 2);
			print_tree(out, c[i], rail, len + 2, cap);
		}
		if (cnt > 1 && !last)
			fprintf(out, "%12s : %.*s|\n", "", (int)len, rail);
	}
	free(c);
}

static void print_graph(FILE *out, struct view *v)
{
	size_t cnt;
	struct vnode **c = children(&v->root, &cnt);
	char rail[2 * USFT_MAX_GRAPH_DEPTH + 2];

	if (!(v->o->flags & USFT_PRINT_NO_HEADER))
		fprintf(out, "# Function Call Graph for '%s'\n", v->o->graph_func);
	for (size_t i = 0; c && i < cnt; i++) {
		char tt[24];

		fmt_time(tt, sizeof(tt), c[i]->total);
		fprintf(out, "%s========== FUNCTION CALL GRAPH ==========\n"
			     "# TOTAL TIME   FUNCTION\n", i ? "\n" : "");
		fprintf(out, "  %s : (%" PRIu64 ") %s\n", tt, c[i]->calls, c[i]->fn->name);
		print_tree(out, c[i], rail, 0, sizeof(rail) - 2);
	}
	if (!cnt)
		fprintf(out, "# no call of '%s' in the trace (usft report --summary lists the "
			     "functions it holds)\n", v->o->graph_func);
	free(c);
}

/* "a;b;c self" per node with self time, depth first */
static void print_folded(FILE *out, const struct vnode *n, char **path, size_t *cap, size_t len)
{
	size_t cnt;
	struct vnode **c = children(n, &cnt);

	for (size_t i = 0; c && i < cnt; i++) {
		size_t nl = strlen(c[i]->fn->name), add = nl + (len ? 1 : 0);

		if (len + add + 1 > *cap) {
			size_t ncap = (len + add + 1) * 2;
			char *p = realloc(*path, ncap);

			if (!p)
				break;
			*path = p;
			*cap = ncap;
		}
		if (len)
			(*path)[len] = ';';
		memcpy(*path + len + (len ? 1 : 0), c[i]->fn->name, nl);
		/* ';' and ' ' separate frames and the count: keep them out of names */
		for (size_t k = len + (len ? 1 : 0); k < len + add; k++)
			if ((*path)[k] == ';' || (*path)[k] == ' ' || (*path)[k] == '\n')
				(*path)[k] = '_';
		if (c[i]->self)
			fprintf(out, "%.*s %" PRIu64 "\n", (int)(len + add), *path, c[i]->self);
		print_folded(out, c[i], path, cap, len + add);
	}
	free(c);
}

static void free_nodes(struct vnode *n)
{
	while (n) {
		struct vnode *s = n->sibling;

		free_nodes(n->child);
		free(n);
		n = s;
	}
}

static void view_free(struct view *v)
{
	for (size_t h = 0; h < v->nbnames; h++)
		while (v->names[h]) {
			struct vname *n = v->names[h]->next;

			free(v->names[h]->name);
			free(v->names[h]);
			v->names[h] = n;
		}
	for (size_t h = 0; h < v->nbsites; h++)
		while (v->sites[h]) {
			struct vsite *n = v->sites[h]->next;

			free(v->sites[h]);
			v->sites[h] = n;
		}
	for (size_t h = 0; v->threads && h < v->nbthreads; h++)
		while (v->threads[h]) {
			struct vthread *n = v->threads[h]->next;

			free(v->threads[h]->st);
			free(v->threads[h]);
			v->threads[h] = n;
		}
	free(v->names);
	free(v->sites);
	free(v->threads);
	free_nodes(v->root.child);
}

int usft_print_view(FILE *out, struct usft_trace *t, const struct usft_view_opts *o,
		    const char **why)
{
	struct view v = { .o = o, .t = t, .nbthreads = 1024 };
	const char *tracer = usft_trace_tracer(t);
	int ret = 0;

	*why = NULL;
	if ((*why = usft_view_check(o)))
		return -EINVAL;
	if (!strcmp(tracer, "profile") && o->kind == USFT_VIEW_SUMMARY) {
		profile_summary(out, &v);
		goto done;
	}
	v.threads = calloc(v.nbthreads, sizeof(*v.threads));
	if (!v.threads)
		return -ENOMEM;
	ret = feed_all(&v);
	if (ret) {
		*why = ret == -ENOMEM ? NULL : "the file could not be read to its end (it "
		       "changed while being read, or a damaged chunk)";
		goto done;
	}
	if (o->kind != USFT_VIEW_SUMMARY && !v.have_graph && (v.have_func ||
	    strcmp(tracer, "function_graph"))) {
		*why = "this view needs call times: the trace was recorded with the "
		       "function tracer (or profile); record with -p function_graph";
		ret = -EINVAL;
		goto done;
	}
	if (o->kind == USFT_VIEW_SUMMARY) {
		print_summary(out, &v);
	} else if (o->kind == USFT_VIEW_GRAPH) {
		print_graph(out, &v);
	} else {
		char *path = NULL;
		size_t cap = 0;

		print_folded(out, &v.root, &path, &cap, 0);
		free(path);
	}
done:
	if (!ret && v.nomem)
		ret = -ENOMEM;
	view_free(&v);
	if (!ret && ferror(out))
		ret = -1;
	return ret;
}

/* ---- usft info ------------------------------------------------------------------ */

/* the value of @key in "key=value" lines, into @buf ("" when absent) */
static const char *kv(const char *text, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);

	buf[0] = 0;
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t ll = nl ? (size_t)(nl - p) : strlen(p);

		if (ll > kl && !strncmp(p, key, kl) && p[kl] == '=') {
			snprintf(buf, len, "%.*s", (int)(ll - kl - 1), p + kl + 1);
			return buf;
		}
		p = nl ? nl + 1 : NULL;
	}
	return buf;
}

struct info_sess {
	uint64_t first, last;
	size_t threads;
};

/* how the process ended: the recorder's EXIT chunk (the wait status it reaped) */
static void print_exit(FILE *out, const struct usft_rsession *s)
{
	if (s->exit_status)
		fprintf(out, "# exit status      : %s\n", s->exit_status);
	else
		fprintf(out, "# exit status      : %s\n", s->ended ?
			"not in this file (a process not reaped by usft record, or an older file)" :
			"unknown: the process did not finish the trace and no exit was recorded");
}

int usft_print_info(FILE *out, struct usft_trace *t, const char *path)
{
	struct info_sess *is = calloc(t->nsess + 1, sizeof(*is));
	struct view v = { .t = t, .nbthreads = 1024 };
	struct usft_trace_iter *it = NULL;
	const struct usft_revent *e;
	char buf[4096];

	v.threads = calloc(v.nbthreads, sizeof(*v.threads));
	if (is && v.threads)
		it = usft_trace_iter_new(t);
	if (!it) {
		free(is);
		free(v.threads);
		return -ENOMEM;
	}
	/* first and last event and the threads that wrote, per process (streamed) */
	while ((e = usft_trace_iter_next(it))) {
		struct info_sess *x = &is[e->sess];
		size_t h;
		struct vthread *th;

		if (usft_rev_type(e) == EV_LOST)
			continue;
		if (!x->first || e->ts < x->first)
			x->first = e->ts;
		if (e->ts > x->last)
			x->last = e->ts;
		h = (size_t)vthread_key(&(struct vthread){ .sess = e->sess, .tid = e->tid }) &
		    (v.nbthreads - 1);
		for (th = v.threads[h]; th; th = th->next)
			if (th->tid == e->tid && th->sess == e->sess)
				break;
		if (!th && (th = thread_get(&v, e->sess, e->tid)))
			x->threads++;
	}
	if (usft_trace_iter_error(it))
		fprintf(out, "# the file could not be read to its end: first and last events "
			     "below are of what was read\n");
	usft_trace_iter_free(it);
	fprintf(out, "# usft trace file  : %s\n", path);
	fprintf(out, "# tracer           : %s\n", usft_trace_tracer(t));
	fprintf(out, "# processes        : %zu\n", t->nsess);
	fprintf(out, "# events           : %" PRIu64 "\n", t->events);
	fprintf(out, "# lost             : %" PRIu64 "\n", t->lost);
	if (t->truncated)
		fprintf(out, "# the file ends inside a chunk (a process killed while writing, or a "
			     "full disk): what came before is shown\n");
	for (size_t si = 0; si < t->nsess; si++) {
		const struct usft_rsession *s = &t->sess[si];
		const struct info_sess *x = &is[si];
		char d[24];

		fprintf(out, "#\n# process          : %s-%d (parent %d)\n", s->comm ? s->comm : "?",
			s->pid, s->ppid);
		fprintf(out, "# program          : %s\n", s->exe ? s->exe : "");
		fprintf(out, "# command line     : %s\n", s->cmdline ? s->cmdline : "");
		fprintf(out, "# usft version     : %s\n", s->version ? s->version : "");
		fprintf(out, "# tracer           : %s\n", s->tracer ? s->tracer : "nop");
		fprintf(out, "# clock            : %s\n", s->clock ? s->clock : "");
		fprintf(out, "# cpus             : %d\n", s->nr_cpus);
		fprintf(out, "# buffer size      : %s bytes per thread\n",
			kv(s->text, "buffer_size", buf, sizeof(buf)));
		fprintf(out, "# filter (-l)      : %s\n", kv(s->text, "filter", buf, sizeof(buf)));
		fprintf(out, "# notrace (-n)     : %s\n", kv(s->text, "notrace", buf, sizeof(buf)));
		fprintf(out, "# graph funcs (-g) : %s\n", kv(s->text, "graph_funcs", buf, sizeof(buf)));
		if (*kv(s->text, "graph_notrace", buf, sizeof(buf)))
			fprintf(out, "# graph notrace -N : %s\n", buf);
		fprintf(out, "# max graph depth  : %s\n", kv(s->text, "max_depth", buf, sizeof(buf)));
		if (s->unmatched && *s->unmatched)
			fprintf(out, "# unmatched -l     : %s\n", s->unmatched);
		if (x->first) {
			fmt_time(d, sizeof(d), x->last - x->first);
			fprintf(out, "# first event      : %" PRIu64 ".%09" PRIu64 " (%s, seconds)\n",
				x->first / 1000000000, x->first % 1000000000,
				s->clock && *s->clock ? s->clock : "CLOCK_MONOTONIC");
			fprintf(out, "# last event       : %" PRIu64 ".%09" PRIu64 "\n",
				x->last / 1000000000, x->last % 1000000000);
			fprintf(out, "# duration         : %s\n", d);
		}
		fprintf(out, "# threads          : %zu with events, %zu named\n", x->threads,
			s->ntasks);
		for (size_t k = 0; k < s->ntasks; k++)
			fprintf(out, "#   %-8d %s\n", s->tasks[k].tid, s->tasks[k].comm);
		fprintf(out, "# events           : %" PRIu64 "\n", s->events);
		fprintf(out, "# lost             : %" PRIu64 "\n", s->lost);
		if (s->salvaged)
			fprintf(out, "# salvaged         : %" PRIu64 " events recovered by usft record "
				"from the rings after the process died\n", s->salvaged);
		if (s->nprof)
			fprintf(out, "# profiled functions: %zu\n", s->nprof);
		print_exit(out, s);
	}
	view_free(&v);
	free(is);
	return ferror(out) ? -1 : 0;
}
