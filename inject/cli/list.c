// SPDX-License-Identifier: MIT
/*
 * inject/cli/list.c - `usft list -f PROG`: the patchable functions of a
 * program and of the libraries it loads (the kernel's
 * available_filter_functions, "func [object]" for functions outside the
 * program itself), read from the files: __patchable_function_entries
 * (applying RELATIVE relocations when the linker left the slots zero) and
 * the symbol tables (runtime/elf).
 *
 * The libraries are found by reading files only, with the dynamic
 * loader's search rules (deps.c): nothing the user names is ever run.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elf/elf.h"
#include "cli.h"

#ifndef R_X86_64_RELATIVE
#define R_X86_64_RELATIVE	8
#endif
#ifndef R_AARCH64_RELATIVE
#define R_AARCH64_RELATIVE	1027
#endif

struct sites {
	unsigned long *addr;	/* link-time addresses */
	size_t n, cap;
};

static void sites_add(struct sites *s, unsigned long a)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		void *p = realloc(s->addr, cap * sizeof(*s->addr));

		if (!p)
			return;
		s->addr = p;
		s->cap = cap;
	}
	s->addr[s->n++] = a;
}

/* the entries of every __patchable_function_entries section of @path */
static int read_sites(const char *path, struct sites *out)
{
	GElf_Shdr pfe[8];
	Elf_Data *pfe_data[8];
	size_t shstrndx, npfe = 0;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	Elf *elf;
	int fd, ret = 0;

	ret = usft_cli_elf_open(path, &fd, &elf);
	if (ret)
		return ret;
	if (!gelf_getehdr(elf, &eh) || elf_getshdrstrndx(elf, &shstrndx)) {
		ret = -EINVAL;
		goto out;
	}
	while ((scn = elf_nextscn(elf, scn)) && npfe < 8) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, "__patchable_function_entries") || sh.sh_type == SHT_NOBITS)
			continue;
		pfe[npfe] = sh;
		pfe_data[npfe] = elf_getdata(scn, NULL);
		if (pfe_data[npfe])
			npfe++;
	}
	for (size_t k = 0; k < npfe; k++) {
		size_t n = pfe_data[k]->d_size / 8;
		unsigned long *v = calloc(n ? n : 1, sizeof(*v));

		if (!v)
			break;
		memcpy(v, pfe_data[k]->d_buf, n * 8);
		/* slots the linker left for the loader: take the RELATIVE addends */
		scn = NULL;
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA ||
			    !(d = elf_getdata(scn, NULL)) || !sh.sh_entsize)
				continue;
			for (size_t r = 0; r < sh.sh_size / sh.sh_entsize; r++) {
				GElf_Rela rela;
				unsigned long t;

				if (!gelf_getrela(d, (int)r, &rela))
					break;
				t = GELF_R_TYPE(rela.r_info);
				if ((t == R_X86_64_RELATIVE && eh.e_machine == EM_X86_64) ||
				    (t == R_AARCH64_RELATIVE && eh.e_machine == EM_AARCH64)) {
					if (rela.r_offset >= pfe[k].sh_addr &&
					    rela.r_offset < pfe[k].sh_addr + n * 8 &&
					    !v[(rela.r_offset - pfe[k].sh_addr) / 8])
						v[(rela.r_offset - pfe[k].sh_addr) / 8] = rela.r_addend;
				}
			}
		}
		for (size_t i = 0; i < n; i++)
			if (v[i])
				sites_add(out, v[i]);
		free(v);
	}
out:
	elf_end(elf);
	close(fd);
	return ret;
}

int usft_prog_interp(const char *path, char *interp, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = -1;
	GElf_Ehdr eh;
	size_t nph;
	Elf *elf;

	interp[0] = 0;
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, &eh) &&
	    !elf_getphdrnum(elf, &nph)) {
		ret = 0;
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			size_t flen;
			char *raw;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_INTERP)
				continue;
			raw = elf_rawfile(elf, &flen);
			if (raw && ph.p_offset < flen && ph.p_filesz < len &&
			    ph.p_filesz <= flen - ph.p_offset) {
				snprintf(interp, len, "%.*s", (int)ph.p_filesz, raw + ph.p_offset);
				ret = interp[0] ? 1 : 0;
			}
		}
		if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
			ret = -1;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

/*
 * libtool's wrapper script (a shell script in the build directory that sets
 * the library path and execs .libs/lt-NAME or .libs/NAME): the real program
 * next to it.  Read, never run.  Return: 0 with @out set, or -1.
 */
int usft_libtool_target(const char *path, char *out, size_t len)
{
	static const char *const names[] = { "%.*s.libs/lt-%s", "%.*s.libs/%s" };
	char head[4096];
	const char *base = strrchr(path, '/');
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, head, sizeof(head) - 1);
	close(fd);
	if (n < 2 || head[0] != '#' || head[1] != '!')
		return -1;
	head[n] = 0;
	if (!strstr(head, "libtool"))
		return -1;
	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct stat st;

		if (snprintf(out, len, names[i], (int)(base - path), path, base) < (int)len &&
		    !stat(out, &st) && S_ISREG(st.st_mode) && usft_prog_interp(out, head, sizeof(head)) >= 0)
			return 0;
	}
	return -1;
}

