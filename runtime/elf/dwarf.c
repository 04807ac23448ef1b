// SPDX-License-Identifier: MIT
/*
 * elf/dwarf.c - function models from DWARF with libdw (the kernel builds
 * them from BTF: btf_distill_func_proto()).  A model says how many
 * arguments a function takes, which are floating point, and whether it
 * returns floating point; anything passed or returned in memory is
 * refused, as the JIT only handles register-passed values.
 */
#include <dwarf.h>
#include <errno.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elf/dwarf.h"
#include "asm/ftrace.h"

/* strip typedef/const/volatile/restrict */
static bool resolve_type(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute at;
	Dwarf_Die cur = *die;

	for (int depth = 0; depth < 32; depth++) {
		int tag = dwarf_tag(&cur);

		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type && tag != DW_TAG_restrict_type &&
		    tag != DW_TAG_atomic_type) {
			*out = cur;
			return true;
		}
		if (!dwarf_attr_integrate(&cur, DW_AT_type, &at) || !dwarf_formref_die(&at, &cur))
			return false;	/* const void */
	}
	return false;
}

/* 0 int-class, 1 fp, -EOPNOTSUPP anything in memory */
static int classify(Dwarf_Die *typed)
{
	Dwarf_Attribute at;
	Dwarf_Die t, r;
	Dwarf_Word enc = 0;
	int size;

	if (!dwarf_attr_integrate(typed, DW_AT_type, &at) || !dwarf_formref_die(&at, &t))
		return -EOPNOTSUPP;
	if (!resolve_type(&t, &r))
		return -EOPNOTSUPP;
	switch (dwarf_tag(&r)) {
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
	case DW_TAG_enumeration_type:
		return 0;
	case DW_TAG_base_type:
		size = dwarf_bytesize(&r);
		if (size <= 0 || size > 8)
			return -EOPNOTSUPP;	/* long double, __int128 */
		if (dwarf_attr_integrate(&r, DW_AT_encoding, &at) && !dwarf_formudata(&at, &enc) &&
		    (enc == DW_ATE_float || enc == DW_ATE_complex_float))
			return enc == DW_ATE_float ? 1 : -EOPNOTSUPP;
		return 0;
	default:
		return -EOPNOTSUPP;	/* struct, union, array by value */
	}
}

static int model_of(Dwarf_Die *fn, struct usft_func_model *m)
{
	Dwarf_Attribute at;
	Dwarf_Die child;
	int nr_int = 0, nr_fp = 0, c;

	memset(m, 0, sizeof(*m));
	if (dwarf_child(fn, &child) == 0) {
		do {
			int tag = dwarf_tag(&child);

			if (tag == DW_TAG_unspecified_parameters) {
				m->variadic = true;
				continue;
			}
			if (tag != DW_TAG_formal_parameter)
				continue;
			c = classify(&child);
			if (c < 0)
				return c;
			if (m->nr_args >= MAX_BPF_FUNC_ARGS)
				return -EOPNOTSUPP;
			if (c) {
				m->fp_mask |= 1u << m->nr_args;
				nr_fp++;
			} else {
				nr_int++;
			}
			m->nr_args++;
		} while (dwarf_siblingof(&child, &child) == 0);
	}
	if (nr_int > 6 || nr_fp > 8)
		return -EOPNOTSUPP;
	if (dwarf_attr_integrate(fn, DW_AT_type, &at)) {
		c = classify(fn);
		if (c < 0)
			return c;
		m->ret_fp = c == 1;
	}
	m->known = true;
	return 0;
}

static bool find_in(Dwarf_Die *parent, Dwarf_Addr addr, Dwarf_Die *out, int depth)
{
	Dwarf_Die child;

	if (depth > 8 || dwarf_child(parent, &child) != 0)
		return false;
	do {
		int tag = dwarf_tag(&child);
		Dwarf_Addr lo;

		if (tag == DW_TAG_subprogram && dwarf_lowpc(&child, &lo) == 0 && lo == addr) {
			*out = child;
			return true;
		}
		if ((tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
		     tag == DW_TAG_structure_type) && find_in(&child, addr, out, depth + 1))
			return true;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/*
 * Where DW_AT_low_pc of the function at @addr may be: the symbol itself,
 * or where the arch's asm/ftrace.h says its compiler puts it
 * (ARCH_DWARF_LOWPC_SKEW: GCC on arm64 past the patchable entry NOPs).
 * The exact address is tried first.
 */
#ifndef ARCH_DWARF_LOWPC_SKEW
#define ARCH_DWARF_LOWPC_SKEW	{ 0 }
#endif
static const unsigned long lowpc_skew[] = ARCH_DWARF_LOWPC_SKEW;

typedef int (*func_die_fn)(Dwarf_Die *fn, void *arg);

static int func_die_at(Dwarf *dbg, unsigned long addr, func_die_fn cb, void *arg)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, fn;

		if (dwarf_offdie(dbg, off + hsize, &cu) && dwarf_haspc(&cu, addr) > 0 &&
		    find_in(&cu, addr, &fn, 0))
			return cb(&fn, arg);
		off = next;
	}
	return -ENOENT;
}

