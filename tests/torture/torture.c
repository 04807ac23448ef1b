// SPDX-License-Identifier: MIT
/*
 * Torture (the liburcu torture idea applied to text patching).  Caller
 * threads run through 256 traced functions (funcs.c) and check every
 * result, while churn threads do everything the public API allows:
 *
 *   ops      four ordinary ops (flags 0 / SAVE_REGS / RECURSION /
 *            SAVE_REGS_IF_SUPPORTED, one of them a heap ops freed after
 *            every unregister, one with notrace) and an IPMODIFY ops:
 *            register, unregister, filter changes while registered (ips,
 *            globs, add/remove one ip), notrace changes
 *   direct   register_ftrace_direct / modify_ftrace_direct(_nolock) /
 *            unregister_ftrace_direct of two direct ops (with an ops_func,
 *            so they share sites with the IPMODIFY ops), and the batch
 *            update_ftrace_direct_add/mod/del API on a third
 *   tramp    usft_tramp_attach/detach of fentry, fexit and fmod_ret links
 *            (fmod_ret returns 0, fexit checks the return value)
 *
 * and a scanner thread reads /proc/self/maps all the time.
 *
 * Exact counts.  Every ops has a sequence word that its churner makes odd
 * around each API call and the set of functions it selects while the word
 * is even.  A caller reads both before a call and the word again after it:
 * when the word did not move, the call ran entirely in one stable state and
 * the callback must have run exactly once (selected) or not at all.  Per
 * ops and thread, callbacks are checked against must <= hits <= must+maybe,
 * and a callback that runs in a stable state that does not select its
 * function (e.g. after its unregister returned) is an error at once.
 *
 * Quiescent points.  Every phase all threads pause; the main thread checks
 * every record's ref count, every site's bytes and one probe call of every
 * function against what the churners registered, and that no mapping is
 * writable and executable.  At the end everything is removed, the callers
 * run on, and the whole text segment must equal its snapshot taken after
 * usft_init() and the ELF file (bytes outside sites).
 *
 * USFT_TORTURE_SECONDS (default 6), USFT_TORTURE_SEED (default 1).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <link.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <usft/trampoline.h>
#include "core/internal.h"
#include "mem/execmem.h"
#include "torture.h"

#define NF TT_NR_FUNCS
#define NC 2			/* caller threads */
#define NT (NC + 1)		/* + the main thread's probe */
#define NOPS 5			/* ordinary ops 0..3 + IPMODIFY ops */
#define IPM 4
#define HEAP_OPS 2
#define NOTRACE_OPS 3
#define ND 2			/* register_ftrace_direct ops */
#define NK 3			/* link kinds */
#define TAG 0x5a5aUL
#define TAGGED(i) ((long)((TAG << 32) | ((unsigned long)(i) & 0xffffffUL)))

/* function regions: direct ops 0x00-0x1f (IPMODIFY 0x00-0x3f), batch 0x40-0x7f,
 * links 0x80-0x9f; ordinary ops select anywhere */
#define D_LO 0x00
#define IPM_HI 0x40
#define B_LO 0x40
#define B_HI 0x80
#define T_LO 0x80
#define T_HI 0xa0

extern const char tt_tramp_a[], tt_tramp_b[];
unsigned long tt_direct_hits_a, tt_direct_hits_b;	/* bumped by tramps.S */
#define TA ((unsigned long)tt_tramp_a)
#define TB ((unsigned long)tt_tramp_b)

static unsigned long sites[NF];
static char names[NF][8];
static unsigned seed0;

typedef struct { uint64_t w[NF / 64]; } fset;

static notrace bool fs_has(const fset *s, int f) { return s->w[f / 64] >> (f % 64) & 1; }
static notrace void fs_set(fset *s, int f, bool on)
{
	if (on)
		s->w[f / 64] |= 1ULL << (f % 64);
	else
		s->w[f / 64] &= ~(1ULL << (f % 64));
}

/* ---- errors ---------------------------------------------------------------- */

static atomic_long nr_errors;
static char first_error[256];
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;

static notrace void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static notrace void fail(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&err_lock);
	if (atomic_fetch_add(&nr_errors, 1) == 0) {
		va_start(ap, fmt);
		vsnprintf(first_error, sizeof(first_error), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&err_lock);
}

