/* SPDX-License-Identifier: MIT */
/*
 * runtime/elf/dwarf.h - function models read from DWARF (dwarf.c), what
 * the trampoline manager (core/bpf_trampoline.c) and the arch JITs build
 * from.  The kernel's struct btf_func_model (include/linux/bpf.h), which
 * it distils from BTF; here the ELF layer owns it, so that core and the
 * arches depend on elf/ and never the other way round.
 */
#ifndef USFT_ELF_DWARF_H
#define USFT_ELF_DWARF_H

#include <stdbool.h>
#include <usft/usft.h>	/* struct usft_arg_type */
#include "elf/elf.h"

/* include/linux/bpf.h: arguments a model can describe */
#define MAX_BPF_FUNC_ARGS 6

/* kernel struct btf_func_model, reduced to register-passed arguments */
struct usft_func_model {
	int nr_args;
	unsigned int fp_mask;	/* bit i: argument i is floating point */
	bool ret_fp;
	bool variadic;
	bool known;		/* from DWARF: registers outside the model are dead */
};

/*
 * Every reader takes @elf, what usft_elf_read() read from @path when the
 * object was loaded (NULL: no check), and returns -ESTALE when @path is
 * another file now (replaced or rewritten since): its DWARF describes
 * other code.
 */
/* the function model of @addr (link-time) in @path; Return: 0 or -errno */
int usft_dwarf_func_model(const char *path, const struct usft_elf_info *elf, unsigned long addr,
			  struct usft_func_model *m);
/* usft_func_arg_types() for @addr (link-time) in @path */
int usft_dwarf_arg_types(const char *path, const struct usft_elf_info *elf, unsigned long addr,
			 struct usft_arg_type *args, int max, struct usft_arg_type *ret, bool *variadic);

/*
 * The functions that take no floating-point or vector argument (dwarf.c:
 * no_vector_args()): the sorted link-time addresses of every
 * DW_TAG_subprogram low_pc where each DIE says so.
 * Return: 0 with *out (malloc'd) and *nr, or -errno.
 */
int usft_dwarf_novec_table(const char *path, const struct usft_elf_info *elf, unsigned long **out,
			   size_t *nr);
/* @addr (link-time) is in @v (from usft_dwarf_novec_table()); @cursor: 0, then kept */
bool usft_dwarf_novec_lookup(const unsigned long *v, size_t n, unsigned long addr, size_t *cursor);

#endif
