// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_elf.c - runtime/elf: symbols and site-table ranges from
 * real objects (this test, libc, a -fpatchable-function-entry fixture) and
 * rejection of corrupt images without crashing (criterion forks per test).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "elf/elf.h"

#ifndef ELF_FIXTURE_PFE_PATH
#error "ELF_FIXTURE_PFE_PATH must name the elf_fixture_pfe executable"
#endif

/* Functions defined in elf-fixtures/pfe_fixture.c (main included). */
#define ELF_FIXTURE_NR_FUNCS 4
static const char *const fixture_funcs[ELF_FIXTURE_NR_FUNCS] = {
	"fixture_local", "fixture_global_a", "fixture_global_b", "main",
};

static __attribute__((noinline, used)) int local_fn(int x)
{
	/* Enough body that an address in the middle exists. */
	volatile int acc = x;

	for (int i = 0; i < x; i++)
		acc += i * 7;
	return acc;
}

__attribute__((noinline, used)) int elf_test_global_fn(int x)
{
	return local_fn(x) + 1;
}

/* -------------------------------------------------------------------------
 * helpers
 */

static unsigned char *load_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long len;

	cr_assert_not_null(f, "open %s: %s", path, strerror(errno));
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	cr_assert_gt(len, 0);
	rewind(f);
	buf = malloc(len);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, len, f), (size_t)len);
	fclose(f);
	*size = len;
	return buf;
}

static unsigned char *load_fixture(size_t *size)
{
	return load_file(ELF_FIXTURE_PFE_PATH, size);
}

static Elf64_Ehdr *ehdr_of(unsigned char *img)
{
	return (Elf64_Ehdr *)img;
}

static Elf64_Shdr *shdr_at(unsigned char *img, size_t idx)
{
	return (Elf64_Shdr *)(img + ehdr_of(img)->e_shoff) + idx;
}

/* First section of @type in a valid image; fails the test if absent. */
static Elf64_Shdr *shdr_by_type(unsigned char *img, uint32_t type)
{
	for (size_t i = 1; i < ehdr_of(img)->e_shnum; i++)
		if (shdr_at(img, i)->sh_type == type)
			return shdr_at(img, i);
	cr_assert_fail("no section of type %u", type);
	return NULL;
}

static bool info_is_zero(const struct usft_elf_info *info)
{
	static const struct usft_elf_info zero;

	return !memcmp(info, &zero, sizeof(zero));
}

/* Parse @img[0, @size) expecting -EINVAL and a zeroed result. */
static void expect_einval(const void *img, size_t size, const char *what)
{
	struct usft_elf_info info;
	int ret;

	memset(&info, 0xa5, sizeof(info));
	ret = usft_elf_read_mem(img, size, &info);
	cr_assert_eq(ret, -EINVAL, "%s: got %d", what, ret);
	cr_assert(info_is_zero(&info), "%s: out not zeroed", what);
}

static const struct usft_elf_sym *sym_by_name(const struct usft_elf_info *info,
					      const char *name)
{
	for (size_t i = 0; i < info->nr_syms; i++)
		if (!strcmp(info->syms[i].name, name))
			return &info->syms[i];
	return NULL;
}

static void assert_sorted_unique(const struct usft_elf_info *info)
{
	for (size_t i = 1; i < info->nr_syms; i++) {
		const struct usft_elf_sym *a = &info->syms[i - 1], *b = &info->syms[i];

		cr_assert(a->addr < b->addr ||
			  (a->addr == b->addr && strcmp(a->name, b->name) < 0),
			  "not sorted/unique at %zu: %#lx %s / %#lx %s", i,
			  a->addr, a->name, b->addr, b->name);
	}
	for (size_t i = 0; i < info->nr_syms; i++) {
		const char *n = info->syms[i].name;
		size_t len = strlen(info->syms[i].name);

		cr_assert_gt(len, 0);
		/* Names live in the owned block, not in a freed image. */
		cr_assert(n >= info->strings, "name outside the string block");
	}
}

static int main_bias_cb(struct dl_phdr_info *pi, size_t sz, void *data)
{
	*(uintptr_t *)data = pi->dlpi_addr;
	return 1;	/* the first object is the executable */
}

static uintptr_t main_load_bias(void)
{
	uintptr_t bias = 0;

	dl_iterate_phdr(main_bias_cb, &bias);
	return bias;
}