#define API(call)                                                              \
	do {                                                                   \
		int _r = (call);                                               \
		if (_r)                                                        \
			fail("%s = %d (seed %u)", #call, _r, seed0);           \
	} while (0)

/* ---- per-thread state seen by callbacks ----------------------------------- */

static __thread int t_idx = -1;		/* caller index, NC for main */
static __thread int t_f;		/* function being called */
static __thread unsigned long t_seq[NOPS];
static __thread bool t_bit[NOPS];

/* ---- ordinary ops --------------------------------------------------------- */

struct tops {
	struct ftrace_ops sops;		/* storage of the static ones */
	struct ftrace_ops *ops;		/* the current ops */
	_Atomic unsigned long seq;	/* odd: an API call on this ops is in flight */
	_Atomic uint64_t sel[NF / 64];	/* selected functions (valid while seq even) */
	atomic_int live;		/* 1 from before register to after unregister */
	atomic_int save_regs;		/* registered with SAVE_REGS */
	bool registered;		/* churner-private from here */
	fset filter, ntrace;
	unsigned long attr;
	atomic_long hits[NT], must[NT], maybe[NT];
	atomic_long dead, unexpected, bad_ip, bad_arg, bad_regs, bad_thread;
};
static struct tops T[NOPS];

static notrace void tops_cb(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			    struct ftrace_regs *fregs)
{
	struct tops *t = op->private;
	int idx = t_idx, o = (int)(t - T);
	unsigned long s;

	if (idx < 0) {
		atomic_fetch_add(&t->bad_thread, 1);
		return;
	}
	if (!atomic_load(&t->live))
		atomic_fetch_add(&t->dead, 1);
	if (ip != sites[t_f])
		atomic_fetch_add(&t->bad_ip, 1);
	if ((unsigned long)ftrace_regs_get_argument(fregs, 0) >> 32 != TAG)
		atomic_fetch_add(&t->bad_arg, 1);
	if (atomic_load(&t->save_regs)) {
		struct pt_regs *regs = ftrace_get_regs(fregs);

		if (!regs || regs->ip != ip + TC_SITE_SIZE)
			atomic_fetch_add(&t->bad_regs, 1);
	}
	s = atomic_load(&t->seq);
	if (s == t_seq[o] && !(s & 1) && !t_bit[o])
		atomic_fetch_add(&t->unexpected, 1);
	atomic_fetch_add_explicit(&t->hits[idx], 1, memory_order_relaxed);
}

/* ---- direct ops -------------------------------------------------------------- */

static notrace int share_ok(struct ftrace_ops *op, unsigned long ip, enum ftrace_ops_cmd cmd)
{
	return 0;	/* share with the IPMODIFY ops; the direct call stays */
}

struct tdirect {
	struct ftrace_ops ops;
	bool registered;
	unsigned long addr;
	fset funcs;
};
static struct tdirect DR[ND];
static struct ftrace_ops batch_ops;
static unsigned long batch_tgt[NF];	/* 0 / TA / TB */

/* ---- trampoline links ---------------------------------------------------------- */

static const enum usft_tramp_kind kinds[NK] = { USFT_TRAMP_FENTRY, USFT_TRAMP_FEXIT,
						USFT_TRAMP_FMODRET };
static struct usft_tramp_link *links[NF][NK];
static atomic_int link_live[NF][NK];
static atomic_long link_hits[NF][NK];
static atomic_long link_dead, link_bad;

static notrace unsigned long link_prog(const unsigned long *ctx, void *cookie)
{
	long c = (long)cookie;
	int f = (int)(c >> 2), k = (int)(c & 3);

	if (!atomic_load(&link_live[f][k]))
		atomic_fetch_add(&link_dead, 1);
	if (ctx[0] >> 32 != TAG)
		atomic_fetch_add(&link_bad, 1);
	if (k == 1 && (long)ctx[1] != tt_expect(f, (long)ctx[0]))
		atomic_fetch_add(&link_bad, 1);
	if (k == 2 && ctx[1] != 0)
		atomic_fetch_add(&link_bad, 1);
	atomic_fetch_add_explicit(&link_hits[f][k], 1, memory_order_relaxed);
	return 0;
}

/* ---- threads, pauses --------------------------------------------------------------- */

static atomic_int stop_callers, stop_churn, pause_req, nr_paused;
static atomic_long calls_total, steps_total;

static notrace void pause_point(void)
{
	if (!atomic_load(&pause_req))
		return;
	atomic_fetch_add(&nr_paused, 1);
	while (atomic_load(&pause_req))
		usleep(200);
	atomic_fetch_sub(&nr_paused, 1);
}

static notrace unsigned rnd(unsigned *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static notrace void *caller(void *arg)
{
	int idx = (int)(long)arg;
	unsigned r = seed0 * 7919u + (unsigned)idx + 1;

	t_idx = idx;
	for (unsigned long i = 0; !atomic_load(&stop_callers); i++) {
		int f = (int)(rnd(&r) % NF);
		long x = TAGGED(i), res;

		pause_point();
		for (int o = 0; o < NOPS; o++) {
			t_seq[o] = atomic_load(&T[o].seq);
			t_bit[o] = atomic_load(&T[o].sel[f / 64]) >> (f % 64) & 1;
		}
		t_f = f;
		res = tt_funcs[f](x);
		if (res != tt_expect(f, x))
			fail("tt_f%02x(%#lx) = %#lx, expected %#lx", f, x, res, tt_expect(f, x));
		for (int o = 0; o < NOPS; o++) {
			unsigned long s = atomic_load(&T[o].seq);

			if (s == t_seq[o] && !(s & 1)) {
				if (t_bit[o])
					atomic_fetch_add_explicit(&T[o].must[idx], 1,
								  memory_order_relaxed);
			} else {
				atomic_fetch_add_explicit(&T[o].maybe[idx], 1, memory_order_relaxed);
			}
		}
		atomic_fetch_add_explicit(&calls_total, 1, memory_order_relaxed);
	}
	return NULL;
}

/* ---- ops churn ------------------------------------------------------------------------ */

static void tops_begin(struct tops *t)
{
	atomic_fetch_add(&t->seq, 1);	/* odd */
}

static void tops_end(struct tops *t)
{
	fset sel = { 0 };

	if (t->registered)
		for (int f = 0; f < NF; f++)
			fs_set(&sel, f, fs_has(&t->filter, f) && !fs_has(&t->ntrace, f));
	for (int i = 0; i < NF / 64; i++)
		atomic_store(&t->sel[i], sel.w[i]);
	atomic_fetch_add(&t->seq, 1);	/* even */
}

static void glob_set(fset *s, const char *pat, int lo, int hi)
{
	memset(s, 0, sizeof(*s));
	for (int f = lo; f < hi; f++)
		if (!fnmatch(pat, names[f], 0))
			fs_set(s, f, true);
}

/* a new random filter for ops @o (reset) */
static void new_filter(struct tops *t, int o, unsigned *r)
{
	int lo = 0, hi = o == IPM ? IPM_HI : NF;
	char pat[32];

	switch (rnd(r) % 3) {
	case 0: {	/* ips */
		unsigned long ips[8];
		unsigned n = 1 + rnd(r) % 8;

		memset(&t->filter, 0, sizeof(t->filter));
		for (unsigned i = 0; i < n; i++) {
			int f = lo + (int)(rnd(r) % (unsigned)(hi - lo));

			ips[i] = sites[f];
			fs_set(&t->filter, f, true);
		}
		API(ftrace_set_filter_ips(t->ops, ips, n, 0, 1));
		return;
	}
	case 1:		/* one row of 16 */
		snprintf(pat, sizeof(pat), "tt_f%x*", (unsigned)(lo + rnd(r) % (unsigned)(hi - lo)) >> 4);
		break;
	default:	/* a column of 16 (ordinary) or a bracket range */
		if (o == IPM)
			snprintf(pat, sizeof(pat), "tt_f[0-3][%x-f]", rnd(r) % 16);
		else
			snprintf(pat, sizeof(pat), "tt_f*%x", rnd(r) % 16);
		break;
	}
	glob_set(&t->filter, pat, lo, hi);
	API(tc_set_filter(t->ops, pat, 1));
}

static void new_notrace(struct tops *t, unsigned *r)
{
	static const char *const pats[] = { "tt_f*[02468ace]", "tt_f1*", "tt_f[4-9]?", NULL };
	const char *p = pats[rnd(r) % 4];

	if (p) {
		glob_set(&t->ntrace, p, 0, NF);
		API(tc_set_notrace(t->ops, p, 1));
	} else {
		memset(&t->ntrace, 0, sizeof(t->ntrace));
		API(ftrace_set_notrace(t->ops, NULL, 0, 1));
	}
}

static const unsigned long attr_choices[] = {
	0, FTRACE_OPS_FL_SAVE_REGS, FTRACE_OPS_FL_RECURSION,
	FTRACE_OPS_FL_SAVE_REGS_IF_SUPPORTED | FTRACE_OPS_FL_RECURSION,
};

static void ops_register(int o, unsigned *r)
{
	struct tops *t = &T[o];

	if (o == HEAP_OPS) {
		t->ops = calloc(1, sizeof(*t->ops));
		if (!t->ops) {
			fail("calloc");
			return;
		}
		t->ops->func = tops_cb;
		t->ops->private = t;
	}
	t->attr = o == IPM ? FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_SAVE_REGS
			   : attr_choices[rnd(r) % TC_ARRAY_SIZE(attr_choices)];
	tc_ops_set_attr(t->ops, t->attr);
	atomic_store(&t->save_regs, !!(t->attr & FTRACE_OPS_FL_SAVE_REGS));
	new_filter(t, o, r);
	if (o == NOTRACE_OPS || o == HEAP_OPS)
		new_notrace(t, r);
	tops_begin(t);
	atomic_store(&t->live, 1);
	API(register_ftrace_function(t->ops));
	t->registered = true;
	tops_end(t);
}

/*
 * The heap ops is poisoned and freed once unregister_ftrace_function()
 * returned: its grace period is the only order between this and the
 * callers' last reads of the ops, and TSan cannot see it (tests/tsan.supp
 * names this function).  A caller that still read it would see the poison.
 */
static __attribute__((noinline)) void heap_ops_free(struct ftrace_ops *ops)
{
	memset(ops, 0x5b, sizeof(*ops));
	free(ops);
}

static void ops_unregister(int o)
{
	struct tops *t = &T[o];

	tops_begin(t);
	API(unregister_ftrace_function(t->ops));
	atomic_store(&t->live, 0);
	t->registered = false;
	tops_end(t);
	if (o == HEAP_OPS) {
		/* no callback may run any more: poison and free it */
		ftrace_free_filter(t->ops);
		heap_ops_free(t->ops);
		t->ops = NULL;
		memset(&t->ntrace, 0, sizeof(t->ntrace));
	}
}

static void ops_step(unsigned *r)
{
	int o = (int)(rnd(r) % NOPS);
	struct tops *t = &T[o];

	if (!t->registered) {
		ops_register(o, r);
		return;
	}
	tops_begin(t);
	switch (rnd(r) % 6) {
	case 0:
	case 1:
		tops_end(t);
		ops_unregister(o);
		return;
	case 2:
		new_filter(t, o, r);
		break;
	case 3:
		if (o == NOTRACE_OPS || o == HEAP_OPS)
			new_notrace(t, r);
		else
			new_filter(t, o, r);
		break;
	case 4: {	/* add one ip */
		int f = (int)(rnd(r) % (o == IPM ? IPM_HI : NF));

		API(ftrace_set_filter_ip(t->ops, sites[f], 0, 0));
		fs_set(&t->filter, f, true);
		break;
	}
	default: {	/* remove one ip that is there, never the last */
		int n = 0, f, pick;

		for (f = 0; f < NF; f++)
			n += fs_has(&t->filter, f);
		if (n < 2)
			break;
		pick = (int)(rnd(r) % (unsigned)n);
		for (f = 0; f < NF; f++)
			if (fs_has(&t->filter, f) && pick-- == 0)
				break;
		API(ftrace_set_filter_ip(t->ops, sites[f], 1, 0));
		fs_set(&t->filter, f, false);
		break;
	}
	}
	tops_end(t);
}

/* ---- direct churn ---------------------------------------------------------------------------- */

static unsigned long other(unsigned long a)
{
	return a == TA ? TB : TA;
}

static void direct_step(unsigned *r)
{
	int d = (int)(rnd(r) % ND);
	struct tdirect *x = &DR[d];

	if (!x->registered) {
		unsigned long ips[3];
		unsigned n = 1 + rnd(r) % 3;

		memset(&x->funcs, 0, sizeof(x->funcs));
		for (unsigned i = 0; i < n; i++) {
			int f = D_LO + d * 16 + (int)(rnd(r) % 16);

			ips[i] = sites[f];
			fs_set(&x->funcs, f, true);
		}
		API(ftrace_set_filter_ips(&x->ops, ips, n, 0, 1));
		x->addr = rnd(r) % 2 ? TA : TB;
		API(register_ftrace_direct(&x->ops, x->addr));
		x->registered = true;
		return;
	}
	switch (rnd(r) % 4) {
	case 0:
		API(modify_ftrace_direct(&x->ops, other(x->addr)));
		x->addr = other(x->addr);
		break;
	case 1:
		API(modify_ftrace_direct_nolock(&x->ops, other(x->addr)));
		x->addr = other(x->addr);
		break;
	default:
		API(unregister_ftrace_direct(&x->ops, x->addr, rnd(r) % 2));
		x->registered = false;
		break;
	}
}

static void batch_step(unsigned *r)
{
	struct ftrace_hash *h = alloc_ftrace_hash(3);
	int kind = (int)(rnd(r) % 3), n = 1 + (int)(rnd(r) % 4), done = 0;
	unsigned long newt[NF] = { 0 };

	if (!h) {
		fail("alloc_ftrace_hash");
		return;
	}
	for (int tries = 0; tries < 16 && done < n; tries++) {
		int f = B_LO + (int)(rnd(r) % (B_HI - B_LO));

		if (newt[f] || (kind == 0) != !batch_tgt[f])
			continue;
		newt[f] = kind == 0 ? (rnd(r) % 2 ? TA : TB) : kind == 1 ? other(batch_tgt[f])
									: batch_tgt[f];
		add_ftrace_hash_entry_direct(h, sites[f], newt[f]);
		done++;
	}
	if (done) {
		if (kind == 0)
			API(update_ftrace_direct_add(&batch_ops, h));
		else if (kind == 1)
			API(update_ftrace_direct_mod(&batch_ops, h, true));
		else
			API(update_ftrace_direct_del(&batch_ops, h));
		for (int f = B_LO; f < B_HI; f++)
			if (newt[f])
				batch_tgt[f] = kind == 2 ? 0 : newt[f];
	}
	free_ftrace_hash(h);
}

/* USFT_TORTURE_NO_LINKS=1: no trampoline links (to tell link bugs from others) */
static bool no_links;

static void link_step(unsigned *r)
{
	int f = T_LO + (int)(rnd(r) % (T_HI - T_LO)), k = (int)(rnd(r) % NK);

	if (no_links) {
		usleep(1000);
		return;
	}

	if (!links[f][k]) {
		struct usft_tramp_opts o = { .sz = sizeof(o), .nr_args = 1 };

		atomic_store(&link_live[f][k], 1);
		links[f][k] = usft_tramp_attach((void *)tt_funcs[f], kinds[k], link_prog,
						(void *)(long)(f << 2 | k), &o);
		if (!links[f][k]) {
			fail("usft_tramp_attach(tt_f%02x, %d): errno %d", f, k, errno);
			atomic_store(&link_live[f][k], 0);
		}
	} else {
		API(usft_tramp_detach(links[f][k]));
		links[f][k] = NULL;
		atomic_store(&link_live[f][k], 0);
	}
}

struct churner {
	void (*step)(unsigned *r);
	void (*step2)(unsigned *r);
	int idx;
};

static void *churn(void *arg)
{
	struct churner *c = arg;
	unsigned r = seed0 * 104729u + (unsigned)c->idx * 31u + 7u;

	while (!atomic_load(&stop_churn)) {
		pause_point();
		if (!c->step2 || rnd(&r) % 2)
			c->step(&r);
		else
			c->step2(&r);
		atomic_fetch_add_explicit(&steps_total, 1, memory_order_relaxed);
	}
	return NULL;
}

/* ---- W+X ------------------------------------------------------------------------------------- */

struct wx { unsigned long lo, hi; bool anon; };
static struct wx wx_seen[64];
static int wx_n;
static pthread_mutex_t wx_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_long wx_scans, wx_hits;
static atomic_int stop_scan;
static char exe_path[512];

/* every writable+executable mapping now into @out (up to @max); return the count */
static notrace int scan_wx(struct wx *out, int max)
{
	char buf[1 << 16];
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), n = 0;
	size_t len = 0;
	ssize_t k;
	char *line, *save = NULL;

	if (fd < 0)
		return -1;
	while (len < sizeof(buf) - 1 && (k = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)k;
	close(fd);
	buf[len] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long lo, hi;
		char perms[8], path[512] = "";

		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %511s", &lo, &hi, perms, path) < 3)
			continue;
		if (perms[1] != 'w' || perms[2] != 'x')
			continue;
		if (n < max) {
			out[n].lo = lo;
			out[n].hi = hi;
			out[n].anon = !path[0];
			if (path[0] && strcmp(path, exe_path))
				out[n].anon = false, out[n].lo = out[n].hi = 0;	/* foreign file */
		}
		n++;
	}
	return n;
}

static void *scanner(void *arg)
{
	struct wx w[16];

	while (!atomic_load(&stop_scan)) {
		int n = scan_wx(w, 16);

		atomic_fetch_add(&wx_scans, 1);
		pthread_mutex_lock(&wx_lock);
		for (int i = 0; i < n && i < 16; i++) {
			atomic_fetch_add(&wx_hits, 1);
			if (wx_n < (int)TC_ARRAY_SIZE(wx_seen))
				wx_seen[wx_n++] = w[i];
		}
		pthread_mutex_unlock(&wx_lock);
	}
	return NULL;
}

/* ---- text of the executable ---------------------------------------------------------------------- */

static unsigned long text_lo, text_hi, text_off;
static unsigned char *text_snap;

static int find_text(struct dl_phdr_info *info, size_t size, void *data)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];

		if (p->p_type == PT_LOAD && (p->p_flags & PF_X)) {
			text_lo = info->dlpi_addr + p->p_vaddr;
			text_hi = text_lo + p->p_filesz;
			text_off = p->p_offset;
			return 1;
		}
	}
	return 1;	/* the first object is the executable */
}

