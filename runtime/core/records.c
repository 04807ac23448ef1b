// SPDX-License-Identifier: MIT
/*
 * core/records.c - the dyn_ftrace table: one record per site of every
 * loaded object (kernel: ftrace_process_locs(), ftrace_module_init(),
 * ftrace_release_mod(), lookup_rec(), ftrace_location()).
 *
 * Objects come from dl_iterate_phdr(): the main executable and every shared
 * object, like the core kernel and its modules.  Objects that appear later
 * (dlopen) are added on the next pass under ftrace_lock; objects that went
 * away (dlclose, which usft interposes so the records go before the text)
 * are released and never touched again.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "compat/prefault.h"
#include "core/arch.h"
#include "core/text.h"
#include "mem/execmem.h"

struct ftrace_page *ftrace_pages_start;
struct usft_object *usft_objects;
/*
 * Lookups (ftrace_location, kallsyms, usft_site_bytes) may run inside
 * callbacks, so they never take ftrace_lock (an unregister holds it across
 * a grace period that waits for those callbacks).  They read the object
 * and page lists under this reader lock; writers (ftrace_lock held) take
 * it only around list changes, never across patching or a grace period.
 */
pthread_rwlock_t usft_objects_lock = PTHREAD_RWLOCK_INITIALIZER;

static unsigned long long seen_adds, seen_subs;

static int phdr_counters(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned long long *c = data;

	(void)size;
	c[0] = info->dlpi_adds;
	c[1] = info->dlpi_subs;
	return 1;
}

/* were objects loaded or unloaded since the last ftrace_records_sync()? */
static bool objects_changed(void)
{
	unsigned long long c[2] = { 0, 0 };

	dl_iterate_phdr(phdr_counters, c);
	return c[0] != __atomic_load_n(&seen_adds, __ATOMIC_ACQUIRE) ||
	       c[1] != __atomic_load_n(&seen_subs, __ATOMIC_ACQUIRE);
}

/*
 * Pick up objects loaded since the last pass before a lookup: a function
 * that is loaded is a site, every time (the kernel adds a module's records
 * before its code can run).  When another thread holds ftrace_lock and
 * something was loaded, wait for it; but never inside a callback, whose
 * thread an unregister holding ftrace_lock may be waiting for in a grace
 * period (docs/reliability.md: there, an object dlopen()ed while another
 * thread updates may be seen one call late).
 */
static void try_sync(void)
{
	if (pthread_mutex_trylock(&ftrace_lock) != 0) {
		if (usft_span_inside() || !objects_changed())
			return;
		pthread_mutex_lock(&ftrace_lock);
	}
	ftrace_records_sync();
	pthread_mutex_unlock(&ftrace_lock);
}
static unsigned long nr_records;

unsigned long ftrace_nr_records(void)
{
	return nr_records;
}