static char *libc_path(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096], *path = NULL;

	cr_assert_not_null(f);
	while (!path && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		line[strcspn(line, "\n")] = '\0';
		if (p && strstr(p, "libc.so.6"))
			path = strdup(p);
	}
	fclose(f);
	cr_assert_not_null(path, "libc.so.6 not mapped");
	return path;
}

/* -------------------------------------------------------------------------
 * real objects
 */

Test(usft_elf_read, self_has_static_and_global_functions)
{
	struct usft_elf_info info;
	const struct usft_elf_sym *l, *g;
	uintptr_t bias = main_load_bias();

	cr_assert_eq(usft_elf_read("/proc/self/exe", &info), 0);
	cr_assert_gt(info.nr_syms, 0);
	cr_assert_not_null(info.strings);
	assert_sorted_unique(&info);

	l = sym_by_name(&info, "local_fn");
	g = sym_by_name(&info, "elf_test_global_fn");
	cr_assert_not_null(l, "static function missing");
	cr_assert_not_null(g, "global function missing");
	cr_assert_eq(l->addr, (uintptr_t)&local_fn - bias);
	cr_assert_eq(g->addr, (uintptr_t)&elf_test_global_fn - bias);
	cr_assert_gt(l->size, 0);
	cr_assert_eq(info.pfe_entsize, 8);
	cr_assert_eq(info.nr_pfe, 0, "test binary is not built with patch flags");
	usft_elf_free(&info);
	cr_assert(info_is_zero(&info));
}

Test(usft_elf_read, self_machine_and_type)
{
	struct usft_elf_info info;
	size_t size;
	unsigned char *img = load_file("/proc/self/exe", &size);

	cr_assert_eq(usft_elf_read("/proc/self/exe", &info), 0);
	cr_assert_eq(info.machine, ehdr_of(img)->e_machine);
	cr_assert_eq(info.is_dyn, ehdr_of(img)->e_type == ET_DYN);
	usft_elf_free(&info);
	free(img);
}

Test(usft_elf_find_sym, finds_function_by_address_in_middle)
{
	struct usft_elf_info info;
	const struct usft_elf_sym *l, *s;
	uintptr_t bias = main_load_bias();

	cr_assert_eq(usft_elf_read("/proc/self/exe", &info), 0);
	l = sym_by_name(&info, "local_fn");
	cr_assert_not_null(l);
	cr_assert_gt(l->size, 2);

	s = usft_elf_find_sym(&info, (uintptr_t)&local_fn - bias + l->size / 2);
	cr_assert_not_null(s);
	cr_assert_str_eq(s->name, "local_fn");
	s = usft_elf_find_sym(&info, l->addr);
	cr_assert_str_eq(s->name, "local_fn");
	s = usft_elf_find_sym(&info, l->addr + l->size - 1);
	cr_assert_str_eq(s->name, "local_fn");
	s = usft_elf_find_sym(&info, l->addr + l->size);
	cr_assert(!s || strcmp(s->name, "local_fn"));
	usft_elf_free(&info);
}

Test(usft_elf_read, pfe_fixture_has_one_range_of_all_functions)
{
	struct usft_elf_info info;

	cr_assert_eq(usft_elf_read(ELF_FIXTURE_PFE_PATH, &info), 0);
	cr_assert_eq(info.nr_pfe, 1);
	cr_assert_eq(info.pfe_entsize, 8);
	cr_assert_eq(info.pfe[0].size, 8 * ELF_FIXTURE_NR_FUNCS,
		     "size %lu", info.pfe[0].size);
	cr_assert_neq(info.pfe[0].addr, 0);
	/* The table is data, not code. */
	cr_assert_null(usft_elf_find_sym(&info, info.pfe[0].addr));
	for (int i = 0; i < ELF_FIXTURE_NR_FUNCS; i++)
		cr_assert_not_null(sym_by_name(&info, fixture_funcs[i]),
				   "%s missing", fixture_funcs[i]);
	assert_sorted_unique(&info);
	usft_elf_free(&info);
}

