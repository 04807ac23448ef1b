// SPDX-License-Identifier: MIT
/*
 * core/fprobe.c - function entry/exit probes on the function graph hook
 * (kernel/trace/fprobe.c since it moved onto fgraph): one shared fgraph_ops
 * serves every fprobe; its filter is the union of their functions.  A
 * table of (site, fprobe) pairs, sorted by site, says which fprobes a
 * traced call belongs to; it is replaced copy-on-write under fprobe_mutex
 * and read by the callbacks inside their tasks-RCU reader sections.
 *
 * Per call, the entry callback reserves one block on the shadow stack
 * (fgraph_reserve_data()):
 *	word 0			the return address
 *	then per fprobe with an exit handler whose entry handler let it run:
 *	  fprobe pointer, data words n, n words of entry data
 * The exit callback runs the exit handler of each fprobe in the block that
 * is still in the table for this site (a probe unregistered meanwhile is
 * skipped, as the kernel's is_fprobe_still_exist()).
 */
#include <stdlib.h>
#include <string.h>
#include <usft/fgraph.h>
#include <usft/fprobe.h>
#include "core/internal.h"
#include "core/arch.h"

struct fprobe_site {
	unsigned long ip;
	struct fprobe *fp;
};

struct fprobe_table {
	size_t n;
	struct fprobe_site s[];
};

static struct fprobe_table *fprobe_table;	/* NULL: none */

/* fprobe::hlist_array: the sites of one registered fprobe */
struct fprobe_ips {
	size_t n;
	unsigned long ip[];
};
static pthread_mutex_t fprobe_mutex = PTHREAD_MUTEX_INITIALIZER;

static int fprobe_graph_entry(struct ftrace_graph_ent *trace, struct fgraph_ops *gops,
			      struct ftrace_regs *fregs);
static void fprobe_graph_return(struct ftrace_graph_ret *trace, struct fgraph_ops *gops,
				struct ftrace_regs *fregs);

static struct fgraph_ops fprobe_graph_ops = {
	.entryfunc = fprobe_graph_entry,
	.retfunc = fprobe_graph_return,
};
static bool fprobe_graph_active;

#define WORDS(bytes)	(((bytes) + sizeof(long) - 1) / sizeof(long))

/* first index of @ip in @t, or t->n */
static __always_inline size_t table_first(const struct fprobe_table *t, unsigned long ip)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->s[mid].ip < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool table_has(const struct fprobe_table *t, unsigned long ip, const struct fprobe *fp)
{
	for (size_t i = table_first(t, ip); i < t->n && t->s[i].ip == ip; i++)
		if (t->s[i].fp == fp)
			return true;
	return false;
}

static int fprobe_graph_entry(struct ftrace_graph_ent *trace, struct fgraph_ops *gops,
			      struct ftrace_regs *fregs)
{
	const struct fprobe_table *t = READ_ONCE(fprobe_table);
	unsigned long ip = trace->func, ret_ip, *slot, *data = NULL;
	size_t first, i, need = 1, at = 1;
	bool stored = false;

