// SPDX-License-Identifier: MIT
/*
 * Model-based API testing.  A small reference model of the kernel's
 * accounting (which ops select which site, the per-site count, the
 * DIRECT/TRAMP/ENABLED record state, what a probe call runs) is driven
 * alongside the runtime through long seeded random sequences of register /
 * unregister / filter / notrace changes / batch direct add, mod, del /
 * trampoline attach and detach.  After every step the record flags, the
 * site bytes and the callback counts of a probe call of every function must
 * equal the model's.  A failing seed is replayed in fresh processes and
 * shrunk (steps removed while it still fails) before it is reported.
 *
 *   USFT_MODEL_SEQS (default 40) sequences of USFT_MODEL_STEPS (default 60)
 *   USFT_MODEL_SEED fixes the first seed (default 1)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <usft/trampoline.h>
#include "core/internal.h"
#include "test_common.h"

#define NF 6		/* functions */
#define NO 3		/* ordinary ops */

TRACEE long md_f0(long x) { TRACEE_BODY(); return x + 10; }
TRACEE long md_f1(long x) { TRACEE_BODY(); return x + 11; }
TRACEE long md_f2(long x) { TRACEE_BODY(); return x + 12; }
TRACEE long md_f3(long x) { TRACEE_BODY(); return x + 13; }
TRACEE long md_f4(long x) { TRACEE_BODY(); return x + 14; }
TRACEE long md_f5(long x) { TRACEE_BODY(); return x + 15; }
static const tc_fn_t fns[NF] = { md_f0, md_f1, md_f2, md_f3, md_f4, md_f5 };
static unsigned long sites[NF];

extern const char model_tramp_a[], model_tramp_b[];
unsigned long model_hits_a, model_hits_b;	/* bumped by the asm trampolines */

/* ---- the runtime side ---------------------------------------------------- */
struct rops {
	struct ftrace_ops ops;
	unsigned long hits[NF];
};
static struct rops R[NO];
static struct ftrace_ops direct_ops;
static struct usft_tramp_link *links[NF];
static unsigned long prog_hits[NF];

static notrace void rcb(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			struct ftrace_regs *fregs)
{
	struct rops *r = container_of(op, struct rops, ops);

	for (int i = 0; i < NF; i++)
		if (sites[i] == ip)
			r->hits[i]++;
}

static notrace unsigned long prog(const unsigned long *ctx, void *cookie)
{
	prog_hits[(long)cookie]++;
	return 0;
}

/* ---- the model ------------------------------------------------------------ */
struct model {
	bool reg[NO];
	unsigned filter[NO];	/* bitmask of functions, never empty */
	unsigned ntrace[NO];
	unsigned long direct[NF];	/* 0 or the target */
	bool tramp[NF];
};

static bool selects(const struct model *m, int o, int f)
{
	return m->reg[o] && (m->filter[o] & (1u << f)) && !(m->ntrace[o] & (1u << f));
}

static int count(const struct model *m, int f)
{
	int n = 0;

	for (int o = 0; o < NO; o++)
		n += selects(m, o, f);
	return n + (m->direct[f] || m->tramp[f]);
}

/* ---- steps ---------------------------------------------------------------- */
enum { S_REG, S_UNREG, S_FILTER, S_NOTRACE, S_DADD, S_DMOD, S_DDEL, S_TATTACH, S_TDETACH, S_NKIND };

struct step {
	int kind, o, f;
	unsigned mask;
	int alt;
};

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static void gen(struct step *st, int n, unsigned seed)
{
	for (int i = 0; i < n; i++) {
		st[i].kind = rnd(&seed) % S_NKIND;
		st[i].o = rnd(&seed) % NO;
		st[i].f = rnd(&seed) % NF;
		st[i].mask = (rnd(&seed) % ((1u << NF) - 1)) + 1;
		st[i].alt = rnd(&seed) % 2;
	}
}

static int set_mask(struct ftrace_ops *ops, unsigned mask, bool filter)
{
	unsigned long ips[NF];
	unsigned n = 0;

	for (int f = 0; f < NF; f++)
		if (mask & (1u << f))
			ips[n++] = sites[f];
	if (filter)
		return ftrace_set_filter_ips(ops, ips, n, 0, 1);
	/* notrace has no _ips form: reset, then add one by one by name */
	{
		char buf[128] = "";

		for (int f = 0; f < NF; f++)
			if (mask & (1u << f))
				snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "md_f%d ", f);
		return ftrace_set_notrace(ops, (unsigned char *)(buf[0] ? buf : NULL), -1, 1);
	}
}