Test(usft_elf_read_mem, matches_file_read)
{
	struct usft_elf_info a, b;
	size_t size;
	unsigned char *img = load_fixture(&size);

	cr_assert_eq(usft_elf_read(ELF_FIXTURE_PFE_PATH, &a), 0);
	cr_assert_eq(usft_elf_read_mem(img, size, &b), 0);
	/* The result must not point into the caller's buffer. */
	memset(img, 0, size);
	free(img);
	cr_assert_eq(a.nr_syms, b.nr_syms);
	cr_assert_eq(a.nr_pfe, b.nr_pfe);
	cr_assert_eq(a.pfe[0].addr, b.pfe[0].addr);
	cr_assert_eq(a.pfe[0].size, b.pfe[0].size);
	cr_assert_eq(a.is_dyn, b.is_dyn);
	cr_assert_eq(a.machine, b.machine);
	for (size_t i = 0; i < a.nr_syms; i++) {
		cr_assert_eq(a.syms[i].addr, b.syms[i].addr);
		cr_assert_eq(a.syms[i].size, b.syms[i].size);
		cr_assert_str_eq(a.syms[i].name, b.syms[i].name);
	}
	usft_elf_free(&a);
	usft_elf_free(&b);
}

Test(usft_elf_read, libc_parses_and_has_malloc)
{
	struct usft_elf_info info;
	const struct usft_elf_sym *m, *s;
	char *path = libc_path();

	cr_assert_eq(usft_elf_read(path, &info), 0, "%s", path);
	cr_assert_eq(info.is_dyn, 1);
	m = sym_by_name(&info, "malloc");
	cr_assert_not_null(m, "malloc missing from %s", path);
	cr_assert_gt(m->size, 0);
	assert_sorted_unique(&info);
	/* Aliases at malloc's address may win, but something must cover it. */
	s = usft_elf_find_sym(&info, m->addr + m->size / 2);
	cr_assert_not_null(s);
	cr_assert_eq(s->addr, m->addr);
	usft_elf_free(&info);
	free(path);
}

Test(usft_elf_read, nonexistent_path_is_enoent)
{
	struct usft_elf_info info;

	memset(&info, 0xa5, sizeof(info));
	cr_assert_eq(usft_elf_read("/nonexistent/usft/no-such-file", &info), -ENOENT);
	cr_assert(info_is_zero(&info));
}

Test(usft_elf_read, directory_and_empty_file_are_einval)
{
	struct usft_elf_info info;

	cr_assert_eq(usft_elf_read("/", &info), -EINVAL);
	cr_assert(info_is_zero(&info));
	/* Regular file of size 0 per stat. */
	cr_assert_eq(usft_elf_read("/proc/self/status", &info), -EINVAL);
	cr_assert(info_is_zero(&info));
	cr_assert_eq(usft_elf_read(NULL, &info), -EINVAL);
	cr_assert_eq(usft_elf_read("/", NULL), -EINVAL);
}

/* -------------------------------------------------------------------------
 * corrupt input
 */

Test(usft_elf_read_mem, empty_and_null_buffers)
{
	unsigned char byte = 0x7f;

	expect_einval(&byte, 0, "empty");
	expect_einval(&byte, 1, "one byte");
	expect_einval(NULL, 0, "NULL/0");
	expect_einval(NULL, 4096, "NULL/4096");
	cr_assert_eq(usft_elf_read_mem(&byte, 1, NULL), -EINVAL);
}

Test(usft_elf_read_mem, random_bytes)
{
	unsigned char buf[4096];
	struct usft_elf_info info;
	unsigned int seed = 12345;

	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = rand_r(&seed);
		expect_einval(buf, sizeof(buf), "random");

		/* Plausible ident and type, random everything else. */
		memcpy(buf, ELFMAG, SELFMAG);
		buf[EI_CLASS] = ELFCLASS64;
		buf[EI_DATA] = ELFDATA2LSB;
		buf[EI_VERSION] = EV_CURRENT;
		((Elf64_Ehdr *)buf)->e_type = round & 1 ? ET_DYN : ET_EXEC;
		int ret = usft_elf_read_mem(buf, sizeof(buf), &info);

		cr_assert(ret == 0 || ret == -EINVAL, "ret %d", ret);
		usft_elf_free(&info);
	}
}

Test(usft_elf_read_mem, truncated_images)
{
	struct usft_elf_info info;
	size_t size, len;
	unsigned char *img = load_fixture(&size);
	char what[64];

	for (len = 0; len < size; len += 64) {
		snprintf(what, sizeof(what), "truncated at %zu", len);
		expect_einval(img, len, what);
	}
	/* Every length close to the end, where the section table lives. */
	for (len = size > 512 ? size - 512 : 0; len < size; len++) {
		snprintf(what, sizeof(what), "truncated at %zu", len);
		expect_einval(img, len, what);
	}
	cr_assert_eq(usft_elf_read_mem(img, size, &info), 0);
	usft_elf_free(&info);
	free(img);
}