	if (!t)
		return 0;
	first = table_first(t, ip);
	if (first >= t->n || t->s[first].ip != ip)
		return 0;
	slot = arch_fgraph_ret_slot(fregs);
	ret_ip = ftrace_graph_ret_addr(NULL, NULL, READ_ONCE(*slot), slot);
	/* one block for every fprobe here that wants its exit */
	for (i = first; i < t->n && t->s[i].ip == ip; i++)
		if (t->s[i].fp->exit_handler)
			need += 2 + WORDS(t->s[i].fp->entry_data_size);
	if (need > 1) {
		size_t words = need;

		while (words > 1 && words * sizeof(long) > FGRAPH_MAX_DATA_SIZE)
			words--;	/* what fits; the rest count as missed */
		data = fgraph_reserve_data(gops->idx, (int)(words * sizeof(long)));
		need = data ? words : 0;
		if (data)
			data[0] = ret_ip;
	}
	for (i = first; i < t->n && t->s[i].ip == ip; i++) {
		struct fprobe *fp = t->s[i].fp;
		size_t n = WORDS(fp->entry_data_size);
		unsigned long *edata = NULL;
		bool want_exit = fp->exit_handler != NULL;

		if (fprobe_disabled(fp))
			continue;
		if (want_exit) {
			if (!data || at + 2 + n > need) {
				__atomic_fetch_add(&fp->nmissed, 1, __ATOMIC_RELAXED);
				continue;
			}
			edata = n ? &data[at + 2] : NULL;
		} else if (n) {
			/* entry-only with data: scratch words on this stack frame */
			unsigned long scratch[WORDS(FPROBE_DATA_SIZE_MAX)];

			if (fp->entry_handler)
				fp->entry_handler(fp, ip, ret_ip, fregs, scratch);
			continue;
		}
		if (fp->entry_handler && fp->entry_handler(fp, ip, ret_ip, fregs, edata))
			want_exit = false;
		if (want_exit) {
			data[at] = (unsigned long)fp;
			data[at + 1] = n;
			at += 2 + n;
			stored = true;
		}
	}
	/* the rest of the block, if any, reads as no fprobe */
	if (data && need - at >= 2) {
		data[at] = 0;
		data[at + 1] = need - at - 2;
	}
	return stored;
}

static void fprobe_graph_return(struct ftrace_graph_ret *trace, struct fgraph_ops *gops,
				struct ftrace_regs *fregs)
{
	const struct fprobe_table *t = READ_ONCE(fprobe_table);
	int size = 0;
	unsigned long *data = fgraph_retrieve_data(gops->idx, &size);
	size_t words, at = 1;

	if (!t || !data || !fregs)	/* fregs NULL: unwound, nothing returned */
		return;
	words = (size_t)size / sizeof(long);
	while (at + 2 <= words) {
		struct fprobe *fp = (struct fprobe *)data[at];
		size_t n = data[at + 1];

		if (fp && table_has(t, trace->func, fp) && !fprobe_disabled(fp))
			fp->exit_handler(fp, trace->func, data[0], fregs, n ? &data[at + 2] : NULL);
		at += 2 + n;
	}
}

/* ---- registration ------------------------------------------------------ */

static int cmp_site(const void *a, const void *b)
{
	const struct fprobe_site *x = a, *y = b;

	if (x->ip != y->ip)
		return x->ip < y->ip ? -1 : 1;
	return (x->fp > y->fp) - (x->fp < y->fp);
}

/* the current table plus @fp on @ips (@add) or minus every entry of @fp */
static struct fprobe_table *table_update(struct fprobe *fp, const unsigned long *ips, size_t n,
					 bool add)
{
	const struct fprobe_table *old = fprobe_table;
	size_t cnt = old ? old->n : 0, k = 0;
	struct fprobe_table *t = malloc(sizeof(*t) + (cnt + (add ? n : 0)) * sizeof(t->s[0]));

	if (!t)
		return NULL;
	for (size_t i = 0; i < cnt; i++)
		if (add || old->s[i].fp != fp)
			t->s[k++] = old->s[i];
	if (add)
		for (size_t i = 0; i < n; i++)
			t->s[k++] = (struct fprobe_site){ .ip = ips[i], .fp = fp };
	t->n = k;
	qsort(t->s, t->n, sizeof(t->s[0]), cmp_site);
	return t;
}

static void free_table(void *p)
{
	free(p);
}

static void publish(struct fprobe_table *t)
{
	struct fprobe_table *old = fprobe_table;

	smp_store_release(&fprobe_table, t && t->n ? t : NULL);
	if (t && !t->n)
		free(t);
	if (old)
		usft_call_rcu_tasks(free_table, old);
}