/* apply one step to runtime and model; returns a check failure code or 0 */
static int apply(struct model *m, const struct step *s)
{
	int r, want;
	struct ftrace_hash *h;

	switch (s->kind) {
	case S_REG:
		want = m->reg[s->o] ? -EBUSY : 0;
		r = register_ftrace_function(&R[s->o].ops);
		if (r != want)
			return 100 + s->kind;
		m->reg[s->o] = true;
		return 0;
	case S_UNREG:
		want = m->reg[s->o] ? 0 : -EBUSY;
		r = unregister_ftrace_function(&R[s->o].ops);
		if (r != want)
			return 100 + s->kind;
		m->reg[s->o] = false;
		return 0;
	case S_FILTER:
		if (set_mask(&R[s->o].ops, s->mask, true))
			return 100 + s->kind;
		m->filter[s->o] = s->mask;
		return 0;
	case S_NOTRACE:
		if (set_mask(&R[s->o].ops, s->alt ? s->mask : 0, false))
			return 100 + s->kind;
		m->ntrace[s->o] = s->alt ? s->mask : 0;
		return 0;
	case S_DADD: {
		unsigned long t = (unsigned long)(s->alt ? model_tramp_b : model_tramp_a);

		h = alloc_ftrace_hash(3);
		add_ftrace_hash_entry_direct(h, sites[s->f], t);
		want = m->direct[s->f] || m->tramp[s->f] ? -EINVAL : 0;
		r = update_ftrace_direct_add(&direct_ops, h);
		free_ftrace_hash(h);
		if (r != want)
			return 100 + s->kind;
		if (!r)
			m->direct[s->f] = t;
		return 0;
	}
	case S_DMOD: {
		unsigned long t = (unsigned long)(s->alt ? model_tramp_b : model_tramp_a);

		h = alloc_ftrace_hash(3);
		add_ftrace_hash_entry_direct(h, sites[s->f], t);
		want = m->direct[s->f] ? 0 : -EINVAL;
		r = update_ftrace_direct_mod(&direct_ops, h, true);
		free_ftrace_hash(h);
		if (r != want)
			return 100 + s->kind;
		if (!r)
			m->direct[s->f] = t;
		return 0;
	}
	case S_DDEL:
		h = alloc_ftrace_hash(3);
		add_ftrace_hash_entry_direct(h, sites[s->f], m->direct[s->f] ? m->direct[s->f] : 1);
		want = m->direct[s->f] ? 0 : -EINVAL;
		r = update_ftrace_direct_del(&direct_ops, h);
		free_ftrace_hash(h);
		if (r != want)
			return 100 + s->kind;
		m->direct[s->f] = 0;
		return 0;
	case S_TATTACH: {
		struct usft_tramp_opts o = { .sz = sizeof(o), .nr_args = 1 };

		if (m->tramp[s->f] || m->direct[s->f])
			return 0;	/* one link per function in this model */
		links[s->f] = usft_tramp_attach(fns[s->f], s->alt ? USFT_TRAMP_FEXIT : USFT_TRAMP_FENTRY,
						prog, (void *)(long)s->f, &o);
		if (!links[s->f])
			return 100 + s->kind;
		m->tramp[s->f] = true;
		return 0;
	}
	case S_TDETACH:
		if (!m->tramp[s->f])
			return 0;
		if (usft_tramp_detach(links[s->f]))
			return 100 + s->kind;
		links[s->f] = NULL;
		m->tramp[s->f] = false;
		return 0;
	}
	return 0;
}

