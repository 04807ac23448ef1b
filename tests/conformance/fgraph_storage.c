// SPDX-License-Identifier: MIT
/*
 * Per-frame storage of the function graph hook: fgraph_reserve_data() in
 * the entry callback, fgraph_retrieve_data() / fgraph_retrieve_parent_data()
 * later (kernel/trace/fgraph.c).  The storage cases check what the
 * kernel's boot-time test_graph_storage_single() (1, 2, 4 and 8 bytes) and
 * test_graph_storage_multi() (two fgraph_ops storing on the same function
 * at once) check in kernel/trace/trace_selftest.c.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <usft/fgraph.h>
#include "test_common.h"

TRACEE long cf_fgs_leaf(long x)
{
	TRACEE_BODY();
	return x + 1;
}

TRACEE long cf_fgs_parent(long x)
{
	long r = cf_fgs_leaf(x) * 2;

	TRACEE_BODY();
	return r;
}

/* one fgraph_ops storing @size bytes of @value at entry and checking them at return */
struct store_fixture {
	struct fgraph_ops gops;
	int size;
	uint64_t value;
	int entries, returns;
	char err[128];
};

static notrace void store_bytes(void *p, int size, uint64_t v)
{
	switch (size) {
	case 1: *(uint8_t *)p = (uint8_t)v; break;
	case 2: *(uint16_t *)p = (uint16_t)v; break;
	case 4: *(uint32_t *)p = (uint32_t)v; break;
	default: *(uint64_t *)p = v; break;
	}
}

static notrace uint64_t load_bytes(const void *p, int size)
{
	switch (size) {
	case 1: return *(const uint8_t *)p;
	case 2: return *(const uint16_t *)p;
	case 4: return *(const uint32_t *)p;
	default: return *(const uint64_t *)p;
	}
}

static notrace uint64_t truncate_to(uint64_t v, int size)
{
	return size >= 8 ? v : v & ((1ULL << (size * 8)) - 1);
}

static notrace int store_entry(struct ftrace_graph_ent *trace, struct fgraph_ops *gops,
			       struct ftrace_regs *fregs)
{
	struct store_fixture *fx = container_of(gops, struct store_fixture, gops);
	void *p = fgraph_reserve_data(gops->idx, fx->size);

	fx->entries++;
	if (!p) {
		snprintf(fx->err, sizeof(fx->err), "reserving %d bytes failed", fx->size);
		return 0;
	}
	store_bytes(p, fx->size, fx->value);
	if (fgraph_reserve_data(gops->idx, fx->size))
		snprintf(fx->err, sizeof(fx->err), "a second reserve in one entry succeeded");
	return 1;
}

static notrace void store_return(struct ftrace_graph_ret *trace, struct fgraph_ops *gops,
				 struct ftrace_regs *fregs)
{
	struct store_fixture *fx = container_of(gops, struct store_fixture, gops);
	int size = -1;
	void *p = fgraph_retrieve_data(gops->idx, &size);

	fx->returns++;
	if (!p) {
		snprintf(fx->err, sizeof(fx->err), "retrieving %d bytes failed", fx->size);
		return;
	}
	if (size < fx->size) {
		snprintf(fx->err, sizeof(fx->err), "retrieved size %d < stored %d", size, fx->size);
		return;
	}
	if (load_bytes(p, fx->size) != truncate_to(fx->value, fx->size))
		snprintf(fx->err, sizeof(fx->err), "retrieved %#llx, stored %#llx",
			 (unsigned long long)load_bytes(p, fx->size),
			 (unsigned long long)truncate_to(fx->value, fx->size));
}

static void fixture_init(struct store_fixture *fx, int size, uint64_t value)
{
	memset(fx, 0, sizeof(*fx));
	fx->size = size;
	fx->value = value;
	fx->gops.entryfunc = store_entry;
	fx->gops.retfunc = store_return;
	cr_assert_eq(tc_set_filter(&fx->gops.ops, "cf_fgs_leaf", 1), 0);
}

static void fixture_check(struct store_fixture *fx, int calls)
{
	cr_assert_str_empty(fx->err, "%d bytes: %s", fx->size, fx->err);
	cr_assert_eq(fx->entries, calls, "%d bytes: %d entries", fx->size, fx->entries);
	cr_assert_eq(fx->returns, calls, "%d bytes: %d returns", fx->size, fx->returns);
}

Test(fgraph_storage, single_1_2_4_8_bytes)
{
	static struct store_fixture fx;
	static const int sizes[] = { 1, 2, 4, 8 };

	for (size_t i = 0; i < TC_ARRAY_SIZE(sizes); i++) {
		fixture_init(&fx, sizes[i], 0x8877665544332211ULL + i);
		cr_assert_eq(register_ftrace_graph(&fx.gops), 0);
		cr_assert_eq(cf_fgs_leaf(1), 2);
		cr_assert_eq(cf_fgs_parent(2), 6);
		unregister_ftrace_graph(&fx.gops);
		fixture_check(&fx, 2);
	}
}