/* inside any site of the executable (the tracees and, e.g., a sanitizer's
 * module constructor in funcs.c) */
static bool in_site(unsigned long a)
{
	for (unsigned long w = a - (TC_SITE_SIZE - 1); w <= a; w++)
		if (ftrace_location(w) == w)
			return true;
	return false;
}

/* the text equals its snapshot, and the ELF file outside the sites */
static void check_text(void)
{
	unsigned char *file = malloc(text_hi - text_lo);
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t k;

	cr_assert(file && fd >= 0);
	while (got < text_hi - text_lo &&
	       (k = pread(fd, file + got, text_hi - text_lo - got, (off_t)(text_off + got))) > 0)
		got += (size_t)k;
	close(fd);
	cr_assert_eq(got, text_hi - text_lo);
	for (unsigned long a = text_lo; a < text_hi; a++) {
		unsigned char m = *(volatile unsigned char *)a;

		cr_assert_eq(m, text_snap[a - text_lo],
			     "text byte at %#lx is %02x, was %02x after usft_init (seed %u)", a, m,
			     text_snap[a - text_lo], seed0);
		if (!in_site(a))
			cr_assert_eq(m, file[a - text_lo],
				     "text byte at %#lx is %02x, the ELF file has %02x", a, m,
				     file[a - text_lo]);
	}
	free(file);
}

