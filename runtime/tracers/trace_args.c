// SPDX-License-Identifier: MIT
/*
 * tracers/trace_args.c - argument and return values for function_graph
 * (`usft record -A 'FUNC@arg1,arg2' -R 'FUNC@retval'`, uftrace's syntax,
 * and --funcgraph-retval, the kernel's option): which functions, which
 * values and how to show them, resolved once at start from the functions'
 * DWARF (usft_func_arg_types()), and the callbacks' part: read the
 * registers into an EV_DATA payload (trace_args.h).
 *
 * A spec is "GLOB@VAL[,VAL]..." with VAL one of
 *   argN      the N-th declared parameter (1-based), its type from DWARF;
 *             without DWARF the N-th integer register, shown as a long
 *   fpargN    the N-th floating-point register, a double
 *   args      every declared parameter (DWARF)
 *   retval    the return value (its DWARF type; a long without DWARF)
 * and an optional /FMT: d (signed), u (unsigned), x (hex), s (string),
 * c (char), f (double), p (pointer).  Specs are separated by ';' in
 * USFT_ARGS / USFT_RETVAL.
 *
 * Strings are copied with strncpy_from_user_nofault() (core/nofault.c):
 * no system call, and a bad pointer is never a fault.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <usft/ftrace_regs.h>
#include <usft/uaccess.h>
#include <usft/usft.h>
#include "trace_args.h"
#include "tracer.h"

#define MAX_INT_REGS	6	/* arguments in registers the payload reads (x86-64 SysV; arm64 has 8) */
#define MAX_FP_REGS	8

struct argval {
	unsigned char code;	/* enum usft_val_code */
	unsigned char fp;	/* read from the floating-point registers */
	unsigned char reg;	/* index among its class's argument registers */
	unsigned char size;	/* bytes: sign or zero extension */
};

struct args_ent {
	unsigned long ip;
	unsigned char nargs;
	bool want_ret;
	struct argval a[USFT_MAX_VALS];
	struct argval ret;
};

struct args_tab {
	size_t n;
	struct args_ent e[];
};

/* published before the tracer registers; replaced tables are never freed */
static struct args_tab *args_tab;
bool usft_args_all_retval;		/* --funcgraph-retval */

static int cmp_ent(const void *a, const void *b)
{
	const struct args_ent *x = a, *y = b;

	return (x->ip > y->ip) - (x->ip < y->ip);
}

/* binary search; NULL: nothing recorded for @ip beyond function_graph's */
const struct args_ent *usft_args_find(unsigned long ip)
{
	const struct args_tab *t = __atomic_load_n(&args_tab, __ATOMIC_ACQUIRE);
	size_t lo = 0, hi;

	if (!t)
		return NULL;
	hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->e[mid].ip < ip)
			lo = mid + 1;
		else if (t->e[mid].ip > ip)
			hi = mid;
		else
			return &t->e[mid];
	}
	return NULL;
}

bool usft_args_any(void)
{
	return __atomic_load_n(&args_tab, __ATOMIC_RELAXED) || usft_args_all_retval;
}

bool usft_args_ent_has_args(const struct args_ent *e)
{
	return e && e->nargs;
}

bool usft_args_ent_has_ret(const struct args_ent *e)
{
	return e && e->want_ret;
}

/* ---- the callbacks' part ---------------------------------------------- */

static unsigned long reg_value(struct ftrace_regs *fregs, const struct argval *v, bool ret)
{
	if (ret)
		return v->fp ? usft_ftrace_regs_get_fp_argument(fregs, 0) :
			       ftrace_regs_get_return_value(fregs);
	return v->fp ? usft_ftrace_regs_get_fp_argument(fregs, v->reg) :
		       ftrace_regs_get_argument(fregs, v->reg);
}

static uint64_t extend(uint64_t v, const struct argval *a)
{
	unsigned int bits = a->size * 8u;

	if (!bits || bits >= 64)
		return v;
	if (a->code == USFT_VAL_SINT)
		return (uint64_t)((int64_t)(v << (64 - bits)) >> (64 - bits));
	return v & ((1ULL << bits) - 1);
}