Test(usft_elf_read_mem, elf32_header)
{
	Elf32_Ehdr eh = { 0 };
	unsigned char buf[4096] = { 0 };

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS32;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_386;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	memcpy(buf, &eh, sizeof(eh));
	expect_einval(buf, sizeof(buf), "ELFCLASS32");
	expect_einval(buf, sizeof(eh), "ELFCLASS32 header only");
}

Test(usft_elf_read_mem, wrong_ident_or_type)
{
	size_t size;
	unsigned char *img = load_fixture(&size);
	unsigned char *c = malloc(size);

	memcpy(c, img, size);
	c[EI_DATA] = c[EI_DATA] == ELFDATA2LSB ? ELFDATA2MSB : ELFDATA2LSB;
	expect_einval(c, size, "foreign byte order");

	memcpy(c, img, size);
	c[EI_CLASS] = ELFCLASS32;
	expect_einval(c, size, "class 32 on a 64-bit image");

	memcpy(c, img, size);
	c[1] = 'F';
	expect_einval(c, size, "bad magic");

	memcpy(c, img, size);
	ehdr_of(c)->e_type = ET_REL;
	expect_einval(c, size, "ET_REL");

	memcpy(c, img, size);
	ehdr_of(c)->e_type = ET_CORE;
	expect_einval(c, size, "ET_CORE");
	free(c);
	free(img);
}

Test(usft_elf_read_mem, shoff_past_end)
{
	size_t size;
	unsigned char *img = load_fixture(&size);

	ehdr_of(img)->e_shoff = size;
	expect_einval(img, size, "e_shoff == size");
	ehdr_of(img)->e_shoff = size + 4096;
	expect_einval(img, size, "e_shoff past end");
	ehdr_of(img)->e_shoff = UINT64_MAX - 8;
	expect_einval(img, size, "e_shoff near UINT64_MAX");
	ehdr_of(img)->e_shoff = size - sizeof(Elf64_Shdr);
	expect_einval(img, size, "table runs past end");
	ehdr_of(img)->e_shoff = 4;
	expect_einval(img, size, "misaligned table");
	free(img);
}

Test(usft_elf_read_mem, shnum_huge)
{
	size_t size;
	unsigned char *img = load_fixture(&size);
	uint16_t shnum = ehdr_of(img)->e_shnum;

	ehdr_of(img)->e_shnum = 0xfeff;
	expect_einval(img, size, "e_shnum 0xfeff");
	ehdr_of(img)->e_shnum = shnum + 1;
	expect_einval(img, size, "e_shnum + 1");

	/* Extended numbering: count in section 0's sh_size. */
	ehdr_of(img)->e_shnum = 0;
	shdr_at(img, 0)->sh_size = UINT64_MAX;
	expect_einval(img, size, "extended shnum UINT64_MAX");
	shdr_at(img, 0)->sh_size = 0;
	expect_einval(img, size, "e_shnum 0 without extension");
	free(img);
}

Test(usft_elf_read_mem, extended_numbering_is_accepted)
{
	struct usft_elf_info info;
	size_t size;
	unsigned char *img = load_fixture(&size);
	uint16_t shnum = ehdr_of(img)->e_shnum, shstrndx = ehdr_of(img)->e_shstrndx;

	ehdr_of(img)->e_shnum = 0;
	ehdr_of(img)->e_shstrndx = SHN_XINDEX;
	shdr_at(img, 0)->sh_size = shnum;
	shdr_at(img, 0)->sh_link = shstrndx;
	cr_assert_eq(usft_elf_read_mem(img, size, &info), 0);
	cr_assert_eq(info.nr_pfe, 1);
	usft_elf_free(&info);

	shdr_at(img, 0)->sh_link = shnum;
	expect_einval(img, size, "extended shstrndx out of range");
	free(img);
}

Test(usft_elf_read_mem, shstrndx_bad)
{
	size_t size;
	unsigned char *img = load_fixture(&size);
	Elf64_Ehdr *eh = ehdr_of(img);
	uint16_t keep = eh->e_shstrndx;

	eh->e_shstrndx = eh->e_shnum;
	expect_einval(img, size, "shstrndx == shnum");
	eh->e_shstrndx = 0;
	expect_einval(img, size, "shstrndx 0");
	/* Points at the symbol table, not a string table. */
	eh->e_shstrndx = shdr_by_type(img, SHT_SYMTAB) - shdr_at(img, 0);
	expect_einval(img, size, "shstrndx not a STRTAB");
	eh->e_shstrndx = keep;
	shdr_at(img, keep)->sh_name = shdr_at(img, keep)->sh_size;
	expect_einval(img, size, "sh_name past shstrtab");
	free(img);
}