static int rec_cmp(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/* kernel lookup_rec(): a record whose [ip, ip+MCOUNT_INSN_SIZE) meets [start, end] */
struct dyn_ftrace *lookup_rec(unsigned long start, unsigned long end)
{
	struct ftrace_page *pg;

	for (pg = ftrace_pages_start; pg; pg = pg->next) {
		int lo = 0, hi = pg->index - 1;

		if (!pg->index || end < pg->records[0].ip ||
		    start >= pg->records[pg->index - 1].ip + MCOUNT_INSN_SIZE)
			continue;
		while (lo <= hi) {
			int mid = (lo + hi) / 2;
			struct dyn_ftrace *rec = &pg->records[mid];

			if (start >= rec->ip + MCOUNT_INSN_SIZE)
				lo = mid + 1;
			else if (end < rec->ip)
				hi = mid - 1;
			else
				return rec;
		}
	}
	return NULL;
}

struct ftrace_page *ftrace_rec_page(const struct dyn_ftrace *rec)
{
	struct ftrace_page *pg;

	for (pg = ftrace_pages_start; pg; pg = pg->next)
		if (rec >= pg->records && rec < pg->records + pg->index)
			return pg;
	return NULL;
}

const char *ftrace_rec_name(const struct dyn_ftrace *rec)
{
	struct ftrace_page *pg = ftrace_rec_page(rec);

	return pg ? pg->names[rec - pg->records] : NULL;
}

static const struct usft_elf_sym *find_func(struct usft_object *obj, unsigned long ip)
{
	return usft_elf_find_sym(&obj->elf, ip - obj->bias);
}

struct usft_object *usft_object_of(unsigned long ip)
{
	for (struct usft_object *obj = usft_objects; obj; obj = obj->next)
		if (ip >= obj->text_lo && ip < obj->text_hi)
			return obj;
	return NULL;
}

struct usft_object *usft_main_object(void)
{
	for (struct usft_object *obj = usft_objects; obj; obj = obj->next)
		if (obj->nr_recs)
			return obj;
	return NULL;
}

struct usft_obj_callers *usft_object_callers(unsigned long ip)
{
	struct usft_object *obj = usft_object_of(ip);
	struct usft_obj_callers *a;

	if (!obj)
		return NULL;
	if (obj->callers)
		return obj->callers;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	/* the shared callers must be in reach whatever the placement option */
	a->w = usft_window_near(obj->text_lo, obj->text_hi, ARCH_NEAR_REACH);
	if (a->w) {
		a->caller[0] = arch_ftrace_make_caller(a->w, 0);
		a->caller[1] = arch_ftrace_make_caller(a->w, 1);
	}
	if (!a->w || !a->caller[0] || !a->caller[1]) {
		pr_err("usft: %s: no trampoline memory within branch reach of its text\n",
		       obj->path);
		free(a);
		return NULL;
	}
	obj->callers = a;
	return a;
}

/* kernel ftrace_location(): the site of ip, or of the function starting at ip */
static unsigned long __ftrace_location(unsigned long ip)
{
	struct dyn_ftrace *rec = lookup_rec(ip, ip);
	struct usft_object *obj;
	const struct usft_elf_sym *sym;

	if (rec)
		return rec->ip;
	obj = usft_object_of(ip);
	if (!obj || !obj->nr_recs)
		return 0;
	sym = find_func(obj, ip);
	if (!sym || sym->addr + obj->bias != ip)
		return 0;
	rec = lookup_rec(ip, ip + (sym->size ? sym->size : 1) - 1);
	return rec ? rec->ip : 0;
}

USFT_API unsigned long ftrace_location(unsigned long ip)
{
	unsigned long ret;

	if (ftrace_lazy_init_ro())
		return 0;
	try_sync();
	pthread_rwlock_rdlock(&usft_objects_lock);
	ret = __ftrace_location(ip);
	pthread_rwlock_unlock(&usft_objects_lock);
	return ret;
}

/*
 * ftrace_site_state() - can @ip (a site) be patched?  0; -EBUSY its record
 * is disabled because its bytes were not a patchable NOP when usft read
 * them (someone else's code is there: ftrace_process_locs()); -EINVAL no
 * record.
 */
int ftrace_site_state(unsigned long ip)
{
	struct dyn_ftrace *rec;
	int ret;

	/* rec->flags are written under ftrace_lock (taken before the objects lock) */
	pthread_mutex_lock(&ftrace_lock);
	pthread_rwlock_rdlock(&usft_objects_lock);
	rec = lookup_rec(ip, ip);
	ret = !rec ? -EINVAL : (rec->flags & FTRACE_FL_DISABLED) ? -EBUSY : 0;
	pthread_rwlock_unlock(&usft_objects_lock);
	pthread_mutex_unlock(&ftrace_lock);
	return ret;
}

USFT_API const char *usft_kallsyms_lookup(unsigned long addr, unsigned long *offset)
{
	struct usft_object *obj;
	const char *name = NULL;

	if (ftrace_lazy_init_ro())
		return NULL;
	pthread_rwlock_rdlock(&usft_objects_lock);
	obj = usft_object_of(addr);
	if (obj) {
		const struct usft_elf_sym *sym = find_func(obj, addr);

		if (sym) {
			name = sym->name;
			if (offset)
				*offset = addr - (sym->addr + obj->bias);
		}
	}
	pthread_rwlock_unlock(&usft_objects_lock);
	return name;
}

USFT_API unsigned long usft_lookup_name(const char *name)
{
	struct usft_object *obj;
	unsigned long addr = 0;

	if (!name || ftrace_lazy_init_ro())
		return 0;
	try_sync();
	pthread_rwlock_rdlock(&usft_objects_lock);
	for (obj = usft_objects; obj && !addr; obj = obj->next)
		for (size_t i = 0; i < obj->elf.nr_syms; i++)
			if (!strcmp(obj->elf.syms[i].name, name)) {
				addr = obj->elf.syms[i].addr + obj->bias;
				break;
			}
	pthread_rwlock_unlock(&usft_objects_lock);
	return addr;
}

/* ---- loading objects ------------------------------------------------ */

struct phdr_obj {
	char *path;
	unsigned long bias;
	struct usft_segment segs[USFT_MAX_SEGS];
	unsigned int nr_segs;
	unsigned long text_lo, text_hi;
};

struct phdr_scan {
	struct phdr_obj *objs;
	size_t nr, cap;
	unsigned long long adds, subs;
	bool only_counters;
	int err;
};

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct phdr_scan *scan = data;
	struct phdr_obj *o;
	long pagesz = sysconf(_SC_PAGESIZE);

	scan->adds = info->dlpi_adds;
	scan->subs = info->dlpi_subs;
	if (scan->only_counters)
		return 1;
	if (scan->nr == scan->cap) {
		size_t cap = scan->cap ? scan->cap * 2 : 32;
		struct phdr_obj *n = realloc(scan->objs, cap * sizeof(*n));

		if (!n) {
			scan->err = -ENOMEM;
			return 1;
		}
		scan->objs = n;
		scan->cap = cap;
	}
	o = &scan->objs[scan->nr];
	memset(o, 0, sizeof(*o));
	o->bias = info->dlpi_addr;
	o->text_lo = ~0UL;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		unsigned long lo, hi;

		if (ph->p_type != PT_LOAD || o->nr_segs == USFT_MAX_SEGS)
			continue;
		lo = (info->dlpi_addr + ph->p_vaddr) & ~(pagesz - 1);
		hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + pagesz - 1) & ~(pagesz - 1);
		o->segs[o->nr_segs].lo = lo;
		o->segs[o->nr_segs].hi = hi;
		o->segs[o->nr_segs].prot = ((ph->p_flags & PF_R) ? PROT_READ : 0) |
					   ((ph->p_flags & PF_W) ? PROT_WRITE : 0) |
					   ((ph->p_flags & PF_X) ? PROT_EXEC : 0);
		if (ph->p_flags & PF_X) {
			unsigned long a = info->dlpi_addr + ph->p_vaddr;

			if (a < o->text_lo)
				o->text_lo = a;
			if (a + ph->p_memsz > o->text_hi)
				o->text_hi = a + ph->p_memsz;
		}
		o->nr_segs++;
	}
	if (!o->text_hi)
		return 0;	/* nothing executable */
	if (!info->dlpi_name || !info->dlpi_name[0])
		o->path = scan->nr == 0 ? strdup("/proc/self/exe") : NULL;
	else
		o->path = strdup(info->dlpi_name);
	if (!o->path)
		return 0;	/* vdso and friends have no file */
	scan->nr++;
	return 0;
}

