// SPDX-License-Identifier: MIT
/*
 * inject/cli/deps.c - the shared objects a program loads, found by reading
 * files only: `usft list` must never run anything a user hands it (asking
 * the program's PT_INTERP for the list, as ldd(1) does, runs whatever
 * PT_INTERP names - a script, a hostile "loader").
 *
 * The dynamic loader's search, as ld.so(8) describes it, breadth first
 * from the program (and LD_PRELOAD), each DT_NEEDED name once (an object
 * already loaded under that name or DT_SONAME is not loaded again):
 *   - a name with a slash: that path;
 *   - DT_RPATH of the object that needs it (unless it has DT_RUNPATH), then
 *     the program's DT_RPATH (unless the program has DT_RUNPATH);
 *   - LD_LIBRARY_PATH;
 *   - DT_RUNPATH of the object that needs it;
 *   - the directories of /etc/ld.so.conf (and its `include`s: the source
 *     of /etc/ld.so.cache, which is not read);
 *   - the default directories (multiarch, lib64, lib).
 * $ORIGIN / ${ORIGIN} expand to the directory of the object; a directory
 * with another $ token ($LIB, $PLATFORM) is skipped.  A candidate must be
 * a regular ELF file of the program's class and machine, as for ld.so.
 * Every file is parsed with libelf's bounds checks; nothing is executed.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"

#define MAX_OBJECTS	4096	/* more is a hostile file, not a program */
#define MAX_CONF_DEPTH	8	/* ld.so.conf include nesting */

struct dyn {
	unsigned char cls;	/* ELFCLASS32/64 */
	unsigned int machine;
	char **needed;
	size_t nneeded;
	char *rpath, *runpath, *soname;
};

static void dyn_free(struct dyn *d)
{
	for (size_t i = 0; i < d->nneeded; i++)
		free(d->needed[i]);
	free(d->needed);
	free(d->rpath);
	free(d->runpath);
	free(d->soname);
	memset(d, 0, sizeof(*d));
}

int usft_cli_elf_open(const char *path, int *fd, Elf **elf)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	*elf = elf_begin(*fd, ELF_C_READ, NULL);
	if (!*elf || elf_kind(*elf) != ELF_K_ELF) {
		if (*elf)
			elf_end(*elf);
		close(*fd);
		return -ENOEXEC;
	}
	return 0;
}

/* the dynamic section of @path (from the section table); Return: 0 or -errno */
static int read_dyn(const char *path, struct dyn *d)
{
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	Elf *elf;
	int fd, ret = 0;

	memset(d, 0, sizeof(*d));
	ret = usft_cli_elf_open(path, &fd, &elf);
	if (ret)
		return ret;
	if (!gelf_getehdr(elf, &eh)) {
		ret = -ENOEXEC;
		goto out;
	}
	d->cls = eh.e_ident[EI_CLASS];
	d->machine = eh.e_machine;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *s;
			char **slot = NULL;

			if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RPATH &&
			    dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_SONAME)
				continue;
			s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED) {
				void *p = realloc(d->needed, (d->nneeded + 1) * sizeof(*d->needed));

				if (!p || d->nneeded >= MAX_OBJECTS)
					continue;
				d->needed = p;
				slot = &d->needed[d->nneeded++];
			} else {
				slot = dyn.d_tag == DT_RPATH ? &d->rpath :
				       dyn.d_tag == DT_RUNPATH ? &d->runpath : &d->soname;
				free(*slot);
			}
			*slot = strdup(s);
		}
		break;	/* one dynamic section */
	}
out:
	elf_end(elf);
	close(fd);
	return ret;
}

/* @path is a regular ELF file of @cls/@machine; its real path into @out */
static bool usable(const char *path, unsigned char cls, unsigned int machine, char *out)
{
	unsigned char id[EI_NIDENT + 4];
	struct stat st;
	unsigned int m;
	bool ok = false;
	int fd;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (read(fd, id, sizeof(id)) == (ssize_t)sizeof(id) && !memcmp(id, ELFMAG, SELFMAG) &&
	    id[EI_CLASS] == cls) {
		/* e_type (2 bytes) then e_machine, in the file's byte order */
		m = id[EI_DATA] == ELFDATA2MSB ? (unsigned int)id[EI_NIDENT + 2] << 8 | id[EI_NIDENT + 3]
					       : (unsigned int)id[EI_NIDENT + 3] << 8 | id[EI_NIDENT + 2];
		ok = m == machine;
	}
	close(fd);
	return ok && realpath(path, out);
}