static bool ip_in_table(const struct fprobe_table *t, unsigned long ip)
{
	size_t i;

	if (!t)
		return false;
	i = table_first(t, ip);
	return i < t->n && t->s[i].ip == ip;
}

static int cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return (x > y) - (x < y);
}

USFT_API bool fprobe_is_registered(struct fprobe *fp)
{
	return fp && READ_ONCE(fp->hlist_array) != NULL;
}

/* @ips: sites, sorted, without duplicates; consumed */
static int fprobe_register_sites(struct fprobe *fp, unsigned long *ips, size_t n)
{
	struct fprobe_ips *own = NULL;
	struct fprobe_table *t;
	unsigned long *fresh;
	size_t nfresh = 0;
	int ret;

	pthread_mutex_lock(&fprobe_mutex);
	ret = -EBUSY;
	if (fprobe_is_registered(fp))
		goto out;
	ret = -ENOMEM;
	own = malloc(sizeof(*own) + n * sizeof(own->ip[0]));
	fresh = malloc(n * sizeof(*fresh));
	if (!fresh || !own) {
		free(fresh);
		goto out;
	}
	own->n = n;
	memcpy(own->ip, ips, n * sizeof(*ips));
	for (size_t i = 0; i < n; i++)
		if (!ip_in_table(fprobe_table, ips[i]))
			fresh[nfresh++] = ips[i];
	t = table_update(fp, ips, n, true);
	if (!t) {
		free(fresh);
		goto out;
	}
	/* the table first: a site patched below finds its fprobe at once */
	fp->nmissed = 0;
	publish(t);
	if (!fprobe_graph_active) {
		ret = ftrace_set_filter_ips(&fprobe_graph_ops.ops, fresh, (unsigned int)nfresh, 0, 1);
		if (!ret)
			ret = register_ftrace_graph(&fprobe_graph_ops);
		if (!ret)
			fprobe_graph_active = true;
	} else {
		ret = nfresh ? ftrace_set_filter_ips(&fprobe_graph_ops.ops, fresh,
						     (unsigned int)nfresh, 0, 0) : 0;
	}
	free(fresh);
	if (ret) {
		t = table_update(fp, NULL, 0, false);
		if (t)
			publish(t);
		goto out;
	}
	WRITE_ONCE(fp->hlist_array, (void *)own);
	own = NULL;
out:
	pthread_mutex_unlock(&fprobe_mutex);
	free(own);
	free(ips);
	return usft_err(ret);
}

static int fprobe_check(struct fprobe *fp)
{
	if (!fp)
		return -EINVAL;
	if (fp->entry_data_size > FPROBE_DATA_SIZE_MAX)
		return -E2BIG;
	return 0;
}

/* sort, drop duplicates */
static size_t unique_sites(unsigned long *ips, size_t n)
{
	size_t k = 0;

	qsort(ips, n, sizeof(*ips), cmp_ulong);
	for (size_t i = 0; i < n; i++)
		if (!k || ips[k - 1] != ips[i])
			ips[k++] = ips[i];
	return k;
}

USFT_API int register_fprobe_ips(struct fprobe *fp, unsigned long *addrs, int num)
{
	unsigned long *ips;
	int ret = fprobe_check(fp);

	if (ret)
		return usft_err(ret);
	if (!addrs || num <= 0)
		return usft_err(-EINVAL);
	ips = malloc((size_t)num * sizeof(*ips));
	if (!ips)
		return usft_err(-ENOMEM);
	for (int i = 0; i < num; i++) {
		ips[i] = ftrace_location(addrs[i]);
		if (!ips[i]) {
			free(ips);
			return usft_err(-ENOENT);
		}
	}
	return fprobe_register_sites(fp, ips, unique_sites(ips, (size_t)num));
}