static int cmp_ul(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/* print the functions of one object; Return: how many */
static size_t list_object(const char *path, bool is_main, const char *glob, FILE *out)
{
	struct usft_elf_info info;
	struct sites s = { 0 };
	const char *base = strrchr(path, '/');
	const struct usft_elf_sym *last = NULL;
	size_t n = 0;

	base = base ? base + 1 : path;
	if (read_sites(path, &s) || !s.n) {
		free(s.addr);
		return 0;
	}
	if (usft_elf_read(path, &info)) {
		free(s.addr);
		return 0;
	}
	qsort(s.addr, s.n, sizeof(*s.addr), cmp_ul);
	for (size_t i = 0; i < s.n; i++) {
		const struct usft_elf_sym *sym = usft_elf_find_sym(&info, s.addr[i]);

		if (!sym || sym == last)
			continue;
		last = sym;
		if (glob && fnmatch(glob, sym->name, 0))
			continue;
		if (is_main)
			fprintf(out, "%s\n", sym->name);
		else
			fprintf(out, "%s [%s]\n", sym->name, base);
		n++;
	}
	usft_elf_free(&info);
	free(s.addr);
	return n;
}

/* sites of @path, and how many of them a function symbol names */
static void count_sites(const char *path, size_t *nsites, size_t *named)
{
	struct usft_elf_info info;
	struct sites s = { 0 };

	*nsites = *named = 0;
	if (read_sites(path, &s) || !s.n) {
		free(s.addr);
		return;
	}
	*nsites = s.n;
	if (!usft_elf_read(path, &info)) {
		for (size_t i = 0; i < s.n; i++)
			*named += usft_elf_find_sym(&info, s.addr[i]) != NULL;
		usft_elf_free(&info);
	}
	free(s.addr);
}

const char *usft_no_sites_reason(const char *path, const char *prog)
{
	static char why[PATH_MAX + 320];
	size_t nsites, named;

	count_sites(path, &nsites, &named);
	if (nsites && !named)
		snprintf(why, sizeof(why), "%s is stripped: its %zu patchable functions have no "
			 "symbol names, so none can be named or traced; use the unstripped "
			 "binary (strip --strip-debug keeps the symbol table)", prog, nsites);
	else if (!nsites)
		snprintf(why, sizeof(why), "%s has no patchable functions (build it with the "
			 "patch flags: pkg-config --variable=patch_cflags usft)", prog);
	else
		snprintf(why, sizeof(why), "none of the %zu patchable functions of %s ran (or "
			 "-l/-n left none of them)", named, prog);
	return why;
}

int usft_cmd_list(int argc, char **argv)
{
	const char *prog = NULL, *glob = NULL;
	char path[PATH_MAX], real[PATH_MAX];
	char **objs = NULL;
	size_t nobjs = 0, total = 0;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usft_usage(stdout, "list");
			return 0;
		}
		if (!strcmp(argv[i], "-f") && i + 1 == argc)
			return usft_usage_error("list", "-f needs a program: usft list -f PROG [GLOB]");
		if (!strcmp(argv[i], "-f"))
			prog = argv[++i];
		else if (!strncmp(argv[i], "-f", 2) && argv[i][2])
			prog = argv[i] + 2;
		else if (argv[i][0] != '-' && !glob)
			glob = argv[i];
		else
			return usft_usage_error("list", "unexpected argument '%s'", argv[i]);
	}
	if (!prog)
		return usft_usage_error("list", "-f PROG is required");
	if (usft_find_program(prog, path, sizeof(path))) {
		fprintf(stderr, "usft: %s: %s\n", prog, strerror(errno));
		return 1;
	}
	if (usft_prog_interp(path, real, sizeof(real)) < 0) {
		if (usft_libtool_target(path, real, sizeof(real))) {
			fprintf(stderr, "usft: %s is not an ELF program or shared object (nor a "
				"libtool wrapper script): give the compiled program itself\n", prog);
			return 1;
		}
		/* what `usft record` runs in the end: the wrapper execs it */
		fprintf(stderr, "usft: %s is a libtool wrapper script; listing %s\n", prog, real);
		snprintf(path, sizeof(path), "%s", real);
	}
	ret = usft_list_objects(path, &objs, &nobjs);
	if (ret && !nobjs) {
		fprintf(stderr, "usft: %s: %s\n", path, strerror(-ret));
		return 1;
	}
	for (size_t i = 0; i < nobjs; i++) {
		if (objs[i])
			total += list_object(objs[i], i == 0, glob, stdout);
		free(objs[i]);
	}
	free(objs);
	if (!total && !glob)
		fprintf(stderr, "usft: %s\n", usft_no_sites_reason(path, prog));
	return 0;
}

int usft_read_sites(const char *path, unsigned long **addrs, size_t *n)
{
	struct sites s = { 0 };
	int ret = read_sites(path, &s);

	*addrs = s.addr;
	*n = s.n;
	return ret;
}