/*
 * Search @list (':'-separated; ';' too for LD_LIBRARY_PATH, as ld.so)
 * for @name; @origin: what $ORIGIN means, NULL where it means nothing.
 */
static bool search_list(const char *list, const char *seps, const char *origin,
			const char *name, const struct dyn *want, char *out)
{
	const char *p = list;

	while (p && *p) {
		size_t n = strcspn(p, seps), i = 0;
		char dir[PATH_MAX], cand[PATH_MAX];
		size_t o = 0;
		bool bad = false;

		while (i < n && o < sizeof(dir) - 1 && !bad) {
			if (p[i] != '$') {
				dir[o++] = p[i++];
				continue;
			}
			if (origin && !strncmp(p + i, "$ORIGIN", 7) &&
			    (i + 7 >= n || p[i + 7] == '/')) {
				i += 7;
			} else if (origin && !strncmp(p + i, "${ORIGIN}", 9)) {
				i += 9;
			} else {
				bad = true;	/* $LIB, $PLATFORM, or $ORIGIN where none */
				break;
			}
			o += (size_t)snprintf(dir + o, sizeof(dir) - o, "%s", origin);
			if (o >= sizeof(dir))
				bad = true;
		}
		dir[o < sizeof(dir) ? o : sizeof(dir) - 1] = 0;
		/* an empty entry is the working directory */
		if (!bad && snprintf(cand, sizeof(cand), "%s%s%s", n ? dir : ".", "/", name) <
		    (int)sizeof(cand) && usable(cand, want->cls, want->machine, out))
			return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
}

struct conf {
	char *dirs;	/* ':'-joined */
	size_t len;
};

static void conf_add(struct conf *c, const char *dir, size_t n)
{
	char *p = realloc(c->dirs, c->len + n + 2);

	if (!p)
		return;
	c->dirs = p;
	if (c->len)
		c->dirs[c->len++] = ':';
	memcpy(c->dirs + c->len, dir, n);
	c->len += n;
	c->dirs[c->len] = 0;
}

/* ld.so.conf(5): directories, `include GLOB` (relative to /etc), comments */
static void conf_read(struct conf *c, const char *path, int depth)
{
	char line[PATH_MAX + 16];
	FILE *f;

	if (depth > MAX_CONF_DEPTH || !(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		char *s = line, *e;

		s[strcspn(s, "#\n")] = 0;
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strlen(s);
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = 0;
		if (!*s || !strncmp(s, "hwcap ", 6))
			continue;
		if (!strncmp(s, "include", 7) && (s[7] == ' ' || s[7] == '\t')) {
			char pat[PATH_MAX + 8];
			glob_t g;

			s += 8;
			while (*s == ' ' || *s == '\t')
				s++;
			snprintf(pat, sizeof(pat), "%s%s", *s == '/' ? "" : "/etc/", s);
			if (!glob(pat, 0, NULL, &g)) {
				for (size_t i = 0; i < g.gl_pathc; i++)
					conf_read(c, g.gl_pathv[i], depth + 1);
				globfree(&g);
			}
			continue;
		}
		/* "dir" or the old "dir=TYPE" form */
		conf_add(c, s, strcspn(s, "="));
	}
	fclose(f);
}

static const char *default_dirs(unsigned int machine)
{
	switch (machine) {
	case EM_X86_64:
		return "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64:/usr/lib64:/lib:/usr/lib";
	case EM_AARCH64:
		return "/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu:/lib64:/usr/lib64:/lib:"
		       "/usr/lib";
	default:
		return "/lib:/usr/lib";
	}
}

struct loaded {
	char **path;	/* real paths, [0] the program */
	char **name;	/* the name it was needed by (NULL: the program) */
	char **soname;	/* its DT_SONAME, or NULL */
	size_t n, cap;
};

/* already loaded as @path, or under @name (a needed name or a soname) */
static bool loaded_has(const struct loaded *l, const char *path, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if ((path && !strcmp(l->path[i], path)) ||
		    (name && l->name[i] && !strcmp(l->name[i], name)) ||
		    (name && l->soname[i] && !strcmp(l->soname[i], name)))
			return true;
	return false;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void loaded_add(struct loaded *l, const char *path, const char *name, const char *soname)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		char **a = realloc(l->path, cap * sizeof(*a)), **b, **c;

		if (!a)
			return;
		l->path = a;
		b = realloc(l->name, cap * sizeof(*b));
		if (!b)
			return;
		l->name = b;
		c = realloc(l->soname, cap * sizeof(*c));
		if (!c)
			return;
		l->soname = c;
		l->cap = cap;
	}
	l->path[l->n] = strdup(path);
	l->name[l->n] = dup_or_null(name);
	l->soname[l->n] = dup_or_null(soname);
	if (l->path[l->n])
		l->n++;
}

/* a found object: its soname from its own dynamic section */
static void loaded_add_file(struct loaded *l, const char *path, const char *name)
{
	struct dyn d;

	if (read_dyn(path, &d))
		return;		/* not ELF after all (usable() read 20 bytes) */
	loaded_add(l, path, name, d.soname);
	dyn_free(&d);
}

static void origin_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	snprintf(dir, len, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
}

/* one DT_NEEDED (or LD_PRELOAD) @name of the object @by, found into @out */
static bool find_needed(const char *name, const struct dyn *by, const char *by_path,
			const struct dyn *prog, const char *prog_path, const struct conf *conf,
			char *out)
{
	const char *llp = getenv("LD_LIBRARY_PATH");
	char origin[PATH_MAX], porigin[PATH_MAX];

	if (strchr(name, '/'))
		return usable(name, prog->cls, prog->machine, out);
	origin_of(by_path, origin, sizeof(origin));
	origin_of(prog_path, porigin, sizeof(porigin));
	if (!by->runpath) {
		if (by->rpath && search_list(by->rpath, ":", origin, name, prog, out))
			return true;
		if (by != prog && !prog->runpath && prog->rpath &&
		    search_list(prog->rpath, ":", porigin, name, prog, out))
			return true;
	}
	if (llp && *llp && search_list(llp, ":;", NULL, name, prog, out))
		return true;
	if (by->runpath && search_list(by->runpath, ":", origin, name, prog, out))
		return true;
	if (conf->dirs && search_list(conf->dirs, ":", NULL, name, prog, out))
		return true;
	return search_list(default_dirs(prog->machine), ":", NULL, name, prog, out);
}

int usft_list_objects(const char *prog, char ***objs, size_t *nobjs)
{
	struct loaded l = { 0 };
	struct conf conf = { 0 };
	struct dyn pd, d = { 0 };
	char real[PATH_MAX], found[PATH_MAX];
	const char *pre = getenv("LD_PRELOAD");
	int ret;

	*objs = NULL;
	*nobjs = 0;
	if (!realpath(prog, real))
		return -errno;
	ret = read_dyn(real, &pd);
	if (ret)
		memset(&pd, 0, sizeof(pd));	/* not ELF: itself only (it has no sites) */
	loaded_add(&l, real, NULL, pd.soname);
	if (!l.n) {
		dyn_free(&pd);
		return -ENOMEM;
	}
	if (pd.nneeded || pre) {
		conf_read(&conf, "/etc/ld.so.conf", 0);
		/* LD_PRELOAD: loaded right after the program, before its needs */
		if (pre) {
			char *copy = strdup(pre), *save = NULL;

			for (char *n = copy ? strtok_r(copy, " :", &save) : NULL; n;
			     n = strtok_r(NULL, " :", &save))
				if (!loaded_has(&l, NULL, n) &&
				    find_needed(n, &pd, real, &pd, real, &conf, found) &&
				    !loaded_has(&l, found, NULL))
					loaded_add_file(&l, found, n);
			free(copy);
		}
	}
	/* breadth first, as the loader maps them */
	for (size_t i = 0; i < l.n && l.n < MAX_OBJECTS; i++) {
		const struct dyn *by = i ? &d : &pd;

		if (i && read_dyn(l.path[i], &d))
			continue;
		for (size_t k = 0; k < by->nneeded && l.n < MAX_OBJECTS; k++) {
			const char *n = by->needed[k];

			if (loaded_has(&l, NULL, n))
				continue;
			if (!find_needed(n, by, l.path[i], &pd, real, &conf, found))
				continue;	/* the loader would fail; list what there is */
			if (!loaded_has(&l, found, NULL))
				loaded_add_file(&l, found, n);
		}
		if (i)
			dyn_free(&d);
	}
	dyn_free(&pd);
	free(conf.dirs);
	for (size_t i = 0; i < l.n; i++) {
		free(l.name[i]);
		free(l.soname[i]);
	}
	free(l.name);
	free(l.soname);
	*objs = l.path;
	*nobjs = l.n;
	return 0;
}