/*
 * The DWARF of @path, read-only, its descriptor in *@fd.  With @elf, only
 * if @path is still the file @elf was read from: a file put in its place
 * since describes other code.  NULL with *@err: -ENOENT (no file, no
 * DWARF) or -ESTALE (another file).
 */
static Dwarf *dwarf_open(const char *path, const struct usft_elf_info *elf, int *fd, int *err)
{
	Dwarf *dbg;

	*err = -ENOENT;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	if (elf && !usft_elf_same_file(elf, *fd)) {
		*err = -ESTALE;
		close(*fd);
		return NULL;
	}
	dbg = dwarf_begin(*fd, DWARF_C_READ);
	if (!dbg)
		close(*fd);
	return dbg;
}

/* @cb on the DW_TAG_subprogram of the function at @addr (link-time) in @path */
static int with_func_die(const char *path, const struct usft_elf_info *elf, unsigned long addr,
			 func_die_fn cb, void *arg)
{
	int fd, ret;
	Dwarf *dbg = dwarf_open(path, elf, &fd, &ret);

	if (!dbg)
		return ret;
	ret = -ENOENT;
	for (size_t i = 0; i < sizeof(lowpc_skew) / sizeof(lowpc_skew[0]) && ret == -ENOENT; i++)
		ret = func_die_at(dbg, addr + lowpc_skew[i], cb, arg);
	dwarf_end(dbg);
	close(fd);
	return ret;
}

static int model_cb(Dwarf_Die *fn, void *arg)
{
	return model_of(fn, arg);
}

int usft_dwarf_func_model(const char *path, const struct usft_elf_info *elf, unsigned long addr,
			  struct usft_func_model *m)
{
	return with_func_die(path, elf, addr, model_cb, m);
}

/* ---- argument types for display (usft_func_arg_types()) ---------------- */

/* what the value of a DIE with a DW_AT_type (a parameter, a function) is */
static struct usft_arg_type arg_type_of(Dwarf_Die *typed)
{
	struct usft_arg_type r = { .kind = USFT_ARG_UNSUPP, .size = 0 };
	Dwarf_Attribute at;
	Dwarf_Word enc = 0;
	Dwarf_Die t, d, pt;
	int size;

	if (!dwarf_attr_integrate(typed, DW_AT_type, &at) || !dwarf_formref_die(&at, &t) ||
	    !resolve_type(&t, &d))
		return r;
	size = dwarf_bytesize(&d);
	switch (dwarf_tag(&d)) {
	case DW_TAG_pointer_type:
		r.kind = USFT_ARG_PTR;
		r.size = sizeof(void *);
		/* char * (any cv): a string */
		if (dwarf_attr_integrate(&d, DW_AT_type, &at) && dwarf_formref_die(&at, &pt) &&
		    resolve_type(&pt, &pt) && dwarf_tag(&pt) == DW_TAG_base_type &&
		    dwarf_bytesize(&pt) == 1 &&
		    dwarf_attr_integrate(&pt, DW_AT_encoding, &at) && !dwarf_formudata(&at, &enc) &&
		    (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char))
			r.kind = USFT_ARG_STR;
		return r;
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		r.kind = USFT_ARG_PTR;
		r.size = sizeof(void *);
		return r;
	case DW_TAG_enumeration_type:
		r.kind = USFT_ARG_SINT;
		r.size = size > 0 && size <= 8 ? (unsigned char)size : 4;
		return r;
	case DW_TAG_base_type:
		if (size <= 0 || size > 8)
			return r;	/* long double, __int128 */
		r.size = (unsigned char)size;
		if (!dwarf_attr_integrate(&d, DW_AT_encoding, &at) || dwarf_formudata(&at, &enc))
			enc = DW_ATE_signed;
		switch (enc) {
		case DW_ATE_float:
			r.kind = size == 4 ? USFT_ARG_FLOAT : size == 8 ? USFT_ARG_DOUBLE : USFT_ARG_UNSUPP;
			break;
		case DW_ATE_boolean:
			r.kind = USFT_ARG_BOOL;
			break;
		case DW_ATE_signed_char:
		case DW_ATE_unsigned_char:
			r.kind = size == 1 ? USFT_ARG_CHAR : USFT_ARG_UINT;
			break;
		case DW_ATE_unsigned:
		case DW_ATE_UTF:
			r.kind = USFT_ARG_UINT;
			break;
		case DW_ATE_signed:
			r.kind = USFT_ARG_SINT;
			break;
		default:
			r.kind = USFT_ARG_UNSUPP;
		}
		return r;
	default:
		return r;	/* struct, union, array by value */
	}
}