/* ---- quiescent checks --------------------------------------------------------------------------------- */

static void check_wx_seen(void)
{
	pthread_mutex_lock(&wx_lock);
	for (int i = 0; i < wx_n; i++) {
		const struct wx *w = &wx_seen[i];

		cr_assert(w->hi > w->lo, "a writable+executable mapping of a foreign file");
		if (w->anon)
			cr_assert(usft_execmem_contains(w->lo),
				  "anonymous W+X mapping %#lx-%#lx that is no trampoline window",
				  w->lo, w->hi);
		else
			cr_assert(w->lo >= (text_lo & ~4095UL) && w->hi <= ((text_hi + 4095) & ~4095UL),
				  "W+X mapping %#lx-%#lx of the executable outside its text",
				  w->lo, w->hi);
	}
	wx_n = 0;
	pthread_mutex_unlock(&wx_lock);
}

static int expected_refs(int f, bool *direct)
{
	int n = 0;

	for (int o = 0; o < NOPS; o++)
		n += (int)(atomic_load(&T[o].sel[f / 64]) >> (f % 64) & 1);
	*direct = batch_tgt[f] != 0;
	for (int d = 0; d < ND; d++)
		*direct |= DR[d].registered && fs_has(&DR[d].funcs, f);
	for (int k = 0; k < NK; k++)
		*direct |= links[f][k] != NULL;
	return n + *direct;
}