/* at most USFT_STR_MAX bytes of the string at @p into @out: flags and length */
static uint64_t read_str(unsigned long p, uint64_t *out, unsigned int *words)
{
	char buf[USFT_STR_MAX + 1];
	unsigned int flags = 0;
	size_t len;
	long got;

	*words = 0;
	if (!p)
		return (uint64_t)USFT_STR_NULL << 32;
	/* no system call, no fault (core/nofault.c); errno kept */
	got = strncpy_from_user_nofault(buf, (const void *)p, sizeof(buf));
	if (got == -EFAULT) {
		len = strlen(buf);	/* what could be read before the bad page */
		if (!len)
			return (uint64_t)USFT_STR_BAD << 32;
		flags |= USFT_STR_CUT;
	} else if (got == (long)sizeof(buf)) {
		len = USFT_STR_MAX;	/* no NUL in the first USFT_STR_MAX bytes */
		flags |= USFT_STR_CUT;
	} else {
		len = got > 0 ? (size_t)got - 1 : 0;
	}
	memset((char *)out, 0, (len + 7) & ~(size_t)7);
	memcpy(out, buf, len);
	*words = (unsigned int)((len + 7) / 8);
	return (uint64_t)len | ((uint64_t)flags << 32);
}

/*
 * usft_args_encode() - the payload of @e's arguments (@ret false) or of
 * its return value into @out (room for USFT_ARGS_MAX_WORDS).  Return: the
 * payload words.
 */
unsigned int usft_args_encode(const struct args_ent *e, struct ftrace_regs *fregs, bool ret,
			      uint64_t *out)
{
	const struct argval *v = ret ? &e->ret : e->a;
	unsigned int nv = ret ? 1 : e->nargs, at = 1;
	uint64_t hdr = nv;

	for (unsigned int i = 0; i < nv; i++, v++) {
		uint64_t val = fregs ? reg_value(fregs, v, ret) : 0;

		hdr |= (uint64_t)v->code << (8 + 4 * i);
		out[at++] = extend(val, v);
		if (v->code == USFT_VAL_STR) {
			unsigned int words;

			out[at] = read_str((unsigned long)val, &out[at + 1], &words);
			at += 1 + words;
		}
	}
	out[0] = hdr;
	return at;
}

/* funcgraph-retval: the register as it is, shown as the kernel does */
unsigned int usft_args_encode_raw_ret(struct ftrace_regs *fregs, uint64_t *out)
{
	out[0] = 1 | ((uint64_t)USFT_VAL_ERRNO << 8);
	out[1] = fregs ? ftrace_regs_get_return_value(fregs) : 0;
	return 2;
}

/* ---- specs ------------------------------------------------------------- */

static int code_of_fmt(char f)
{
	switch (f) {
	case 'd': case 'i': return USFT_VAL_SINT;
	case 'u': return USFT_VAL_UINT;
	case 'x': return USFT_VAL_HEX;
	case 's': return USFT_VAL_STR;
	case 'c': return USFT_VAL_CHAR;
	case 'f': return USFT_VAL_DOUBLE;
	case 'p': return USFT_VAL_PTR;
	default: return -1;
	}
}

static int code_of_kind(const struct usft_arg_type *t)
{
	return t->kind >= USFT_ARG_SINT && t->kind <= USFT_ARG_UNSUPP ? t->kind : USFT_VAL_SINT;
}

/* what the function's DWARF says: per parameter its register; -1 past an unsupported one */
struct proto {
	int n;			/* parameters (DWARF), -1: no DWARF */
	struct usft_arg_type t[USFT_MAX_VALS];
	struct usft_arg_type ret;
	signed char reg[USFT_MAX_VALS];
	bool fp[USFT_MAX_VALS];
};

static void proto_of(unsigned long ip, struct proto *p)
{
	int ni = 0, nf = 0;
	bool lost = false;

	memset(p, 0, sizeof(*p));
	p->n = usft_func_arg_types(ip, p->t, USFT_MAX_VALS, &p->ret, NULL);
	if (p->n < 0) {
		p->n = -1;
		return;
	}
	if (p->n > USFT_MAX_VALS)
		p->n = USFT_MAX_VALS;
	for (int i = 0; i < p->n; i++) {
		bool fp = p->t[i].kind == USFT_ARG_FLOAT || p->t[i].kind == USFT_ARG_DOUBLE;

		/* a struct by value: where the ones after it are is not worked out */
		if (p->t[i].kind == USFT_ARG_UNSUPP)
			lost = true;
		p->fp[i] = fp;
		if (lost || (fp ? nf >= MAX_FP_REGS : ni >= MAX_INT_REGS))
			p->reg[i] = -1;
		else
			p->reg[i] = (signed char)(fp ? nf++ : ni++);
	}
}

struct spec_err {
	char *msg;
	size_t len;
};

static bool add_val(struct args_ent *e, struct argval v, bool ret)
{
	if (ret) {
		e->ret = v;
		e->want_ret = true;
		return true;
	}
	/* a later spec of the same argument (say "arg1/x" after "args") wins */
	for (unsigned int i = 0; i < e->nargs; i++)
		if (v.code != USFT_VAL_UNSUPP && e->a[i].code != USFT_VAL_UNSUPP &&
		    e->a[i].fp == v.fp && e->a[i].reg == v.reg) {
			e->a[i] = v;
			return true;
		}
	if (e->nargs >= USFT_MAX_VALS)
		return false;
	e->a[e->nargs++] = v;
	return true;
}