static bool obj_exec_contains(const struct usft_object *obj, unsigned long a, unsigned long len)
{
	for (unsigned int i = 0; i < obj->nr_segs; i++)
		if ((obj->segs[i].prot & PROT_EXEC) && a >= obj->text_lo &&
		    a + len <= obj->text_hi && a >= obj->segs[i].lo && a + len <= obj->segs[i].hi)
			return true;
	return false;
}

/*
 * The pages of @count records: one array of records and one of names for
 * all of them (the first page owns both, free_object()), so that the
 * object's records take their page faults in one call each
 * (usft_prefault_write()), not a fault a page of every 256 records.
 */
static struct ftrace_page *alloc_pages_for(struct usft_object *obj, unsigned long count)
{
	struct ftrace_page *first = NULL, **pp = &first;
	struct dyn_ftrace *recs = calloc(count, sizeof(*recs));
	const char **names = calloc(count, sizeof(*names));
	unsigned long at = 0;

	if (!recs || !names)
		goto fail;
	usft_prefault_write(recs, count * sizeof(*recs));
	usft_prefault_write(names, count * sizeof(*names));
	while (at < count) {
		unsigned long n = count - at > ENTRIES_PER_PAGE ? ENTRIES_PER_PAGE : count - at;
		struct ftrace_page *pg = calloc(1, sizeof(*pg));

		if (!pg)
			goto fail;
		pg->records = recs + at;
		pg->names = names + at;
		pg->obj = obj;
		pg->size = (int)n;
		*pp = pg;
		pp = &pg->next;
		at += n;
	}
	return first;
fail:
	while (first) {
		struct ftrace_page *n = first->next;

		free(first);
		first = n;
	}
	free(recs);
	free(names);
	return NULL;
}

