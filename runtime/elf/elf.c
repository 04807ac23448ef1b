// SPDX-License-Identifier: MIT
/*
 * runtime/elf/elf.c - function symbols and __patchable_function_entries
 * ranges of one ELF object, read with libelf.
 *
 * The input is untrusted (any file a process maps, or a fuzzer's buffer).
 * The ELF header, the program and section header tables and every section's
 * file extent are validated against the image size with our own
 * bounds-checked reads before libelf sees the image; what libelf returns is
 * checked again (counts, data sizes) before use.  Symbol entries are copied
 * out with memcpy because libelf hands out unaligned pointers on x86 when a
 * corrupt sh_offset is unaligned.
 *
 * Both entry points end up in elf_parse() on a private, writable copy of the
 * image (a MAP_PRIVATE mapping of the file, or a heap copy of the caller's
 * buffer), because elf_memory() wants a non-const buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "compat/prefault.h"
#include "elf/elf.h"

#define ELF_PFE_SECTION		"__patchable_function_entries"
#define ELF_PFE_ENTSIZE		8

/*
 * usft_elf_find_sym() looks this many entries below the alias group of the
 * nearest preceding symbol for one that encloses @addr (assembly that types
 * inner labels as functions).  Compiled C never nests functions.
 */
#define ELF_FIND_BACKTRACK	16

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ELF_HOST_DATA		ELFDATA2LSB
#else
#define ELF_HOST_DATA		ELFDATA2MSB
#endif

struct elf_ctx {
	Elf *elf;
	size_t size;		/* image bytes */
	size_t shnum;		/* validated section count */
	size_t shstrndx;	/* validated, 0 when shnum == 0 */
	const char *shstr;	/* section name table */
	size_t shstr_size;
};

static bool elf_range_ok(uint64_t off, uint64_t len, size_t size)
{
	return off <= size && len <= size - off;
}

/*
 * Check everything that locates data in the image: ELF header, program header
 * table, section header table (with extended numbering) and each section's
 * file extent.  Only @image[0, @size) is read.
 */
static int elf_check_image(const unsigned char *image, size_t size,
			   struct elf_ctx *ctx)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh;
	size_t shnum, shstrndx, phnum, i;

	if (size < sizeof(eh))
		return -EINVAL;
	memcpy(&eh, image, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELF_HOST_DATA ||
	    eh.e_ident[EI_VERSION] != EV_CURRENT)
		return -EINVAL;
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return -EINVAL;

	shnum = eh.e_shnum;
	shstrndx = eh.e_shstrndx;
	phnum = eh.e_phnum;
	if (eh.e_shoff == 0) {
		/* No section table: nothing may claim to live in it. */
		if (shnum || phnum == PN_XNUM || shstrndx != SHN_UNDEF)
			return -EINVAL;
	} else {
		/*
		 * libelf on x86 hands out pointers into a misaligned table
		 * as they are; every real linker aligns it.
		 */
		if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
		    eh.e_shoff % _Alignof(Elf64_Shdr) ||
		    !elf_range_ok(eh.e_shoff, sizeof(sh), size))
			return -EINVAL;
		/* Section 0 carries the real counts when they overflow. */
		memcpy(&sh, image + eh.e_shoff, sizeof(sh));
		if (shnum == 0)
			shnum = sh.sh_size;
		if (shstrndx == SHN_XINDEX)
			shstrndx = sh.sh_link;
		if (phnum == PN_XNUM)
			phnum = sh.sh_info;
		if (shnum == 0 ||
		    shnum > (size - eh.e_shoff) / sizeof(Elf64_Shdr))
			return -EINVAL;
		if (shstrndx == SHN_UNDEF || shstrndx >= shnum)
			return -EINVAL;
	}

	if (phnum && (eh.e_phentsize != sizeof(Elf64_Phdr) ||
		      eh.e_phoff > size ||
		      phnum > (size - eh.e_phoff) / sizeof(Elf64_Phdr)))
		return -EINVAL;

	for (i = 1; i < shnum; i++) {
		memcpy(&sh, image + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_type == SHT_NULL || sh.sh_type == SHT_NOBITS)
			continue;
		if (!elf_range_ok(sh.sh_offset, sh.sh_size, size))
			return -EINVAL;
	}

	ctx->size = size;
	ctx->shnum = shnum;
	ctx->shstrndx = shstrndx;
	return 0;
}