Test(usft_elf_read_mem, section_extent_past_end)
{
	size_t size;
	unsigned char *img = load_fixture(&size);
	unsigned char *c = malloc(size);
	Elf64_Shdr *sh;

	memcpy(c, img, size);
	sh = shdr_by_type(c, SHT_STRTAB);
	sh->sh_offset = size;
	sh->sh_size = 1;
	expect_einval(c, size, "strtab offset past end");

	memcpy(c, img, size);
	sh = shdr_by_type(c, SHT_SYMTAB);
	sh->sh_size = UINT64_MAX - 16;
	expect_einval(c, size, "symtab size huge");

	memcpy(c, img, size);
	sh = shdr_by_type(c, SHT_SYMTAB);
	sh->sh_size -= 1;
	expect_einval(c, size, "symtab size not a multiple of the entry");

	memcpy(c, img, size);
	ehdr_of(c)->e_phoff = size - 8;
	expect_einval(c, size, "program headers past end");
	free(c);
	free(img);
}

Test(usft_elf_read_mem, symtab_link_out_of_range)
{
	size_t size;
	unsigned char *img = load_fixture(&size);
	unsigned char *c = malloc(size);
	Elf64_Shdr *sh;
	uint32_t links[] = { 0, ehdr_of(img)->e_shnum, ehdr_of(img)->e_shnum + 100,
			     0xffff, 0xffffffffu };

	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		memcpy(c, img, size);
		shdr_by_type(c, SHT_SYMTAB)->sh_link = links[i];
		expect_einval(c, size, "symtab sh_link out of range");
		memcpy(c, img, size);
		shdr_by_type(c, SHT_DYNSYM)->sh_link = links[i];
		expect_einval(c, size, "dynsym sh_link out of range");
	}
	/* In range but not a string table: the symbol table itself. */
	memcpy(c, img, size);
	sh = shdr_by_type(c, SHT_SYMTAB);
	sh->sh_link = sh - shdr_at(c, 0);
	expect_einval(c, size, "symtab sh_link to itself");
	free(c);
	free(img);
}

Test(usft_elf_read_mem, st_name_past_strtab)
{
	size_t size;
	unsigned char *img = load_fixture(&size);
	unsigned char *c = malloc(size);
	Elf64_Shdr *sh, *str;
	Elf64_Sym *syms;
	size_t nsym, victim = 0;

	/* Pick a function symbol of .symtab. */
	sh = shdr_by_type(img, SHT_SYMTAB);
	syms = (Elf64_Sym *)(img + sh->sh_offset);
	nsym = sh->sh_size / sizeof(*syms);
	for (size_t i = 0; i < nsym && !victim; i++)
		if (ELF64_ST_TYPE(syms[i].st_info) == STT_FUNC && syms[i].st_shndx)
			victim = i;
	cr_assert_neq(victim, 0);
	str = shdr_at(img, sh->sh_link);

	uint32_t offs[] = { str->sh_size, str->sh_size + 1, str->sh_size + 4096,
			    0xffffffffu };
	for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
		memcpy(c, img, size);
		((Elf64_Sym *)(c + sh->sh_offset))[victim].st_name = offs[k];
		expect_einval(c, size, "st_name past strtab");
	}
	/* A non-function symbol (the last) is checked too. */
	memcpy(c, img, size);
	((Elf64_Sym *)(c + sh->sh_offset))[nsym - 1].st_name = str->sh_size;
	((Elf64_Sym *)(c + sh->sh_offset))[nsym - 1].st_info = ELF64_ST_INFO(STB_LOCAL, STT_OBJECT);
	expect_einval(c, size, "object st_name past strtab");

	/* Unterminated last string of .strtab. */
	memcpy(c, img, size);
	c[str->sh_offset + str->sh_size - 1] = 'x';
	expect_einval(c, size, "unterminated strtab");

	/* st_shndx naming no section. */
	memcpy(c, img, size);
	((Elf64_Sym *)(c + sh->sh_offset))[victim].st_shndx = ehdr_of(c)->e_shnum;
	expect_einval(c, size, "st_shndx out of range");
	free(c);
	free(img);
}