/* kernel ftrace_process_locs() for one object */
/*
 * Sites without a symbol: one or two are weak functions the linker
 * overrode (info); many are a stripped file, traced only in part, which
 * the user is told (warn).
 */
static enum usft_log_level nosym_level(unsigned long nosym, unsigned long nr)
{
	return nosym >= 8 || nosym * 10 >= nr ? USFT_LOG_WARN : USFT_LOG_INFO;
}

/* Convert @obj's compiler NOPs to the canonical disabled form. */
static int ftrace_convert_nops(struct usft_object *obj)
{
	struct ftrace_page *pg;
	int ret;

	obj->nops_pending = false;
	ret = ftrace_arch_code_modify_prepare();
	for (pg = obj->pages; !ret && pg; pg = pg->next) {
		for (int k = 0; k < pg->index; k++) {
			struct dyn_ftrace *rec = &pg->records[k];

			if (rec->flags & FTRACE_FL_DISABLED)
				continue;
			ret = ftrace_init_nop(rec);
			if (ret == -EINVAL) {
				/*
				 * Not a compiler NOP: a corrupt table entry or a site
				 * someone else patched before we looked.  The kernel
				 * trusts its own build and calls ftrace_bug(); an
				 * object's table is input here, so the record is
				 * disabled and its bytes are left alone.
				 */
				pr_warn("usft: %s: site %#lx (%s) is not a patchable NOP; disabled\n",
					obj->path, rec->ip, pg->names[k][0] ? pg->names[k] : "?");
				rec->flags |= FTRACE_FL_DISABLED;
				ret = 0;
				continue;
			}
			if (ret) {
				ftrace_bug_type = FTRACE_BUG_INIT;
				ftrace_bug(ret, rec);
				break;
			}
		}
	}
	if (!ret)
		ret = ftrace_arch_code_modify_post_process();
	else
		ftrace_arch_code_modify_post_process();
	if (ret == -EBUSY) {
		/*
		 * A thread the conversion cannot make safe (x86-64: one the
		 * rendezvous cannot move out of gcc's NOPs; arm64: one the
		 * stop cannot hold; the arch code said which): nothing was
		 * written; the NOPs wait for a call that finds no such
		 * thread, and calls that would patch return -EBUSY meanwhile
		 * (ftrace_text_check()).
		 */
		obj->nops_pending = true;
		return ret;
	}
	if (ret && !ftrace_disabled) {
		ftrace_bug_type = FTRACE_BUG_INIT;
		ftrace_bug(ret, obj->pages ? &obj->pages->records[0] : NULL);
	}
	return ret;
}

int ftrace_convert_pending_nops(void)
{
	int ret = 0;

	for (struct usft_object *obj = usft_objects; obj && !ret; obj = obj->next)
		if (obj->nops_pending)
			ret = ftrace_convert_nops(obj);
	return ret;
}