/* every thread paused: records, bytes and one probe call per function */
static void quiescent_check(const char *when)
{
	struct wx w[4];

	t_idx = NC;
	for (int f = 0; f < NF; f++) {
		struct dyn_ftrace *rec = lookup_rec(sites[f], sites[f]);
		unsigned char b[TC_SITE_SIZE];
		long before[NOPS], lh[NK], r;
		unsigned long ha = __atomic_load_n(&tt_direct_hits_a, __ATOMIC_SEQ_CST);
		unsigned long hb = __atomic_load_n(&tt_direct_hits_b, __ATOMIC_SEQ_CST);
		unsigned long want_a = 0, want_b = 0;
		bool direct;
		int refs = expected_refs(f, &direct);

		cr_assert_not_null(rec);
		cr_assert_eq((int)ftrace_rec_count(rec), refs,
			     "%s: tt_f%02x ref count %lu, expected %d (seed %u)", when, f,
			     ftrace_rec_count(rec), refs, seed0);
		cr_assert_eq(!!(rec->flags & FTRACE_FL_DIRECT), direct, "%s: tt_f%02x DIRECT flag", when, f);
		cr_assert_eq(tc_read_site((const void *)tt_funcs[f], b), TC_SITE_SIZE);
		if (!refs)
			cr_assert(!memcmp(b, tc_nop5, TC_SITE_SIZE), "%s: tt_f%02x not a nop with no user", when, f);
		else
			cr_assert(b[0] == 0xe8 || b[0] == 0xe9, "%s: tt_f%02x: %02x with %d users", when, f,
				  b[0], refs);
		for (int o = 0; o < NOPS; o++) {
			t_seq[o] = atomic_load(&T[o].seq);
			t_bit[o] = atomic_load(&T[o].sel[f / 64]) >> (f % 64) & 1;
			before[o] = atomic_load(&T[o].hits[NC]);
		}
		for (int k = 0; k < NK; k++)
			lh[k] = atomic_load(&link_hits[f][k]);
		t_f = f;
		r = tt_funcs[f](TAGGED(f));
		cr_assert_eq(r, tt_expect(f, TAGGED(f)), "%s: probe of tt_f%02x", when, f);
		for (int o = 0; o < NOPS; o++)
			cr_assert_eq(atomic_load(&T[o].hits[NC]) - before[o], t_bit[o] ? 1 : 0,
				     "%s: ops %d ran %ld times for a probe of tt_f%02x (selected %d, seed %u)",
				     when, o, atomic_load(&T[o].hits[NC]) - before[o], f, t_bit[o], seed0);
		for (int k = 0; k < NK; k++)
			cr_assert_eq(atomic_load(&link_hits[f][k]) - lh[k], links[f][k] ? 1 : 0,
				     "%s: link %d of tt_f%02x", when, k, f);
		for (int d = 0; d < ND; d++)
			if (DR[d].registered && fs_has(&DR[d].funcs, f))
				*(DR[d].addr == TA ? &want_a : &want_b) += 1;
		if (batch_tgt[f])
			*(batch_tgt[f] == TA ? &want_a : &want_b) += 1;
		cr_assert_eq(__atomic_load_n(&tt_direct_hits_a, __ATOMIC_SEQ_CST) - ha, want_a,
			     "%s: direct trampoline a for tt_f%02x", when, f);
		cr_assert_eq(__atomic_load_n(&tt_direct_hits_b, __ATOMIC_SEQ_CST) - hb, want_b,
			     "%s: direct trampoline b for tt_f%02x", when, f);
	}
	cr_assert_eq(scan_wx(w, 4), 0, "%s: a writable+executable mapping with no update running",
		     when);
	check_wx_seen();
	cr_assert_eq(tc_stat().disabled, 0, "%s: the runtime killed itself", when);
}