struct arg_types_req {
	struct usft_arg_type *args, *ret;
	int max, n;
	bool variadic;
};

static int arg_types_cb(Dwarf_Die *fn, void *arg)
{
	struct arg_types_req *q = arg;
	Dwarf_Attribute at;
	Dwarf_Die child;

	if (dwarf_child(fn, &child) == 0) {
		do {
			int tag = dwarf_tag(&child);

			if (tag == DW_TAG_unspecified_parameters)
				q->variadic = true;
			if (tag != DW_TAG_formal_parameter)
				continue;
			if (q->n < q->max)
				q->args[q->n] = arg_type_of(&child);
			q->n++;
		} while (dwarf_siblingof(&child, &child) == 0);
	}
	if (q->ret)
		*q->ret = dwarf_attr_integrate(fn, DW_AT_type, &at) ? arg_type_of(fn) :
			  (struct usft_arg_type){ .kind = USFT_ARG_NONE };
	return 0;
}

int usft_dwarf_arg_types(const char *path, const struct usft_elf_info *elf, unsigned long addr,
			 struct usft_arg_type *args, int max, struct usft_arg_type *ret, bool *variadic)
{
	struct arg_types_req q = { .args = args, .ret = ret, .max = max };
	int r = with_func_die(path, elf, addr, arg_types_cb, &q);

	if (r)
		return r;
	if (variadic)
		*variadic = q.variadic;
	return q.n;
}

/* ---- functions that take no vector argument (x86-64 per-ops copies) ---- */

/*
 * True when a value of @typed's type is passed in general-purpose
 * registers or memory, never in an xmm register: pointers, references,
 * enumerations and integer base types.  Anything else (floating point,
 * complex, vector types, and every struct, union or array by value, which
 * the psABI may split into SSE eightbytes) counts as vector.
 */
static bool int_class(Dwarf_Die *typed)
{
	Dwarf_Attribute at;
	Dwarf_Word enc = 0;
	Dwarf_Die t, r;

	if (!dwarf_attr_integrate(typed, DW_AT_type, &at) || !dwarf_formref_die(&at, &t) ||
	    !resolve_type(&t, &r))
		return false;
	switch (dwarf_tag(&r)) {
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
	case DW_TAG_ptr_to_member_type:
	case DW_TAG_enumeration_type:
		return true;
	case DW_TAG_base_type:
		if (!dwarf_attr_integrate(&r, DW_AT_encoding, &at) || dwarf_formudata(&at, &enc))
			return false;
		return enc == DW_ATE_signed || enc == DW_ATE_unsigned || enc == DW_ATE_boolean ||
		       enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char ||
		       enc == DW_ATE_UTF;
	default:
		return false;
	}
}

/*
 * @fn takes no floating-point or vector argument and is called by the
 * psABI: every parameter int-class, not variadic, the normal calling
 * convention (compilers mark a function whose signature they rewrote
 * DW_CC_nocall), and, from a compiler other than GCC, external: LLVM
 * rewrites internal functions' arguments in place, where GCC makes a
 * clone with a suffixed name (the caller refuses those by name).
 */