/* The bytes of a section as libelf returns them, checked against its header. */
static int elf_section_bytes(Elf_Scn *scn, const Elf64_Shdr *sh,
			     const void **buf, size_t *len)
{
	Elf_Data *data;

	*buf = NULL;
	*len = 0;
	if (sh->sh_type == SHT_NOBITS)
		return -EINVAL;
	data = elf_getdata(scn, NULL);
	if (!data)
		return sh->sh_size ? -EINVAL : 0;
	if (data->d_size != sh->sh_size || (data->d_size && !data->d_buf))
		return -EINVAL;
	*buf = data->d_buf;
	*len = data->d_size;
	return 0;
}

/* A NUL-terminated string lying wholly inside @tab, or NULL. */
static const char *elf_strtab_str(const char *tab, size_t tab_size,
				  uint64_t off)
{
	if (off >= tab_size)
		return NULL;
	if (!memchr(tab + off, '\0', tab_size - off))
		return NULL;
	return tab + off;
}

static int elf_get_shdr(struct elf_ctx *ctx, size_t idx, Elf_Scn **scn,
			Elf64_Shdr **sh)
{
	*scn = elf_getscn(ctx->elf, idx);
	*sh = *scn ? elf64_getshdr(*scn) : NULL;
	return *sh ? 0 : -EINVAL;
}

/*
 * What a walk of the symbol tables does with each function symbol:
 * SCAN_COUNT validates every entry of every table and counts them (and
 * notes their span and order), SCAN_FILL stores them at @syms, SCAN_KEYS
 * stores the sort key of each (elf_collect_sorted()).  The passes after the
 * first read the same validated bytes and check nothing again.
 */
enum elf_scan_mode { SCAN_COUNT, SCAN_FILL, SCAN_KEYS };

#define ELF_KEY_TABS		2	/* symbol tables the keys can name */
#define ELF_KEY_TAB_BIT		31	/* key: (addr - lo) << 32 | table << 31 | entry */

struct elf_sym_scan {
	enum elf_scan_mode mode;
	size_t nr;			/* function symbols so far */
	struct usft_elf_sym *syms;	/* SCAN_FILL */
	uint64_t *keys;			/* SCAN_KEYS */
	/* SCAN_COUNT's findings */
	unsigned long lo, hi;		/* lowest and highest address */
	bool ascending;			/* addresses never go down, in table order */
	bool keyable;			/* every symbol fits a key */
	/* the tables, in section order (SCAN_KEYS), for the keys' entries */
	unsigned int nr_tabs;
	struct {
		const unsigned char *buf;
		const char *strs;
	} tabs[ELF_KEY_TABS];
};

/*
 * Walk one SHT_SYMTAB/SHT_DYNSYM section in @sc's mode (validating it on
 * the counting pass).  Names point into libelf's data and are copied out
 * later.
 */