static void pause_all(int nthreads)
{
	atomic_store(&pause_req, 1);
	while (atomic_load(&nr_paused) < nthreads)
		usleep(200);
}

static void resume_all(void)
{
	atomic_store(&pause_req, 0);
}

/* ---- the test ------------------------------------------------------------------------------------------- */

static double env_double(const char *name, double def)
{
	const char *s = getenv(name);

	return s && *s ? atof(s) : def;
}

static void setup(void)
{
	ssize_t n;

	seed0 = (unsigned)env_double("USFT_TORTURE_SEED", 1);
	no_links = env_double("USFT_TORTURE_NO_LINKS", 0) != 0;
	if (!seed0)
		seed0 = 1;
	cr_assert_eq(usft_init(), 0);
	n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
	cr_assert_gt(n, 0);
	exe_path[n] = 0;
	for (int f = 0; f < NF; f++) {
		snprintf(names[f], sizeof(names[f]), "tt_f%02x", f);
		sites[f] = tc_site((const void *)tt_funcs[f]);
		cr_assert_neq(sites[f], 0, "tt_f%02x has no site", f);
		cr_assert_eq(usft_lookup_name(names[f]), (unsigned long)tt_funcs[f], "%s", names[f]);
		cr_assert(tc_is_nop5((const void *)tt_funcs[f]));
	}
	dl_iterate_phdr(find_text, NULL);
	cr_assert(text_lo && text_hi > text_lo);
	cr_assert(sites[0] >= text_lo && sites[0] < text_hi);
	text_snap = malloc(text_hi - text_lo);
	cr_assert_not_null(text_snap);
	memcpy(text_snap, (const void *)text_lo, text_hi - text_lo);
	for (int o = 0; o < NOPS; o++) {
		T[o].ops = &T[o].sops;
		T[o].sops.func = tops_cb;
		T[o].sops.private = &T[o];
	}
	for (int d = 0; d < ND; d++)
		DR[d].ops.ops_func = share_ok;
}