static int ftrace_process_locs(struct usft_object *obj)
{
	unsigned long *ips = NULL, nr = 0, cap = 0, i, nr_nosym = 0;
	int ret;
	struct ftrace_page *pg, *tail;
	size_t sym_cursor = 0;

	for (unsigned int r = 0; r < obj->elf.nr_pfe; r++) {
		unsigned long start = obj->elf.pfe[r].addr + (obj->elf.is_dyn ? obj->bias : 0);
		unsigned long cnt = obj->elf.pfe[r].size / sizeof(unsigned long);
		bool inside = false;

		for (unsigned int s = 0; s < obj->nr_segs; s++)
			if ((obj->segs[s].prot & PROT_READ) && start >= obj->segs[s].lo &&
			    start + cnt * sizeof(unsigned long) <= obj->segs[s].hi)
				inside = true;
		if (!inside) {
			pr_warn("usft: %s: __patchable_function_entries outside the image; ignored\n",
				obj->path);
			continue;
		}
		for (i = 0; i < cnt; i++) {
			unsigned long entry = ((const unsigned long *)start)[i];
			unsigned long ip;

			if (!entry)
				continue;	/* discarded (garbage-collected) function */
			ip = ftrace_call_adjust(entry);
			if (!ip || !obj_exec_contains(obj, ip, MCOUNT_INSN_SIZE)) {
				pr_warn("usft: %s: site table entry %#lx is not in executable text; skipped\n",
					obj->path, entry);
				continue;
			}
			if (nr == cap) {
				unsigned long *n;

				cap = cap ? cap * 2 : 256;
				n = realloc(ips, cap * sizeof(*ips));
				if (!n) {
					free(ips);
					return -ENOMEM;
				}
				ips = n;
			}
			ips[nr++] = ip;
		}
	}
	if (!nr)
		return 0;
	/* the linker writes the table in address order: sort only when not */
	for (i = 1; i < nr && ips[i - 1] <= ips[i]; i++)
		;
	if (i < nr)
		qsort(ips, nr, sizeof(*ips), rec_cmp);
	/* drop duplicates and overlapping entries */
	{
		unsigned long w = 0;

		for (i = 0; i < nr; i++) {
			if (w && ips[i] < ips[w - 1] + MCOUNT_INSN_SIZE) {
				if (ips[i] != ips[w - 1])
					pr_warn("usft: %s: overlapping site %#lx skipped\n", obj->path, ips[i]);
				continue;
			}
			ips[w++] = ips[i];
		}
		nr = w;
	}
	pg = alloc_pages_for(obj, nr);
	if (!pg) {
		free(ips);
		return -ENOMEM;
	}
	obj->pages = pg;
	for (i = 0, tail = pg; i < nr; i++) {
		/* ips[] is sorted: each lookup goes on from the last */
		const struct usft_elf_sym *sym = usft_elf_find_sym_next(&obj->elf, ips[i] - obj->bias,
									&sym_cursor);
		struct dyn_ftrace *rec;

		if (tail->index == tail->size)
			tail = tail->next;
		rec = &tail->records[tail->index];
		tail->names[tail->index] = sym ? sym->name : "";
		tail->index++;
		rec->ip = ips[i];
		/* a site that no function symbol owns is weak-function garbage,
		 * or a function whose symbol was stripped: no name, no filter */
		rec->flags = sym ? 0 : FTRACE_FL_DISABLED;
		nr_nosym += !sym;
	}
	if (nr_nosym)
		usft_log(nosym_level(nr_nosym, nr),
			 "usft: %s: %lu of %lu sites have no function symbol and stay disabled%s\n",
			 strcmp(obj->path, "/proc/self/exe") ? obj->path : program_invocation_name,
			 nr_nosym, nr,
			 nosym_level(nr_nosym, nr) == USFT_LOG_WARN ?
			 " (a stripped file: its symbol table is gone); to trace them, run the "
			 "unstripped build (strip --strip-debug keeps the symbol table)" : "");
	obj->last_page = tail;
	obj->nr_recs = nr;
	free(ips);

	/*
	 * A W^X policy: the compiler's NOPs stay as compiled until text can
	 * be written (ftrace_convert_pending_nops(), from ftrace_text_check());
	 * meanwhile every call that would patch gets -EPERM.  The runtime
	 * stays alive and the records can be listed and filtered.
	 */
	if (obj->pages && obj->pages->index && usft_text_writable(obj->pages->records[0].ip)) {
		obj->nops_pending = true;
		return 0;
	}
	ret = ftrace_convert_nops(obj);
	return ret == -EBUSY ? 0 : ret;	/* pending: the records are there */
}


static void link_object_pages(struct usft_object *obj)
{
	struct ftrace_page **pp = &ftrace_pages_start;

	if (!obj->pages)
		return;
	pthread_rwlock_wrlock(&usft_objects_lock);
	while (*pp)
		pp = &(*pp)->next;
	*pp = obj->pages;
	nr_records += obj->nr_recs;
	pthread_rwlock_unlock(&usft_objects_lock);
}