/* one VAL of a spec for function @ip; Return: 0 or -EINVAL with @why */
static int apply_val(struct args_ent *e, const struct proto *p, const char *val, char *why,
		     size_t wlen)
{
	char name[32];
	const char *slash = strchr(val, '/');
	size_t nl = slash ? (size_t)(slash - val) : strlen(val);
	int fmt = -1;
	unsigned long n = 0;
	struct argval v = { 0 };

	if (nl >= sizeof(name)) {
		snprintf(why, wlen, "'%s' is not argN, fpargN, args or retval", val);
		return -EINVAL;
	}
	memcpy(name, val, nl);
	name[nl] = 0;
	if (slash) {
		fmt = slash[1] && !slash[2] ? code_of_fmt(slash[1]) : -1;
		if (fmt < 0) {
			snprintf(why, wlen, "unknown format '%s' in '%s' (d, u, x, s, c, f, p)",
				 slash + 1, val);
			return -EINVAL;
		}
	}
	if (!strcmp(name, "retval")) {
		if (p->n >= 0 && p->ret.kind == USFT_ARG_NONE && fmt < 0)
			return 0;	/* void: nothing to show */
		v.code = (unsigned char)(fmt >= 0 ? fmt : p->n >= 0 ? code_of_kind(&p->ret) :
					 USFT_VAL_SINT);
		v.fp = p->n >= 0 && (p->ret.kind == USFT_ARG_FLOAT || p->ret.kind == USFT_ARG_DOUBLE);
		if (fmt == USFT_VAL_DOUBLE && p->n < 0)
			v.fp = 1;
		v.size = p->n >= 0 ? p->ret.size : 8;
		add_val(e, v, true);
		return 0;
	}
	if (!strcmp(name, "args")) {
		if (p->n < 0) {
			snprintf(why, wlen, "'args' needs the function's DWARF (build it with -g)");
			return -EINVAL;
		}
		for (int i = 0; i < p->n; i++) {
			v.code = (unsigned char)(p->reg[i] < 0 ? USFT_VAL_UNSUPP : fmt >= 0 ? fmt :
						 code_of_kind(&p->t[i]));
			v.fp = p->fp[i];
			v.reg = (unsigned char)(p->reg[i] < 0 ? 0 : p->reg[i]);
			v.size = p->t[i].size;
			if (!add_val(e, v, false))
				break;
		}
		return 0;
	}
	if (!strncmp(name, "fparg", 5) || !strncmp(name, "arg", 3)) {
		bool fparg = name[0] == 'f';
		const char *num = name + (fparg ? 5 : 3);
		char *end;

		n = strtoul(num, &end, 10);
		if (!isdigit((unsigned char)*num) || *end || n < 1 || n > USFT_MAX_VALS) {
			snprintf(why, wlen, "'%s': the argument number goes from 1 to %d", val,
				 USFT_MAX_VALS);
			return -EINVAL;
		}
		if (fparg) {
			if (n > MAX_FP_REGS) {
				snprintf(why, wlen, "'%s': only %d floating-point registers", val,
					 MAX_FP_REGS);
				return -EINVAL;
			}
			v.code = (unsigned char)(fmt >= 0 ? fmt : USFT_VAL_DOUBLE);
			v.fp = 1;
			v.reg = (unsigned char)(n - 1);
			v.size = 8;
		} else if (p->n >= 0) {
			if ((int)n > p->n) {
				snprintf(why, wlen, "'%s': the function takes %d argument%s", val, p->n,
					 p->n == 1 ? "" : "s");
				return -EINVAL;
			}
			v.code = (unsigned char)(p->reg[n - 1] < 0 ? USFT_VAL_UNSUPP :
						 fmt >= 0 ? fmt : code_of_kind(&p->t[n - 1]));
			v.fp = p->fp[n - 1];
			v.reg = (unsigned char)(p->reg[n - 1] < 0 ? 0 : p->reg[n - 1]);
			v.size = p->t[n - 1].size;
		} else {
			if (n > MAX_INT_REGS) {
				snprintf(why, wlen, "'%s': without DWARF only the %d argument registers",
					 val, MAX_INT_REGS);
				return -EINVAL;
			}
			v.code = (unsigned char)(fmt >= 0 ? fmt : USFT_VAL_SINT);
			v.reg = (unsigned char)(n - 1);
			v.size = 8;
		}
		if (!add_val(e, v, false)) {
			snprintf(why, wlen, "more than %d values for one function", USFT_MAX_VALS);
			return -EINVAL;
		}
		return 0;
	}
	snprintf(why, wlen, "'%s' is not argN, fpargN, args or retval", val);
	return -EINVAL;
}

