/* SPDX-License-Identifier: MIT */
/*
 * runtime/elf/elf.h - what the core needs from an ELF object: its function
 * symbols (for globs and names) and where its site table lives.
 *
 * All addresses here are link-time virtual addresses (st_value, sh_addr);
 * the caller adds the load bias from dl_iterate_phdr.
 */
#ifndef USFT_ELF_H
#define USFT_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

struct usft_elf_sym {
	unsigned long addr;	/* link-time address */
	unsigned long size;
	const char *name;	/* points into usft_elf_info.strings */
};

struct usft_elf_range {
	unsigned long addr;	/* link-time address of a __patchable_function_entries section */
	unsigned long size;	/* bytes */
};

#define USFT_ELF_MAX_PFE 8

struct usft_elf_info {
	/* STT_FUNC and STT_GNU_IFUNC symbols with st_shndx != SHN_UNDEF and a
	 * non-empty name, from .symtab and .dynsym merged, sorted by addr then
	 * name, exact (addr,name) duplicates removed. */
	struct usft_elf_sym *syms;
	size_t nr_syms;
	char *strings;		/* owns every name */
	struct usft_elf_range pfe[USFT_ELF_MAX_PFE];
	unsigned int nr_pfe;	/* sections named __patchable_function_entries */
	unsigned int pfe_entsize;	/* 8 on 64-bit */
	int is_dyn;		/* ET_DYN (PIE or shared object) */
	unsigned short machine;	/* e_machine */
	/* usft_elf_read(): the file read, to tell it from one put there since */
	dev_t file_dev;
	ino_t file_ino;
	off_t file_size;
	struct timespec file_mtime;
};

/**
 * usft_elf_read() - parse the object at @path.
 * Return: 0, or -ENOENT (no file), -EINVAL (not a usable 64-bit ELF of the
 * host byte order, corrupt or truncated headers/sections), -ENOMEM.  On error
 * @out is zeroed and nothing needs freeing.
 */
int usft_elf_read(const char *path, struct usft_elf_info *out);

/**
 * usft_elf_same_file() - @fd is the file usft_elf_read() read into @info:
 * same device, inode, size and modification time.  False for an image read
 * from memory, or when fstat() fails.
 */
bool usft_elf_same_file(const struct usft_elf_info *info, int fd);

/** usft_elf_read_mem() - same, from an in-memory image (fuzzing, tests). */
int usft_elf_read_mem(const void *image, size_t size, struct usft_elf_info *out);

/** usft_elf_free() - release what usft_elf_read*() allocated; idempotent. */
void usft_elf_free(struct usft_elf_info *info);

/**
 * usft_elf_find_sym() - the symbol containing @addr (link-time) by binary
 * search: addr in [sym.addr, sym.addr + max(sym.size,1)). NULL if none.
 */
const struct usft_elf_sym *usft_elf_find_sym(const struct usft_elf_info *info,
					     unsigned long addr);

/**
 * usft_elf_find_sym_next() - usft_elf_find_sym() for addresses in ascending
 * order: *@cursor (0 before the first call) keeps where the last one ended,
 * so a sorted walk of n addresses costs O(n + symbols), not O(n log n) with
 * a cache miss per step.  Any order still gives the same answers.
 */
const struct usft_elf_sym *usft_elf_find_sym_next(const struct usft_elf_info *info,
						  unsigned long addr, size_t *cursor);

#endif /* USFT_ELF_H */