static void cleanup_all(void)
{
	for (int o = 0; o < NOPS; o++)
		if (T[o].registered)
			ops_unregister(o);
	for (int d = 0; d < ND; d++)
		if (DR[d].registered) {
			API(unregister_ftrace_direct(&DR[d].ops, DR[d].addr, true));
			DR[d].registered = false;
		}
	{
		struct ftrace_hash *h = alloc_ftrace_hash(4);
		bool any = false;

		cr_assert_not_null(h);
		for (int f = B_LO; f < B_HI; f++)
			if (batch_tgt[f]) {
				add_ftrace_hash_entry_direct(h, sites[f], batch_tgt[f]);
				batch_tgt[f] = 0;
				any = true;
			}
		if (any)
			API(update_ftrace_direct_del(&batch_ops, h));
		free_ftrace_hash(h);
	}
	for (int f = T_LO; f < T_HI; f++)
		for (int k = 0; k < NK; k++)
			if (links[f][k]) {
				API(usft_tramp_detach(links[f][k]));
				links[f][k] = NULL;
				atomic_store(&link_live[f][k], 0);
			}
}

Test(torture, callers_churn_scanner, .timeout = 3600)
{
	static struct churner ch[3] = {
		{ .step = ops_step, .idx = 0 },
		{ .step = direct_step, .step2 = batch_step, .idx = 1 },
		{ .step = link_step, .idx = 2 },
	};
	pthread_t callers[NC], churners[3], scan;
	double secs = env_double("USFT_TORTURE_SECONDS", 6), end, next;
	int phases = 0;
	long maybe_total = 0, must_total = 0;

	setup();
	cr_log_info("torture: seed %u, %.1f s, options: %s", seed0, secs,
		    getenv("USFT_OPTIONS") ? getenv("USFT_OPTIONS") : "(defaults)");
	cr_assert_eq(pthread_create(&scan, NULL, scanner, NULL), 0);
	for (long i = 0; i < NC; i++)
		cr_assert_eq(pthread_create(&callers[i], NULL, caller, (void *)i), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pthread_create(&churners[i], NULL, churn, &ch[i]), 0);

	end = tc_now() + secs;
	next = tc_now() + 0.4;
	while (tc_now() < end && !atomic_load(&nr_errors)) {
		usleep(20000);
		if (tc_now() < next)
			continue;
		pause_all(NC + 3);
		quiescent_check("pause");
		phases++;
		resume_all();
		next = tc_now() + 0.4;
	}

	atomic_store(&stop_churn, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(churners[i], NULL);
	cr_assert_eq(atomic_load(&nr_errors), 0, "%s", first_error);

	/* remove everything while the callers keep calling */
	cleanup_all();
	{
		long c0 = atomic_load(&calls_total);

		while (atomic_load(&calls_total) < c0 + 20000)
			usleep(1000);
	}
	pause_all(NC);
	quiescent_check("end");
	resume_all();
	atomic_store(&stop_callers, 1);
	for (int i = 0; i < NC; i++)
		pthread_join(callers[i], NULL);
	atomic_store(&stop_scan, 1);
	pthread_join(scan, NULL);

	cr_assert_eq(atomic_load(&nr_errors), 0, "%s", first_error);
	for (int o = 0; o < NOPS; o++) {
		struct tops *t = &T[o];

		cr_assert_eq(atomic_load(&t->dead), 0, "ops %d: callback after unregister returned", o);
		cr_assert_eq(atomic_load(&t->unexpected), 0,
			     "ops %d: %ld callbacks in a stable state that does not select the function",
			     o, atomic_load(&t->unexpected));
		cr_assert_eq(atomic_load(&t->bad_ip) + atomic_load(&t->bad_arg) +
			     atomic_load(&t->bad_regs) + atomic_load(&t->bad_thread), 0,
			     "ops %d: bad ip %ld / arg %ld / regs %ld / thread %ld", o,
			     atomic_load(&t->bad_ip), atomic_load(&t->bad_arg),
			     atomic_load(&t->bad_regs), atomic_load(&t->bad_thread));
		for (int i = 0; i < NC; i++) {
			long h = atomic_load(&t->hits[i]), m = atomic_load(&t->must[i]),
			     y = atomic_load(&t->maybe[i]);

			cr_assert(h >= m && h <= m + y,
				  "ops %d thread %d: %ld callbacks, %ld calls had to run it and %ld "
				  "raced with an update (seed %u)", o, i, h, m, y, seed0);
			must_total += m;
			maybe_total += y;
		}
	}
	cr_assert_eq(atomic_load(&link_dead), 0, "a link's program ran after its detach returned");
	cr_assert_eq(atomic_load(&link_bad), 0, "a link's program saw a wrong argument or return");
	check_text();
	cr_assert_eq(tc_stat().nr_enabled, 0);
	cr_assert_eq(tc_stat().disabled, 0);
	cr_log_info("torture: seed %u: %ld calls, %ld churn steps, %d quiescent checks, "
		    "%ld exact / %ld racing call-ops pairs, %ld maps scans (%ld W+X sightings "
		    "during updates)", seed0, atomic_load(&calls_total), atomic_load(&steps_total),
		    phases, must_total, maybe_total, atomic_load(&wx_scans), atomic_load(&wx_hits));
	free(text_snap);
}