static struct args_ent *tab_get(struct args_tab **t, size_t *cap, unsigned long ip)
{
	struct args_tab *nt;

	for (size_t i = 0; i < (*t)->n; i++)
		if ((*t)->e[i].ip == ip)
			return &(*t)->e[i];
	if ((*t)->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;

		nt = realloc(*t, sizeof(*nt) + nc * sizeof(nt->e[0]));
		if (!nt)
			return NULL;
		*t = nt;
		*cap = nc;
	}
	memset(&(*t)->e[(*t)->n], 0, sizeof((*t)->e[0]));
	(*t)->e[(*t)->n].ip = ip;
	return &(*t)->e[(*t)->n++];
}

/* one "GLOB@VAL,VAL" (@ret: of -R) into @t */
static int apply_spec(struct args_tab **t, size_t *cap, char *spec, const char *opt)
{
	char *at = strrchr(spec, '@'), why[160], *save = NULL, *val;
	unsigned long *ips;
	int n, ret = 0;

	if (!at || at == spec || !at[1]) {
		fprintf(stderr, "usft: %s '%s': want FUNC@VAL[,VAL]... (e.g. 'main@arg1,arg2' or "
			"'main@retval')\n", opt, spec);
		return -EINVAL;
	}
	*at = 0;
	n = usft_match_sites(spec, -1, NULL, 0);
	if (n <= 0) {
		fprintf(stderr, "usft: %s '%s': no patchable function matches '%s' (`usft list -f "
			"PROG` lists them)\n", opt, at + 1, spec);
		*at = '@';
		return -EINVAL;
	}
	ips = malloc((size_t)n * sizeof(*ips));
	if (!ips)
		return -ENOMEM;
	n = usft_match_sites(spec, -1, ips, (size_t)n);
	for (int i = 0; i < n && !ret; i++) {
		struct proto p;
		struct args_ent *e = tab_get(t, cap, ips[i]);
		char *vals = strdup(at + 1);

		if (!e || !vals) {
			free(vals);
			ret = -ENOMEM;
			break;
		}
		proto_of(ips[i], &p);
		for (val = strtok_r(vals, ",", &save); val && !ret; val = strtok_r(NULL, ",", &save)) {
			ret = apply_val(e, &p, val, why, sizeof(why));
			if (ret)
				fprintf(stderr, "usft: %s '%s@%s': %s\n", opt, spec, at + 1, why);
		}
		free(vals);
	}
	*at = '@';
	free(ips);
	return ret;
}

static int apply_specs(struct args_tab **t, size_t *cap, const char *list, const char *opt)
{
	char *copy, *save = NULL, *spec;
	int ret = 0;

	if (!list || !*list)
		return 0;
	copy = strdup(list);
	if (!copy)
		return -ENOMEM;
	for (spec = strtok_r(copy, ";", &save); spec && !ret; spec = strtok_r(NULL, ";", &save))
		ret = apply_spec(t, cap, spec, opt);
	free(copy);
	return ret;
}

/*
 * usft_args_init() - the table for @o's -A/-R specs; before the tracer
 * registers.  Return: 0, -EINVAL (a message said which spec), -ENOMEM.
 */
int usft_args_init(const struct usft_trace_opts *o)
{
	struct args_tab *t;
	size_t cap = 0;
	int ret;

	usft_args_all_retval = o->funcgraph_retval;
	if ((!o->args_spec || !*o->args_spec) && (!o->retval_spec || !*o->retval_spec))
		return 0;
	{
		/* the fault handler is claimed now, not in the first traced call */
		char probe[2];

		strncpy_from_user_nofault(probe, "", sizeof(probe));
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	ret = apply_specs(&t, &cap, o->args_spec, "-A");
	if (!ret)
		ret = apply_specs(&t, &cap, o->retval_spec, "-R");
	if (ret) {
		free(t);
		return ret;
	}
	qsort(t->e, t->n, sizeof(t->e[0]), cmp_ent);
	__atomic_store_n(&args_tab, t, __ATOMIC_RELEASE);
	return 0;
}

/* the tracer is gone: no callback reads the table any more after a grace period */
void usft_args_reset(void)
{
	/* kept: a callback of the previous session may still be reading it */
	__atomic_store_n(&args_tab, NULL, __ATOMIC_RELEASE);
	usft_args_all_retval = false;
}