Test(usft_elf_read_mem, pfe_size_not_entry_multiple)
{
	size_t size;
	unsigned char *img = load_fixture(&size);
	Elf64_Shdr *shstr = shdr_at(img, ehdr_of(img)->e_shstrndx);
	Elf64_Shdr *pfe = NULL;

	for (size_t i = 1; i < ehdr_of(img)->e_shnum; i++) {
		Elf64_Shdr *sh = shdr_at(img, i);

		if (!strcmp((char *)img + shstr->sh_offset + sh->sh_name,
			    "__patchable_function_entries"))
			pfe = sh;
	}
	cr_assert_not_null(pfe);
	pfe->sh_size -= 4;
	expect_einval(img, size, "pfe size % 8");
	free(img);
}

/*
 * Byte mutations concentrated on the headers and the symbol tables: the
 * reader must answer 0 or -EINVAL and never crash or leak (ASan build).
 */
Test(usft_elf_read_mem, mutation_fuzz, .timeout = 60)
{
	static const unsigned char special[] = { 0, 1, 0x7f, 0x80, 0xff };
	struct usft_elf_info info;
	size_t size;
	unsigned char *img = load_fixture(&size);
	unsigned char *c = malloc(size);
	Elf64_Shdr *symtab = shdr_by_type(img, SHT_SYMTAB);
	size_t shoff = ehdr_of(img)->e_shoff;
	size_t shsize = ehdr_of(img)->e_shnum * sizeof(Elf64_Shdr);
	unsigned int seed = 777;
	int ok = 0, bad = 0;

	for (int iter = 0; iter < 4000; iter++) {
		int nmut = 1 + rand_r(&seed) % 6;

		memcpy(c, img, size);
		for (int m = 0; m < nmut; m++) {
			size_t pos;

			switch (rand_r(&seed) % 4) {
			case 0:
				pos = rand_r(&seed) % sizeof(Elf64_Ehdr);
				break;
			case 1:
				pos = shoff + rand_r(&seed) % shsize;
				break;
			case 2:
				pos = symtab->sh_offset + rand_r(&seed) % symtab->sh_size;
				break;
			default:
				pos = rand_r(&seed) % size;
				break;
			}
			c[pos] = rand_r(&seed) & 1 ? special[rand_r(&seed) % sizeof(special)]
						   : (unsigned char)rand_r(&seed);
		}
		int ret = usft_elf_read_mem(c, size, &info);

		cr_assert(ret == 0 || ret == -EINVAL, "iter %d: ret %d", iter, ret);
		if (ret == 0) {
			ok++;
			assert_sorted_unique(&info);
			cr_assert_leq(info.nr_pfe, USFT_ELF_MAX_PFE);
			usft_elf_free(&info);
		} else {
			bad++;
			cr_assert(info_is_zero(&info));
		}
	}
	cr_assert_gt(ok, 0);
	cr_assert_gt(bad, 0);
	free(c);
	free(img);
}

/* -------------------------------------------------------------------------
 * find_sym and free on hand-made tables
 */

Test(usft_elf_find_sym, synthetic_table)
{
	struct usft_elf_sym syms[] = {
		{ 0x1000, 0x10, "a" },
		{ 0x1010, 0, "b0" },	/* size 0: covers 0x1010 only */
		{ 0x1020, 0x20, "c_alias" },
		{ 0x1020, 0x20, "c" },
		{ 0x2000, 0x100, "outer" },
		{ 0x2010, 0, "inner_label" },
	};
	/* keep the table sorted by (addr, name) */
	struct usft_elf_sym sorted[] = {
		syms[0], syms[1], syms[3], syms[2], syms[4], syms[5],
	};
	struct usft_elf_info info = { .syms = sorted, .nr_syms = 6 };
	const struct usft_elf_sym *s;

	cr_assert_null(usft_elf_find_sym(&info, 0xfff));
	cr_assert_str_eq(usft_elf_find_sym(&info, 0x1000)->name, "a");
	cr_assert_str_eq(usft_elf_find_sym(&info, 0x100f)->name, "a");
	cr_assert_str_eq(usft_elf_find_sym(&info, 0x1010)->name, "b0");
	cr_assert_null(usft_elf_find_sym(&info, 0x1011));
	cr_assert_null(usft_elf_find_sym(&info, 0x101f));
	s = usft_elf_find_sym(&info, 0x1030);
	cr_assert_str_eq(s->name, "c", "first alias by name");
	cr_assert_null(usft_elf_find_sym(&info, 0x1040));
	cr_assert_str_eq(usft_elf_find_sym(&info, 0x2010)->name, "inner_label");
	cr_assert_str_eq(usft_elf_find_sym(&info, 0x2050)->name, "outer");
	cr_assert_null(usft_elf_find_sym(&info, 0x2100));
	cr_assert_null(usft_elf_find_sym(&info, ~0ul));

	struct usft_elf_sym top = { ~0ul - 1, 0x100, "top" };
	struct usft_elf_info wrap = { .syms = &top, .nr_syms = 1 };

	cr_assert_not_null(usft_elf_find_sym(&wrap, ~0ul));
	cr_assert_null(usft_elf_find_sym(&wrap, 0));
}