static int elf_scan_symtab(struct elf_ctx *ctx, Elf_Scn *scn,
			   const Elf64_Shdr *sh, struct elf_sym_scan *sc)
{
	Elf_Scn *strscn;
	Elf64_Shdr *strsh;
	const void *buf, *strs;
	size_t len, strs_size, count, i;
	unsigned int tab = sc->nr_tabs++;
	Elf64_Sym sym;
	int err;

	if (sh->sh_link == SHN_UNDEF || sh->sh_link >= ctx->shnum)
		return -EINVAL;
	err = elf_get_shdr(ctx, sh->sh_link, &strscn, &strsh);
	if (err)
		return err;
	if (strsh->sh_type != SHT_STRTAB)
		return -EINVAL;
	err = elf_section_bytes(scn, sh, &buf, &len);
	if (err)
		return err;
	err = elf_section_bytes(strscn, strsh, &strs, &strs_size);
	if (err)
		return err;
	if (len % sizeof(Elf64_Sym) ||
	    (sh->sh_entsize && sh->sh_entsize != sizeof(Elf64_Sym)))
		return -EINVAL;
	count = len / sizeof(Elf64_Sym);
	if (sh->sh_info > count)
		return -EINVAL;
	if (sc->mode == SCAN_COUNT && (tab >= ELF_KEY_TABS || count >= 1UL << ELF_KEY_TAB_BIT))
		sc->keyable = false;
	if (sc->mode == SCAN_KEYS) {
		if (tab >= ELF_KEY_TABS)
			return -EINVAL;	/* the counting pass saw the same tables */
		sc->tabs[tab].buf = buf;
		sc->tabs[tab].strs = strs;
	}

	for (i = 0; i < count; i++) {
		const char *name;
		unsigned int type;

		memcpy(&sym, (const unsigned char *)buf + i * sizeof(sym),
		       sizeof(sym));
		if (sc->mode == SCAN_COUNT) {
			name = elf_strtab_str(strs, strs_size, sym.st_name);
			if (!name)
				return -EINVAL;
			if (sym.st_shndx >= ctx->shnum && sym.st_shndx < SHN_LORESERVE)
				return -EINVAL;
		} else {
			name = (const char *)strs + sym.st_name;
		}
		type = ELF64_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || !name[0])
			continue;
		switch (sc->mode) {
		case SCAN_COUNT:
			if (!sc->nr) {
				sc->lo = sc->hi = sym.st_value;
			} else {
				if (sym.st_value < sc->hi)
					sc->ascending = false;
				if (sym.st_value < sc->lo)
					sc->lo = sym.st_value;
				if (sym.st_value > sc->hi)
					sc->hi = sym.st_value;
			}
			break;
		case SCAN_FILL:
			sc->syms[sc->nr].addr = sym.st_value;
			sc->syms[sc->nr].size = sym.st_size;
			sc->syms[sc->nr].name = name;
			break;
		case SCAN_KEYS:
			sc->keys[sc->nr] = (uint64_t)(sym.st_value - sc->lo) << 32 |
					   (uint64_t)tab << ELF_KEY_TAB_BIT | i;
			break;
		}
		sc->nr++;
	}
	return 0;
}

/*
 * Walk the section table: record __patchable_function_entries ranges (on
 * the counting pass) and walk every symbol table in @sc's mode.
 */
static int elf_scan_sections(struct elf_ctx *ctx, struct usft_elf_info *info,
			     struct elf_sym_scan *sc)
{
	Elf_Scn *scn;
	Elf64_Shdr *sh;
	const char *name;
	size_t i;
	int err;

	sc->nr = 0;
	sc->nr_tabs = 0;
	if (sc->mode == SCAN_COUNT) {
		sc->ascending = true;
		sc->keyable = true;
	}
	for (i = 1; i < ctx->shnum; i++) {
		err = elf_get_shdr(ctx, i, &scn, &sh);
		if (err)
			return err;
		name = elf_strtab_str(ctx->shstr, ctx->shstr_size, sh->sh_name);
		if (!name)
			return -EINVAL;

		if (sh->sh_type == SHT_SYMTAB || sh->sh_type == SHT_DYNSYM) {
			err = elf_scan_symtab(ctx, scn, sh, sc);
			if (err)
				return err;
		}

		/* Ranges are taken on the counting pass only. */
		if (sc->mode != SCAN_COUNT || strcmp(name, ELF_PFE_SECTION))
			continue;
		if (sh->sh_size % ELF_PFE_ENTSIZE ||
		    sh->sh_addr + sh->sh_size < sh->sh_addr)
			return -EINVAL;
		/* A linked object has one; more than the table holds are ignored. */
		if (info->nr_pfe < USFT_ELF_MAX_PFE) {
			info->pfe[info->nr_pfe].addr = sh->sh_addr;
			info->pfe[info->nr_pfe].size = sh->sh_size;
			info->nr_pfe++;
		}
	}
	if (sc->mode == SCAN_COUNT && sc->hi - sc->lo > UINT32_MAX)
		sc->keyable = false;
	return 0;
}

static int elf_sym_cmp(const void *a, const void *b)
{
	const struct usft_elf_sym *x = a, *y = b;
	int c;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	/* Keep the larger size first so deduplication keeps it. */
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return 0;
}

/* each run of one address (aliases, a few) by name and size */
static void elf_sort_alias_runs(struct usft_elf_sym *syms, size_t nr)
{
	size_t i, j, k;

	for (i = 0; i < nr; i = j) {
		for (j = i + 1; j < nr && syms[j].addr == syms[i].addr; j++)
			;
		if (j - i > 16) {
			qsort(syms + i, j - i, sizeof(*syms), elf_sym_cmp);
			continue;
		}
		for (k = i + 1; k < j; k++) {
			struct usft_elf_sym v = syms[k];
			size_t m = k;

			for (; m > i && elf_sym_cmp(&syms[m - 1], &v) > 0; m--)
				syms[m] = syms[m - 1];
			syms[m] = v;
		}
	}
}

