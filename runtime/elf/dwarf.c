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

/* @cb on the DW_TAG_subprogram of the function at @addr (link-time) in @path */
static int with_func_die(const char *path, unsigned long addr, func_die_fn cb, void *arg)
{
	Dwarf *dbg;
	int fd, ret = -ENOENT;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	dbg = dwarf_begin(fd, DWARF_C_READ);
	if (!dbg) {
		close(fd);
		return -ENOENT;
	}
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

int usft_dwarf_func_model(const char *path, unsigned long addr, struct usft_func_model *m)
{
	return with_func_die(path, addr, model_cb, m);
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

int usft_dwarf_arg_types(const char *path, unsigned long addr, struct usft_arg_type *args, int max,
			 struct usft_arg_type *ret, bool *variadic)
{
	struct arg_types_req q = { .args = args, .ret = ret, .max = max };
	int r = with_func_die(path, addr, arg_types_cb, &q);

	if (r)
		return r;
	if (variadic)
		*variadic = q.variadic;
	return q.n;
}