static void free_object(struct usft_object *obj)
{
	struct ftrace_page *pg = obj->pages, *n;
	unsigned long left = obj->nr_recs;

	/* the first page owns the records and names of all (alloc_pages_for()) */
	if (pg) {
		free(pg->records);
		free(pg->names);
	}
	while (pg && left) {
		n = pg->next;
		left -= pg->index;
		free(pg);
		pg = n;
	}
	usft_elf_free(&obj->elf);
	free(obj->path);
	free(obj);
}

/* kernel ftrace_release_mod(): the object is going away */
void ftrace_release_object(struct usft_object *obj)
{
	struct ftrace_page **pp, *last;
	struct usft_object **op;

	pthread_rwlock_wrlock(&usft_objects_lock);
	if (obj->pages) {
		struct ftrace_page *p = obj->pages;
		unsigned long left = obj->nr_recs;

		for (; p && left; p = p->next) {
			left -= p->index;
			for (int i = 0; i < p->index; i++)
				if (p->records[i].flags & FTRACE_FL_ENABLED)
					usft_counters.nr_enabled--;
		}
		ftrace_object_release_hashes(obj);
		for (pp = &ftrace_pages_start; *pp && *pp != obj->pages; pp = &(*pp)->next)
			;
		last = obj->last_page;
		if (*pp)
			*pp = last->next;
		last->next = NULL;
		nr_records -= obj->nr_recs;
		usft_counters.nr_sites = nr_records;
	}
	for (op = &usft_objects; *op; op = &(*op)->next)
		if (*op == obj) {
			*op = obj->next;
			break;
		}
	arch_ftrace_object_removed(obj);
	/* the window stays mapped: threads may still return through it */
	free(obj->callers);
	obj->callers = NULL;
	if (obj->nr_recs)
		usft_counters.nr_objects--;
	free_object(obj);
	pthread_rwlock_unlock(&usft_objects_lock);
}

static struct usft_object *find_object(unsigned long bias, const char *path)
{
	struct usft_object *obj;

	for (obj = usft_objects; obj; obj = obj->next)
		if (obj->bias == bias && !strcmp(obj->path, path))
			return obj;
	return NULL;
}

/* Caller holds ftrace_lock. */
int ftrace_records_sync(void)
{
	struct phdr_scan scan = { .only_counters = true };
	struct usft_object *obj, *next, **tailp;
	int ret = 0;

	if (ftrace_disabled)
		return -ENODEV;
	dl_iterate_phdr(phdr_cb, &scan);
	if (usft_objects && scan.adds == seen_adds && scan.subs == seen_subs)
		return 0;
	memset(&scan, 0, sizeof(scan));
	dl_iterate_phdr(phdr_cb, &scan);
	if (scan.err) {
		ret = scan.err;
		goto out;
	}
	for (obj = usft_objects; obj; obj = obj->next)
		obj->seen = false;
	for (size_t i = 0; i < scan.nr; i++) {
		obj = find_object(scan.objs[i].bias, scan.objs[i].path);
		if (obj)
			obj->seen = true;
	}
	for (obj = usft_objects; obj; obj = next) {
		next = obj->next;
		if (!obj->seen)
			ftrace_release_object(obj);
	}
	for (tailp = &usft_objects; *tailp; tailp = &(*tailp)->next)
		;
	for (size_t i = 0; i < scan.nr && !ftrace_disabled; i++) {
		struct phdr_obj *o = &scan.objs[i];
		int err;

		if (find_object(o->bias, o->path))
			continue;
		obj = calloc(1, sizeof(*obj));
		if (!obj) {
			ret = -ENOMEM;
			break;
		}
		obj->path = o->path;
		o->path = NULL;
		obj->bias = o->bias;
		obj->text_lo = o->text_lo;
		obj->text_hi = o->text_hi;
		memcpy(obj->segs, o->segs, sizeof(o->segs));
		obj->nr_segs = o->nr_segs;
		obj->seen = true;
		err = usft_elf_read(obj->path, &obj->elf);
		if (err) {
			pr_debug("usft: %s: not readable as ELF (%d); no sites\n", obj->path, err);
			memset(&obj->elf, 0, sizeof(obj->elf));
		}
		pthread_rwlock_wrlock(&usft_objects_lock);
		*tailp = obj;
		pthread_rwlock_unlock(&usft_objects_lock);
		tailp = &obj->next;
		err = ftrace_process_locs(obj);
		if (err) {
			ret = err;
			break;
		}
		if (obj->nr_recs)
			usft_counters.nr_objects++;
		link_object_pages(obj);
		usft_counters.nr_sites = nr_records;
		if (obj->nr_recs)
			ftrace_object_enable(obj);
	}
	if (!ret && !ftrace_disabled) {
		/* only now: try_sync() trusts them to mean "every object is in" */
		__atomic_store_n(&seen_adds, scan.adds, __ATOMIC_RELEASE);
		__atomic_store_n(&seen_subs, scan.subs, __ATOMIC_RELEASE);
	}
out:
	for (size_t i = 0; i < scan.nr; i++)
		free(scan.objs[i].path);
	free(scan.objs);
	return ret;
}