static bool no_vector_args(Dwarf_Die *fn, bool gnu)
{
	Dwarf_Attribute at;
	Dwarf_Word cc;
	Dwarf_Die child;
	bool ext = false;

	if (dwarf_attr_integrate(fn, DW_AT_calling_convention, &at) &&
	    (dwarf_formudata(&at, &cc) || cc != DW_CC_normal))
		return false;
	if (!gnu && (!dwarf_attr_integrate(fn, DW_AT_external, &at) || dwarf_formflag(&at, &ext) ||
		     !ext))
		return false;
	if (dwarf_child(fn, &child) != 0)
		return true;
	do {
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_unspecified_parameters)
			return false;
		if (tag == DW_TAG_formal_parameter && !int_class(&child))
			return false;
	} while (dwarf_siblingof(&child, &child) == 0);
	return true;
}

struct usft_dwarf_novec {
	unsigned long addr;	/* link-time */
	bool novec;
};

struct novec_acc {
	struct usft_dwarf_novec *v;
	size_t n, cap;
	int err;
};

static void novec_add(struct novec_acc *a, unsigned long addr, bool novec)
{
	if (a->err)
		return;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		struct usft_dwarf_novec *v = realloc(a->v, cap * sizeof(*v));

		if (!v) {
			a->err = -ENOMEM;
			return;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = (struct usft_dwarf_novec){ .addr = addr, .novec = novec };
}

static void novec_walk(Dwarf_Die *parent, bool gnu, struct novec_acc *a, int depth)
{
	Dwarf_Die child;

	if (depth > 8 || dwarf_child(parent, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		Dwarf_Addr lo;

		if (tag == DW_TAG_subprogram && dwarf_lowpc(&child, &lo) == 0)
			novec_add(a, lo, no_vector_args(&child, gnu));
		else if (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
			 tag == DW_TAG_structure_type)
			novec_walk(&child, gnu, a, depth + 1);
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int cmp_novec(const void *x, const void *y)
{
	const struct usft_dwarf_novec *a = x, *b = y;

	return (a->addr > b->addr) - (a->addr < b->addr);
}

int usft_dwarf_novec_table(const char *path, const struct usft_elf_info *elf, unsigned long **out,
			   size_t *nr)
{
	unsigned long *v;
	struct novec_acc a = { 0 };
	Dwarf_Off off = 0, next;
	size_t hsize, k = 0;
	Dwarf *dbg;
	int fd, err;

	*out = NULL;
	*nr = 0;
	dbg = dwarf_open(path, elf, &fd, &err);
	if (!dbg)
		return err;
	while (dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0 && !a.err) {
		Dwarf_Die cu;

		if (dwarf_offdie(dbg, off + hsize, &cu)) {
			Dwarf_Attribute at;
			const char *prod = dwarf_formstring(dwarf_attr(&cu, DW_AT_producer, &at));

			novec_walk(&cu, prod && !strncmp(prod, "GNU ", 4), &a, 0);
		}
		off = next;
	}
	dwarf_end(dbg);
	close(fd);
	if (a.err) {
		free(a.v);
		return a.err;
	}
	/* one entry per address: vector-free only if every DIE there says so */
	qsort(a.v, a.n, sizeof(*a.v), cmp_novec);
	for (size_t i = 0; i < a.n; i++) {
		if (k && a.v[k - 1].addr == a.v[i].addr)
			a.v[k - 1].novec &= a.v[i].novec;
		else
			a.v[k++] = a.v[i];
	}
	v = malloc((k ? k : 1) * sizeof(*v));
	if (!v) {
		free(a.v);
		return -ENOMEM;
	}
	*nr = 0;
	for (size_t i = 0; i < k; i++)
		if (a.v[i].novec)
			v[(*nr)++] = a.v[i].addr;
	free(a.v);
	*out = v;
	return 0;
}

bool usft_dwarf_novec_lookup(const unsigned long *v, size_t n, unsigned long addr, size_t *cursor)
{
	size_t lo = *cursor, hi = n, step;

	/*
	 * Sites are mostly looked up in address order, each a few times:
	 * gallop from where the last lookup ended ([lo, hi) holds the first
	 * entry >= addr), from scratch when addr is below it.
	 */
	if (lo > n || (lo && v[lo - 1] >= addr)) {
		lo = 0;
	} else {
		for (step = 1, hi = lo; hi < n && v[hi] < addr; step *= 2) {
			lo = hi + 1;
			hi = n - hi > step ? hi + step : n;
		}
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	*cursor = lo;
	return lo < n && v[lo] == addr;
}