#define ELF_KEY_BITS	11	/* radix digit of the key sort: 2048 counters, 16 KiB */

/*
 * An LSD radix sort of @nr keys whose top 32 bits are an offset of at most
 * @span, only over the offset's significant bits, ELF_KEY_BITS at a time,
 * between @src and @dst (@nr words each).  Stable.  Return: the array that
 * holds the sorted keys (@src after an even number of passes).
 */
static uint64_t *elf_radix_keys(uint64_t *src, uint64_t *dst, size_t nr, unsigned long span)
{
	unsigned int bits = span ? 64 - (unsigned int)__builtin_clzl(span) : 0;
	uint64_t *t;
	size_t i;

	for (unsigned int shift = 32; shift < 32 + bits; shift += ELF_KEY_BITS) {
		size_t count[(1U << ELF_KEY_BITS) + 1] = { 0 };
		const uint64_t mask = (1U << ELF_KEY_BITS) - 1;

		for (i = 0; i < nr; i++)
			count[((src[i] >> shift) & mask) + 1]++;
		for (size_t k = 0; k < (1U << ELF_KEY_BITS); k++)
			count[k + 1] += count[k];
		for (i = 0; i < nr; i++)
			dst[count[(src[i] >> shift) & mask]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	return src;
}

/*
 * The usual case of elf_sort_syms(): all addresses within 4 GiB of the
 * lowest, fewer than 2^32 symbols.  An LSD radix sort of 8-byte keys
 * (offset from the lowest address << 32 | index), only over the offset's
 * significant bits, 11 at a time (a 10^5-function program's 3 MB of text:
 * two passes), then one gather of the 24-byte symbols: a third of the
 * bytes the symbols' own radix sort moves.  Stable: one
 * address keeps its table order.  Return: false when the keys do not fit
 * or there is no memory (@syms untouched).
 */
static bool elf_sort_keys(struct usft_elf_sym *syms, size_t nr)
{
	unsigned long lo = syms[0].addr, hi = syms[0].addr;
	uint64_t *keys, *src;
	struct usft_elf_sym *out;
	size_t i;

	for (i = 1; i < nr; i++) {
		if (syms[i].addr < lo)
			lo = syms[i].addr;
		if (syms[i].addr > hi)
			hi = syms[i].addr;
	}
	if (hi - lo > UINT32_MAX || nr >= UINT32_MAX)
		return false;
	keys = malloc(2 * nr * sizeof(*keys));
	if (!keys)
		return false;
	for (i = 0; i < nr; i++)
		keys[i] = (uint64_t)(syms[i].addr - lo) << 32 | i;
	src = elf_radix_keys(keys, keys + nr, nr, hi - lo);
	/*
	 * Gathered into a second array and copied back: the loads of a gather
	 * are independent (a permutation in place, a cycle at a time, is a
	 * chain of dependent misses: slower, measured).
	 */
	out = malloc(nr * sizeof(*out));
	if (!out) {
		free(keys);
		return false;
	}
	for (i = 0; i < nr; i++)
		out[i] = syms[src[i] & UINT32_MAX];
	memcpy(syms, out, nr * sizeof(*syms));
	free(out);
	free(keys);
	return true;
}

/*
 * @syms in elf_sym_cmp() order.  Symbol tables are long (10^5 functions)
 * and not in address order (locals first, then the globals in the
 * linker's order: 14,571 descents in a 10^5-function program): a radix
 * sort by address (elf_sort_keys(); when the addresses span more than
 * 4 GiB, an LSD radix sort of the symbols themselves, a byte per pass,
 * passes whose byte all entries share skipped), then each run of one
 * address by name and size.  qsort() was most of the runtime's start-up.
 * Without memory for the second buffer, or for a long run of one address
 * (a hostile file), qsort().
 */
static void elf_sort_syms(struct usft_elf_sym *syms, size_t nr)
{
	struct usft_elf_sym *tmp, *src = syms, *dst, *t;
	size_t i, k;

	if (nr < 64) {
		qsort(syms, nr, sizeof(*syms), elf_sym_cmp);
		return;
	}
	if (elf_sort_keys(syms, nr)) {
		elf_sort_alias_runs(syms, nr);
		return;
	}
	if (!(tmp = malloc(nr * sizeof(*tmp)))) {
		qsort(syms, nr, sizeof(*syms), elf_sym_cmp);
		return;
	}
	dst = tmp;
	for (unsigned int shift = 0; shift < 64; shift += 8) {
		size_t count[257] = { 0 };

		for (i = 0; i < nr; i++)
			count[((src[i].addr >> shift) & 0xff) + 1]++;
		if (count[((src[0].addr >> shift) & 0xff) + 1] == nr)
			continue;
		for (k = 0; k < 256; k++)
			count[k + 1] += count[k];
		for (i = 0; i < nr; i++)
			dst[count[(src[i].addr >> shift) & 0xff]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != syms)
		memcpy(syms, src, nr * sizeof(*syms));
	free(tmp);
	elf_sort_alias_runs(syms, nr);
}

/*
 * The function symbols into @syms (@nr of them, counted by @sc's pass) in
 * address order, table order within one address, without a second array
 * of symbols: the keys of the SCAN_KEYS pass are radix-sorted with @syms
 * as the other buffer (24 bytes a symbol hold the 8 of a key), then each
 * symbol is read from its table straight into its place.  At 10^5
 * functions that touches 3.2 MB of fresh memory where collecting and
 * sorting the symbols themselves touched 6.4 MB, and a page touched first
 * is the dearest part of a start-up (a fault; in a VM an exit too).
 * Return: false when the keys cannot name every symbol or there is no
 * memory (@syms unwritten: the caller collects and sorts them itself).
 */
static bool elf_collect_sorted(struct elf_ctx *ctx, struct usft_elf_info *info,
			       struct elf_sym_scan *sc, struct usft_elf_sym *syms, size_t nr)
{
	uint64_t *keys, *sorted;
	Elf64_Sym sym;

	if (!sc->keyable)
		return false;
	keys = malloc(nr * sizeof(*keys));
	if (!keys)
		return false;
	usft_prefault_write(keys, nr * sizeof(*keys));
	sc->mode = SCAN_KEYS;
	sc->keys = keys;
	if (elf_scan_sections(ctx, info, sc) || sc->nr != nr) {
		free(keys);
		return false;
	}
	_Static_assert(sizeof(*syms) >= sizeof(*keys), "a symbol holds a key");
	sorted = elf_radix_keys(keys, (uint64_t *)syms, nr, sc->hi - sc->lo);
	if (sorted != keys)
		memcpy(keys, sorted, nr * sizeof(*keys));
	for (size_t p = 0; p < nr; p++) {
		unsigned int tab = (unsigned int)(keys[p] >> ELF_KEY_TAB_BIT) & 1;
		size_t entry = keys[p] & ((1UL << ELF_KEY_TAB_BIT) - 1);

		memcpy(&sym, sc->tabs[tab].buf + entry * sizeof(sym), sizeof(sym));
		syms[p].addr = sym.st_value;
		syms[p].size = sym.st_size;
		syms[p].name = sc->tabs[tab].strs + sym.st_name;
	}
	free(keys);
	return true;
}

/*
 * Sort (@by_addr: only each run of one address) and deduplicate @syms
 * (names still in libelf's data), then move every surviving name into one
 * owned block.
 */
static int elf_finish_syms(struct usft_elf_info *info,
			   struct usft_elf_sym *syms, size_t nr, bool by_addr)
{
	struct usft_elf_sym *shrunk;
	size_t i, n, bytes = 0, len;
	char *strings, *p;

	if (by_addr) {
		elf_sort_alias_runs(syms, nr);
	} else {
		/* a compiler writes a file's functions in address order: often sorted */
		for (i = 1; i < nr && elf_sym_cmp(&syms[i - 1], &syms[i]) <= 0; i++)
			;
		if (i < nr)
			elf_sort_syms(syms, nr);
	}
	for (i = 0, n = 0; i < nr; i++) {
		if (n && syms[n - 1].addr == syms[i].addr &&
		    !strcmp(syms[n - 1].name, syms[i].name))
			continue;
		syms[n++] = syms[i];
	}
	for (i = 0; i < n; i++) {
		len = strlen(syms[i].name) + 1;
		if (__builtin_add_overflow(bytes, len, &bytes))
			return -ENOMEM;
	}

	strings = malloc(bytes ? bytes : 1);
	if (!strings)
		return -ENOMEM;
	usft_prefault_write(strings, bytes);
	for (i = 0, p = strings; i < n; i++) {
		len = strlen(syms[i].name) + 1;
		memcpy(p, syms[i].name, len);
		syms[i].name = p;
		p += len;
	}

	if (n < nr) {
		shrunk = realloc(syms, n * sizeof(*syms));
		if (shrunk)
			syms = shrunk;
	}
	info->syms = syms;
	info->nr_syms = n;
	info->strings = strings;
	return 0;
}

static int elf_parse(void *image, size_t size, struct usft_elf_info *out)
{
	struct usft_elf_info info = { 0 };
	struct elf_ctx ctx = { 0 };
	struct usft_elf_sym *syms = NULL;
	struct elf_sym_scan sc = { 0 };
	Elf64_Ehdr *eh;
	Elf_Scn *scn;
	Elf64_Shdr *sh;
	const void *shstr;
	size_t n, nr;
	int err;

	err = elf_check_image(image, size, &ctx);
	if (err)
		return err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	ctx.elf = elf_memory(image, size);
	if (!ctx.elf)
		return -EINVAL;

	err = -EINVAL;
	if (elf_kind(ctx.elf) != ELF_K_ELF ||
	    gelf_getclass(ctx.elf) != ELFCLASS64)
		goto out_end;
	eh = elf64_getehdr(ctx.elf);
	if (!eh)
		goto out_end;
	/* libelf must agree with what was validated above. */
	if (elf_getshdrnum(ctx.elf, &n) || n != ctx.shnum)
		goto out_end;

	if (ctx.shnum) {
		if (elf_getshdrstrndx(ctx.elf, &n) || n != ctx.shstrndx)
			goto out_end;
		err = elf_get_shdr(&ctx, ctx.shstrndx, &scn, &sh);
		if (err)
			goto out_end;
		err = -EINVAL;
		if (sh->sh_type != SHT_STRTAB)
			goto out_end;
		err = elf_section_bytes(scn, sh, &shstr, &ctx.shstr_size);
		if (err)
			goto out_end;
		ctx.shstr = shstr;
	}

	sc.mode = SCAN_COUNT;
	err = elf_scan_sections(&ctx, &info, &sc);
	if (err)
		goto out_end;
	nr = sc.nr;
	if (nr) {
		/*
		 * In address order already (a compiler's own table): collected
		 * as they are.  Else sorted as they are collected, or, where
		 * that cannot be (elf_collect_sorted()), collected and sorted.
		 */
		bool by_addr = sc.ascending;

		err = -ENOMEM;
		syms = malloc(nr * sizeof(*syms));
		if (!syms)
			goto out_end;
		usft_prefault_write(syms, nr * sizeof(*syms));
		if (!by_addr && elf_collect_sorted(&ctx, &info, &sc, syms, nr)) {
			by_addr = true;
		} else {
			sc.mode = SCAN_FILL;
			sc.syms = syms;
			err = elf_scan_sections(&ctx, &info, &sc);
			if (err)
				goto out_syms;
			err = -EINVAL;
			if (sc.nr != nr)
				goto out_syms;
		}
		err = elf_finish_syms(&info, syms, nr, by_addr);
		if (err)
			goto out_syms;
	}

	info.pfe_entsize = ELF_PFE_ENTSIZE;
	info.is_dyn = eh->e_type == ET_DYN;
	info.machine = eh->e_machine;
	elf_end(ctx.elf);
	*out = info;
	return 0;

out_syms:
	free(syms);
out_end:
	elf_end(ctx.elf);
	return err;
}

/* Fallback for files that cannot be mapped: read them whole. */
static int elf_read_fd(int fd, size_t size, void **image)
{
	unsigned char *buf;
	size_t done = 0;
	ssize_t r;

	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	while (done < size) {
		r = pread(fd, buf + done, size - done, done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(buf);
			return -EINVAL;	/* I/O error or the file shrank */
		}
		done += r;
	}
	*image = buf;
	return 0;
}

int usft_elf_read(const char *path, struct usft_elf_info *out)
{
	struct stat st;
	void *image;
	bool mapped = true;
	size_t size;
	int fd, err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!path)
		return -EINVAL;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto out_close;
	}
	err = -EINVAL;
	size = (size_t)st.st_size;
	if (!S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (unsigned long long)st.st_size != size ||
	    size < sizeof(Elf64_Ehdr))
		goto out_close;

	/*
	 * A private writable mapping: libelf may convert in place and nothing
	 * reaches the file.  (A file truncated by someone else while mapped
	 * can still fault; objects a process has loaded are not rewritten.)
	 */
	image = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (image == MAP_FAILED) {
		if (errno == ENOMEM) {
			err = -ENOMEM;
			goto out_close;
		}
		mapped = false;
		err = elf_read_fd(fd, size, &image);
		if (err)
			goto out_close;
	}
	close(fd);

	err = elf_parse(image, size, out);
	if (mapped)
		munmap(image, size);
	else
		free(image);
	if (!err) {
		out->file_dev = st.st_dev;
		out->file_ino = st.st_ino;
		out->file_size = st.st_size;
		out->file_mtime = st.st_mtim;
	}
	return err;

out_close:
	close(fd);
	return err;
}

bool usft_elf_same_file(const struct usft_elf_info *info, int fd)
{
	struct stat st;

	return info && info->file_ino && !fstat(fd, &st) && st.st_dev == info->file_dev &&
	       st.st_ino == info->file_ino && st.st_size == info->file_size &&
	       st.st_mtim.tv_sec == info->file_mtime.tv_sec &&
	       st.st_mtim.tv_nsec == info->file_mtime.tv_nsec;
}

int usft_elf_read_mem(const void *image, size_t size,
		      struct usft_elf_info *out)
{
	void *copy;
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!image || size < sizeof(Elf64_Ehdr))
		return -EINVAL;

	copy = malloc(size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, image, size);
	err = elf_parse(copy, size, out);
	free(copy);
	return err;
}