Test(usft_elf_find_sym, empty_and_null)
{
	struct usft_elf_info info = { 0 };

	cr_assert_null(usft_elf_find_sym(NULL, 0x1000));
	cr_assert_null(usft_elf_find_sym(&info, 0x1000));
}

Test(usft_elf_free, idempotent)
{
	struct usft_elf_info info;

	usft_elf_free(NULL);
	cr_assert_eq(usft_elf_read(ELF_FIXTURE_PFE_PATH, &info), 0);
	usft_elf_free(&info);
	cr_assert(info_is_zero(&info));
	usft_elf_free(&info);
	cr_assert(info_is_zero(&info));
}

/*
 * usft_elf_find_sym_next() (the site walk of records.c) answers as
 * usft_elf_find_sym() does, for ascending addresses (every symbol's start,
 * middle and end, gaps, before the first and after the last), and when
 * the addresses go back (the cursor is then ignored).
 */
Test(usft_elf_find_sym, next_agrees_with_the_binary_search)
{
	struct usft_elf_info info;
	char *path = libc_path();
	size_t cursor = 0, n, k = 0;
	unsigned long *addrs;

	cr_assert_eq(usft_elf_read(path, &info), 0, "%s", path);
	cr_assert_gt(info.nr_syms, 1000);
	n = info.nr_syms * 4 + 2;
	addrs = malloc(n * sizeof(*addrs));
	cr_assert_not_null(addrs);
	addrs[k++] = info.syms[0].addr ? info.syms[0].addr - 1 : 0;
	for (size_t i = 0; i < info.nr_syms; i++) {
		const struct usft_elf_sym *s = &info.syms[i];

		addrs[k++] = s->addr;
		addrs[k++] = s->addr + s->size / 2;
		addrs[k++] = s->addr + (s->size ? s->size - 1 : 0);
		addrs[k++] = s->addr + s->size + 1;	/* a gap, or the next symbol */
	}
	addrs[k++] = info.syms[info.nr_syms - 1].addr + (1UL << 20);
	/* ascending (the walk records.c makes), then the same again: backwards */
	for (int pass = 0; pass < 2; pass++) {
		unsigned long last = 0;

		for (size_t i = 0; i < k; i++) {
			unsigned long a = addrs[i];

			if (a < last)
				continue;	/* a nested symbol's end: keep ascending */
			last = a;
			cr_assert_eq(usft_elf_find_sym_next(&info, a, &cursor),
				     usft_elf_find_sym(&info, a), "%#lx", a);
		}
	}
	for (size_t i = k; i-- > 0;)
		cr_assert_eq(usft_elf_find_sym_next(&info, addrs[i], &cursor),
			     usft_elf_find_sym(&info, addrs[i]), "%#lx (descending)", addrs[i]);
	free(addrs);
	usft_elf_free(&info);
	free(path);
}

/*
 * The symbol table's order: usft_elf_read_mem() gives what sorting every
 * defined, named function symbol of every symbol table by (address, name,
 * larger size first) and dropping repeats of one (address, name) gives,
 * whichever way it collects them: tables in address order as they are,
 * others sorted as they are read, and, where its sort keys cannot name
 * every symbol (a third table, a span over 4 GiB), collected and sorted.
 */
static int ref_cmp(const void *a, const void *b)
{
	const struct usft_elf_sym *x = a, *y = b;
	int c;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->size == y->size ? 0 : x->size > y->size ? -1 : 1;
}

static struct usft_elf_sym *ref_syms(unsigned char *img, size_t *nr)
{
	struct usft_elf_sym *out = NULL;
	size_t n = 0, cap = 0, w = 0;