USFT_API int register_fprobe_syms(struct fprobe *fp, const char **syms, int num)
{
	unsigned long *addrs;
	int ret = fprobe_check(fp);

	if (ret)
		return usft_err(ret);
	if (!syms || num <= 0)
		return usft_err(-EINVAL);
	addrs = malloc((size_t)num * sizeof(*addrs));
	if (!addrs)
		return usft_err(-ENOMEM);
	for (int i = 0; i < num; i++) {
		addrs[i] = syms[i] ? usft_lookup_name(syms[i]) : 0;
		if (!addrs[i]) {
			free(addrs);
			return usft_err(-ENOENT);
		}
	}
	ret = register_fprobe_ips(fp, addrs, num);
	free(addrs);
	return ret;
}

USFT_API int register_fprobe(struct fprobe *fp, const char *filter, const char *notfilter)
{
	unsigned long *ips, *out;
	size_t n, k = 0;
	int cnt, ret = fprobe_check(fp);

	if (ret)
		return usft_err(ret);
	if (!filter)
		return usft_err(-EINVAL);
	cnt = usft_match_sites(filter, -1, NULL, 0);
	if (cnt < 0)
		return usft_err(cnt == -EINVAL ? -ENOENT : cnt);
	if (!cnt)
		return usft_err(-ENOENT);
	n = (size_t)cnt;
	ips = malloc(n * sizeof(*ips));
	if (!ips)
		return usft_err(-ENOMEM);
	cnt = usft_match_sites(filter, -1, ips, n);
	if (cnt < 0) {
		free(ips);
		return usft_err(cnt);
	}
	n = (size_t)cnt < n ? (size_t)cnt : n;
	if (notfilter) {
		int nn = usft_match_sites(notfilter, -1, NULL, 0);
		unsigned long *not = nn > 0 ? malloc((size_t)nn * sizeof(*not)) : NULL;

		if (nn > 0 && !not) {
			free(ips);
			return usft_err(-ENOMEM);
		}
		if (not)
			nn = usft_match_sites(notfilter, -1, not, (size_t)nn);
		out = ips;
		for (size_t i = 0; i < n; i++)
			if (!not || nn <= 0 ||
			    !bsearch(&ips[i], not, (size_t)nn, sizeof(*not), cmp_ulong))
				out[k++] = ips[i];
		free(not);
		n = k;
	}
	if (!n) {
		free(ips);
		return usft_err(-ENOENT);
	}
	return fprobe_register_sites(fp, ips, unique_sites(ips, n));
}

USFT_API int unregister_fprobe(struct fprobe *fp)
{
	struct fprobe_ips *own;
	struct fprobe_table *t;
	int ret = -EINVAL;

	if (!fp)
		return usft_err(-EINVAL);
	pthread_mutex_lock(&fprobe_mutex);
	if (!fprobe_is_registered(fp))
		goto out;
	ret = -ENOMEM;
	t = table_update(fp, NULL, 0, false);
	if (!t)
		goto out;
	own = fp->hlist_array;
	publish(t);
	t = fprobe_table;
	if (!t) {
		unregister_ftrace_graph(&fprobe_graph_ops);
		fprobe_graph_active = false;
		ftrace_free_filter(&fprobe_graph_ops.ops);
	} else {
		/*
		 * Sites no other fprobe uses leave the shared filter (if this
		 * fails they stay: their calls find no fprobe and are not hooked).
		 */
		unsigned long *gone = malloc(own->n * sizeof(*gone));
		size_t k = 0;

		for (size_t i = 0; gone && i < own->n; i++)
			if (!ip_in_table(t, own->ip[i]))
				gone[k++] = own->ip[i];
		if (k)
			ftrace_set_filter_ips(&fprobe_graph_ops.ops, gone, (unsigned int)k, 1, 0);
		free(gone);
	}
	ret = 0;
	WRITE_ONCE(fp->hlist_array, NULL);
	free(own);
out:
	pthread_mutex_unlock(&fprobe_mutex);
	/* no handler of @fp runs after this (the callbacks are reader sections) */
	if (!ret)
		synchronize_rcu_tasks();
	return usft_err(ret);
}