void usft_elf_free(struct usft_elf_info *info)
{
	if (!info)
		return;
	free(info->syms);
	free(info->strings);
	memset(info, 0, sizeof(*info));
}

static bool elf_sym_contains(const struct usft_elf_sym *sym, unsigned long addr)
{
	return addr >= sym->addr && addr - sym->addr < (sym->size ? sym->size : 1);
}

/* the symbol containing @addr, @lo = the first entry starting above it */
static const struct usft_elf_sym *elf_sym_below(const struct usft_elf_sym *syms, size_t lo,
						unsigned long addr)
{
	size_t last, first, i;

	if (lo == 0)
		return NULL;
	last = lo - 1;

	/* Aliases share an address; the first (by name) that covers addr wins. */
	first = last;
	while (first > 0 && syms[first - 1].addr == syms[last].addr)
		first--;
	for (i = first; i <= last; i++)
		if (elf_sym_contains(&syms[i], addr))
			return &syms[i];

	for (i = 0; i < ELF_FIND_BACKTRACK && first > 0; i++) {
		first--;
		if (elf_sym_contains(&syms[first], addr))
			return &syms[first];
	}
	return NULL;
}

/* the first entry of [lo, hi) starting above @addr */
static size_t elf_sym_upper(const struct usft_elf_sym *syms, size_t lo, size_t hi,
			    unsigned long addr)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct usft_elf_sym *usft_elf_find_sym(const struct usft_elf_info *info,
					     unsigned long addr)
{
	if (!info || !info->syms || !info->nr_syms)
		return NULL;
	return elf_sym_below(info->syms, elf_sym_upper(info->syms, 0, info->nr_syms, addr), addr);
}

const struct usft_elf_sym *usft_elf_find_sym_next(const struct usft_elf_info *info,
						  unsigned long addr, size_t *cursor)
{
	const struct usft_elf_sym *syms;
	size_t lo, step, hi, nr;

	if (!info || !info->syms || !info->nr_syms)
		return NULL;
	syms = info->syms;
	nr = info->nr_syms;
	lo = *cursor;
	if (lo > nr || (lo && syms[lo - 1].addr > addr)) {
		lo = elf_sym_upper(syms, 0, nr, addr);	/* not ascending: from scratch */
	} else {
		/* gallop from the cursor: [lo, hi) holds the answer */
		for (step = 1, hi = lo; hi < nr && syms[hi].addr <= addr; step *= 2) {
			lo = hi + 1;
			hi = nr - hi > step ? hi + step : nr;
		}
		lo = elf_sym_upper(syms, lo, hi, addr);
	}
	*cursor = lo;
	return elf_sym_below(syms, lo, addr);
}