Test(fgraph_storage, multi_two_ops_on_one_function)
{
	static struct store_fixture a, b;

	fixture_init(&a, 8, 0x0102030405060708ULL);
	fixture_init(&b, 4, 0xa1b2c3d4ULL);
	cr_assert_eq(register_ftrace_graph(&a.gops), 0);
	cr_assert_eq(register_ftrace_graph(&b.gops), 0);
	cr_assert_neq(a.gops.idx, b.gops.idx);
	cr_assert_eq(cf_fgs_leaf(1), 2);
	cr_assert_eq(cf_fgs_parent(1), 4);
	unregister_ftrace_graph(&b.gops);
	unregister_ftrace_graph(&a.gops);
	fixture_check(&a, 2);
	fixture_check(&b, 2);
}

/* the largest block, and sizes that are refused */
static int big_ok, big_bad;

static notrace int big_entry(struct ftrace_graph_ent *trace, struct fgraph_ops *gops,
			     struct ftrace_regs *fregs)
{
	unsigned char *p;

	if (fgraph_reserve_data(gops->idx, 0) || fgraph_reserve_data(gops->idx, -1) ||
	    fgraph_reserve_data(gops->idx, (int)FGRAPH_MAX_DATA_SIZE + 1) ||
	    fgraph_reserve_data(gops->idx + 1, 8))
		big_bad++;
	p = fgraph_reserve_data(gops->idx, (int)FGRAPH_MAX_DATA_SIZE);
	if (!p)
		return 0;
	memset(p, 0x5a, FGRAPH_MAX_DATA_SIZE);
	return 1;
}

static notrace void big_return(struct ftrace_graph_ret *trace, struct fgraph_ops *gops,
			       struct ftrace_regs *fregs)
{
	int size = 0;
	unsigned char *p = fgraph_retrieve_data(gops->idx, &size);

	if (p && size == (int)FGRAPH_MAX_DATA_SIZE && p[0] == 0x5a &&
	    p[FGRAPH_MAX_DATA_SIZE - 1] == 0x5a)
		big_ok++;
	if (fgraph_reserve_data(gops->idx, 8))
		big_bad++;	/* not from a return callback */
}

Test(fgraph_storage, size_limits_and_context)
{
	static struct fgraph_ops g = { .entryfunc = big_entry, .retfunc = big_return };

	cr_assert_null(fgraph_reserve_data(0, 8), "reserve outside a callback");
	cr_assert_null(fgraph_retrieve_data(0, NULL), "retrieve outside a callback");
	cr_assert_eq(tc_set_filter(&g.ops, "cf_fgs_leaf", 1), 0);
	cr_assert_eq(register_ftrace_graph(&g), 0);
	cf_fgs_leaf(1);
	unregister_ftrace_graph(&g);
	cr_assert_eq(big_bad, 0);
	cr_assert_eq(big_ok, 1);
}

/*
 * Parent data: the parent's entry stores its argument; the leaf's return
 * reads it at depth 1 (and its own at depth 0).  A frame whose entry
 * returned 0 keeps nothing: the next frame pushed does not see stale data.
 */
static long seen_parent, seen_self, seen_missing;

static notrace int nest_entry(struct ftrace_graph_ent *trace, struct fgraph_ops *gops,
			      struct ftrace_regs *fregs)
{
	long *p = fgraph_reserve_data(gops->idx, sizeof(long));

	if (!p)
		return 0;
	*p = (long)ftrace_regs_get_argument(fregs, 0);
	return *p != 99;	/* 99: drop the frame and its data */
}

static notrace void nest_return(struct ftrace_graph_ret *trace, struct fgraph_ops *gops,
				struct ftrace_regs *fregs)
{
	long *self = fgraph_retrieve_data(gops->idx, NULL);
	long *parent = fgraph_retrieve_parent_data(gops->idx, NULL, 1);

	if (trace->func != tc_site(cf_fgs_leaf))
		return;
	seen_self = self ? *self : -1;
	seen_parent = parent ? *parent : -1;
	if (fgraph_retrieve_parent_data(gops->idx, NULL, trace->depth + 1) ||
	    fgraph_retrieve_parent_data(gops->idx, NULL, -1))
		seen_missing++;
}

Test(fgraph_storage, parent_data_and_dropped_frames)
{
	static struct fgraph_ops g = { .entryfunc = nest_entry, .retfunc = nest_return };

	cr_assert_eq(tc_set_filter(&g.ops, "cf_fgs_leaf cf_fgs_parent", 1), 0);
	cr_assert_eq(register_ftrace_graph(&g), 0);
	cf_fgs_parent(7);	/* parent stores 7, leaf stores 7 too */
	cr_assert_eq(seen_self, 7);
	cr_assert_eq(seen_parent, 7);
	cf_fgs_parent(99);	/* parent's frame dropped: the leaf (arg 99) too */
	cr_assert_eq(seen_self, 7, "a dropped frame's return callback ran");
	seen_self = seen_parent = 0;
	cf_fgs_leaf(5);		/* no hooked parent: depth 1 has nothing */
	cr_assert_eq(seen_self, 5);
	cr_assert_eq(seen_parent, -1);
	cr_assert_eq(seen_missing, 0);
	unregister_ftrace_graph(&g);
}