/* after a step: record state, site bytes and a probe call of every function */
static int check(const struct model *m)
{
	for (int f = 0; f < NF; f++) {
		struct dyn_ftrace *rec = lookup_rec(sites[f], sites[f]);
		unsigned char b[5];
		unsigned long ha = model_hits_a, hb = model_hits_b, ph = prog_hits[f];
		unsigned long before[NO];
		int n = count(m, f);

		if (!rec)
			return 1;
		if ((int)ftrace_rec_count(rec) != n)
			return 2;
		if (!!(rec->flags & FTRACE_FL_ENABLED) != (n > 0))
			return 3;
		if (!!(rec->flags & FTRACE_FL_DIRECT) != !!(m->direct[f] || m->tramp[f]))
			return 4;
		usft_site_bytes(sites[f], b, 5);
		if (!n && memcmp(b, "\x0f\x1f\x44\x00\x00", 5))
			return 5;
		if (n && b[0] != 0xe8 && b[0] != 0xe9)
			return 6;
		if (n == 1 && m->direct[f]) {
			int rel;

			memcpy(&rel, b + 1, 4);
			if (b[0] != 0xe8 || sites[f] + 5 + (long)rel != m->direct[f]) {
				fprintf(stderr, "model: f%d site %02x target %#lx want %#lx flags %#lx\n",
					f, b[0], sites[f] + 5 + (long)rel, m->direct[f], rec->flags);
				return 7;	/* a lone direct ops: straight to its trampoline */
			}
		}
		for (int o = 0; o < NO; o++)
			before[o] = R[o].hits[f];
		if (fns[f](1) != 11 + f)
			return 8;
		for (int o = 0; o < NO; o++)
			if (R[o].hits[f] - before[o] != (selects(m, o, f) ? 1u : 0u))
				return 9;
		if ((model_hits_a - ha) != (m->direct[f] == (unsigned long)model_tramp_a) ||
		    (model_hits_b - hb) != (m->direct[f] == (unsigned long)model_tramp_b))
			return 10;
		if ((prog_hits[f] - ph) != (m->tramp[f] ? 1u : 0u))
			return 11;
	}
	return 0;
}

/* run steps[0..n) in this process; 0 ok, else (step << 8) | code */
static int run(const struct step *st, int n, const bool *skip)
{
	struct model m = { 0 };

	for (int o = 0; o < NO; o++) {
		memset(&R[o], 0, sizeof(R[o]));
		R[o].ops.func = rcb;
		m.filter[o] = 1u << o;
		if (ftrace_set_filter_ip(&R[o].ops, sites[o], 0, 1))
			return 0xff;
	}
	for (int i = 0; i < n; i++) {
		int r;

		if (skip && skip[i])
			continue;
		r = apply(&m, &st[i]);
		if (!r)
			r = check(&m);
		if (r)
			return ((i + 1) << 8) | r;
	}
	return 0;
}

static int run_forked(const struct step *st, int n, const bool *skip)
{
	pid_t pid = fork();
	int s;

	if (!pid) {
		int r = run(st, n, skip);

		_exit(r ? (r & 0xff) : 0);
	}
	if (waitpid(pid, &s, 0) != pid)
		return -1;
	if (WIFSIGNALED(s))
		return 200 + WTERMSIG(s);
	return WEXITSTATUS(s);
}

static void report(const struct step *st, int n, unsigned seed, int code)
{
	static const char *const names[] = { "register", "unregister", "filter", "notrace",
					     "direct_add", "direct_mod", "direct_del",
					     "tramp_attach", "tramp_detach" };
	bool skip[512] = { 0 };
	int kept = n;

	/* shrink: drop steps one at a time while the failure stays */
	for (int i = 0; i < n; i++) {
		skip[i] = true;
		if (run_forked(st, n, skip))
			kept--;
		else
			skip[i] = false;
	}
	fprintf(stderr, "model: seed %u failed (check %d); shrunk to %d steps:\n", seed, code, kept);
	for (int i = 0; i < n; i++)
		if (!skip[i])
			fprintf(stderr, "  %s ops=%d f=%d mask=%#x alt=%d\n", names[st[i].kind],
				st[i].o, st[i].f, st[i].mask, st[i].alt);
}

static int env_int(const char *name, int def)
{
	const char *s = getenv(name);

	return s ? atoi(s) : def;
}

Test(model, random_sequences_match_the_kernel_model, .timeout = 600)
{
	int seqs = env_int("USFT_MODEL_SEQS", 40), steps = env_int("USFT_MODEL_STEPS", 60);
	unsigned seed0 = (unsigned)env_int("USFT_MODEL_SEED", 1);
	static struct step st[512];

	cr_assert_eq(usft_init(), 0);
	for (int f = 0; f < NF; f++)
		cr_assert_neq(sites[f] = ftrace_location((unsigned long)fns[f]), 0);
	if (steps > 512)
		steps = 512;
	for (int q = 0; q < seqs; q++) {
		unsigned seed = seed0 + (unsigned)q;
		int r;

		gen(st, steps, seed);
		r = run_forked(st, steps, NULL);
		if (r)
			report(st, steps, seed, r);
		cr_assert_eq(r, 0, "seed %u: check %d failed (reproduce: USFT_MODEL_SEED=%u "
			     "USFT_MODEL_SEQS=1); the shrunk sequence is on stderr", seed, r, seed);
	}
	cr_log_info("model: %d sequences x %d steps from seed %u", seqs, steps, seed0);
}