int ftrace_records_init(void)
{
	return ftrace_records_sync();
}

/*
 * dlclose() interposer: release the records of objects that are unloaded
 * while holding ftrace_lock, so no update can write into text that is being
 * unmapped (the kernel's module notifier ordering).
 */
USFT_API int dlclose(void *handle)
{
	static int (*real_dlclose)(void *);
	int ret;

	if (!real_dlclose) {
		real_dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
		if (!real_dlclose) {
			/* loaded after libc (a preload's dependency): ask libc itself */
			void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);

			real_dlclose = libc ? (int (*)(void *))dlsym(libc, "dlclose") : NULL;
		}
		if (!real_dlclose)
			return -1;
	}
	pthread_mutex_lock(&ftrace_lock);
	ret = real_dlclose(handle);
	if (usft_objects) {
		usft_notrace_begin();
		ftrace_records_sync();
		usft_notrace_end();
	}
	pthread_mutex_unlock(&ftrace_lock);
	return ret;
}

/* ---- kallsyms-side lookups ------------------------------------------- */

/* kernel ftrace_location_range(): a site meeting [start, end], or 0 */
USFT_API unsigned long ftrace_location_range(unsigned long start, unsigned long end)
{
	struct dyn_ftrace *rec;
	unsigned long ip = 0;

	if (ftrace_lazy_init_ro())
		return 0;
	try_sync();
	pthread_rwlock_rdlock(&usft_objects_lock);
	rec = lookup_rec(start, end);
	if (rec)
		ip = rec->ip;
	pthread_rwlock_unlock(&usft_objects_lock);
	return ip;
}

static int cmp_name(const void *key, const void *elt)
{
	return strcmp((const char *)key, *(const char *const *)elt);
}

/*
 * kernel ftrace_lookup_symbols(): one pass over every function symbol,
 * each looked up in the sorted names; a name gets the site of the first
 * function of that name that has one.
 */
USFT_API int ftrace_lookup_symbols(const char **sorted_syms, size_t cnt, unsigned long *addrs)
{
	struct usft_object *obj;
	size_t found = 0;
	int ret;

	if (!cnt)
		return 0;
	if (!sorted_syms || !addrs)
		return usft_err(-EINVAL);
	ret = ftrace_lazy_init_ro();
	if (ret)
		return usft_err(ret);
	memset(addrs, 0, cnt * sizeof(*addrs));
	try_sync();
	pthread_rwlock_rdlock(&usft_objects_lock);
	for (obj = usft_objects; obj && found < cnt; obj = obj->next)
		for (size_t i = 0; i < obj->elf.nr_syms && found < cnt; i++) {
			const char **hit = bsearch(obj->elf.syms[i].name, sorted_syms, cnt,
						   sizeof(*sorted_syms), cmp_name);
			unsigned long ip;
			size_t idx;

			if (!hit)
				continue;
			idx = (size_t)(hit - sorted_syms);
			if (addrs[idx])
				continue;
			ip = __ftrace_location(obj->elf.syms[i].addr + obj->bias);
			if (!ip)
				continue;
			addrs[idx] = ip;
			found++;
		}
	pthread_rwlock_unlock(&usft_objects_lock);
	return found == cnt ? 0 : usft_err(-ESRCH);
}