	for (size_t i = 1; i < ehdr_of(img)->e_shnum; i++) {
		Elf64_Shdr *sh = shdr_at(img, i), *str;

		if (sh->sh_type != SHT_SYMTAB && sh->sh_type != SHT_DYNSYM)
			continue;
		str = shdr_at(img, sh->sh_link);
		for (size_t k = 0; k < sh->sh_size / sizeof(Elf64_Sym); k++) {
			Elf64_Sym s;
			const char *name;
			unsigned int t;

			memcpy(&s, img + sh->sh_offset + k * sizeof(s), sizeof(s));
			name = (const char *)img + str->sh_offset + s.st_name;
			t = ELF64_ST_TYPE(s.st_info);
			if ((t != STT_FUNC && t != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || !name[0])
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 1024;
				out = realloc(out, cap * sizeof(*out));
				cr_assert_not_null(out);
			}
			out[n].addr = s.st_value;
			out[n].size = s.st_size;
			out[n++].name = name;
		}
	}
	qsort(out, n, sizeof(*out), ref_cmp);
	for (size_t i = 0; i < n; i++)
		if (!w || out[w - 1].addr != out[i].addr || strcmp(out[w - 1].name, out[i].name))
			out[w++] = out[i];
	*nr = w;
	return out;
}

static void expect_ref_order(unsigned char *img, size_t size, const char *what)
{
	struct usft_elf_info info;
	struct usft_elf_sym *ref;
	size_t n;

	cr_assert_eq(usft_elf_read_mem(img, size, &info), 0, "%s", what);
	ref = ref_syms(img, &n);
	cr_assert_gt(n, 10, "%s", what);
	cr_assert_eq(info.nr_syms, n, "%s: %zu symbols, the reference has %zu", what,
		     info.nr_syms, n);
	for (size_t i = 0; i < n; i++)
		cr_assert(info.syms[i].addr == ref[i].addr && info.syms[i].size == ref[i].size &&
			  !strcmp(info.syms[i].name, ref[i].name),
			  "%s: symbol %zu is %#lx %s (%lu), the reference's %#lx %s (%lu)", what, i,
			  info.syms[i].addr, info.syms[i].name, info.syms[i].size, ref[i].addr,
			  ref[i].name, ref[i].size);
	free(ref);
	usft_elf_free(&info);
}

/* the first symbol table's first defined function symbol */
static Elf64_Sym *first_func(unsigned char *img)
{
	Elf64_Shdr *sh = shdr_by_type(img, SHT_SYMTAB);

	for (size_t k = 0; k < sh->sh_size / sizeof(Elf64_Sym); k++) {
		Elf64_Sym *s = (Elf64_Sym *)(img + sh->sh_offset) + k;

		if (ELF64_ST_TYPE(s->st_info) == STT_FUNC && s->st_shndx != SHN_UNDEF && s->st_name)
			return s;
	}
	cr_assert_fail("no function symbol");
	return NULL;
}

Test(usft_elf_read_mem, symbols_in_order_whichever_way_collected)
{
	size_t size, lsize;
	unsigned char *img = load_file("/proc/self/exe", &size), *copy;
	char *path = libc_path();
	unsigned char *libc = load_file(path, &lsize);
	Elf64_Shdr *symtab, *spare = NULL;

	/* .symtab (locals first: not in address order) and .dynsym: two tables */
	expect_ref_order(img, size, "this test's file");
	/* .dynsym only, in hash order */
	expect_ref_order(libc, lsize, path);

	/* a third table (a section header made a copy of .symtab's): no keys */
	copy = malloc(size);
	cr_assert_not_null(copy);
	memcpy(copy, img, size);
	symtab = shdr_by_type(copy, SHT_SYMTAB);
	for (size_t i = 1; i < ehdr_of(copy)->e_shnum && !spare; i++)
		if (shdr_at(copy, i)->sh_type == SHT_PROGBITS &&
		    !(shdr_at(copy, i)->sh_flags & SHF_ALLOC))
			spare = shdr_at(copy, i);	/* .comment, say */
	cr_assert_not_null(spare, "no unallocated PROGBITS section to reuse");
	{
		uint32_t name = spare->sh_name;

		*spare = *symtab;
		spare->sh_name = name;
	}
	expect_ref_order(copy, size, "three symbol tables");

	/* a function 8 GiB above the rest: a span no key offset holds */
	memcpy(copy, img, size);
	first_func(copy)->st_value += 8UL << 30;
	expect_ref_order(copy, size, "a span over 4 GiB");
	free(copy);
	free(libc);
	free(path);
	free(img);
}
