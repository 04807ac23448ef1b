// SPDX-License-Identifier: MIT
/*
 * tracers/trace_events.c - trace events (kernel kernel/trace/trace_events.c):
 * the events a program defines with <usft/trace_events.h>, each with one
 * file set per trace array (struct trace_event_file: enable, filter, the
 * soft-disable of the enable_event/disable_event commands), their tracefs
 * files, and the probe a fired event calls.
 *
 * Finding the events: every loaded object's `usft_events` section (the
 * kernel's _ftrace_events) holds pointers to its struct usft_trace_event;
 * the section is found in the object's file with libelf, and every pointer
 * and string is checked to lie in the object's loaded segments before it
 * is read.  What an event says (names, fields, format) is copied at once:
 * printing never reads the program's memory again.
 *
 * The probe (te_probe(), any thread, under the hot-path rules) walks the
 * event's per-array files, and for each one enabled, not soft-disabled,
 * whose array is tracing and whose filter passes, copies the record (the
 * kernel's 8-byte common header, then the program's record) into the
 * array's event buffer and puts one entry pointing at it in the array's
 * ring (trace_array.c).  The event buffer is a byte ring: a writer takes
 * its bytes with one atomic add; a reader copies them out and then checks
 * that no writer has taken bytes a whole buffer further since, or counts
 * the event lost.
 *
 * What a probe reads through a pointer (a file, its filter) is replaced,
 * never changed in place, and freed after te_synchronize(): an SRCU-like
 * pair of reader counts (the kernel's tracepoint_synchronize_unregister()).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <usft/ftrace_probe.h>
#include <usft/trace_events.h>
#include <usft/usft.h>
#include "ring_buffer.h"
#include "trace_array.h"
#include "tid.h"
#include "trace_events.h"
#include "trace_events_filter.h"

#define TE_MAX_ARRAYS	64		/* trace arrays with events (top + 63 instances) */
#define TE_HDR		8		/* kernel struct trace_entry: type, flags, preempt_count, pid */
#define TE_MAX_REC	1024		/* largest record accepted from a program */
#define TE_FIRST_ID	300		/* event ids start after the kernel's built-in types */
#define TE_BUF_SIZE	(8UL << 20)	/* event bytes per trace array (mapped MAP_NORESERVE) */
#define TE_MAX_EVENTS	4096

/* kernel EVENT_FILE_FL_* (the ones that apply here) */
enum {
	TE_FL_ENABLED = 1 << 0,
	TE_FL_SOFT_MODE = 1 << 1,
	TE_FL_SOFT_DISABLED = 1 << 2,
	TE_FL_FILTERED = 1 << 3,
	TE_FL_TRIGGER_MODE = 1 << 4,
};


struct te_tr;

struct te_call {
	struct usft_trace_event *ev;	/* the program's; NULL once its object is unloaded */
	unsigned long obj_base;
	char *system, *name, *print_fmt;
	struct usft_event_field *fields;	/* the event's, then common_*, then CPU, cpu */
	unsigned int nr_ev_fields, nr_fields;
	int args[USFT_EVENT_MAX_ARGS];	/* field index per conversion of print_fmt */
	unsigned int nr_args;
	unsigned int size;		/* the program's record */
	int id;
	int nr_enabled;			/* files with TE_FL_ENABLED */
	struct te_file *files[TE_MAX_ARRAYS];
};

struct te_file {
	int flags;			/* TE_FL_*, atomic */
	int sm_ref;			/* soft-mode users (kernel sm_ref) */
	struct usft_filter *filter;	/* probes read it */
	char *filter_str;		/* what `filter` shows */
	struct te_trigs *trigs;		/* the trigger file's triggers, newest first; probes read it */
	int tm_ref;			/* triggers holding the event in soft mode (kernel tm_ref) */
	struct te_call *call;
	struct te_tr *tt;
};

enum te_trig_type { TRIG_TRACEON, TRIG_TRACEOFF, TRIG_STACKTRACE, TRIG_ENABLE, TRIG_DISABLE };
static const char *const trig_names[] = { "traceon", "traceoff", "stacktrace", "enable_event",
					  "disable_event" };

struct te_trigger {
	enum te_trig_type type;
	long count;			/* -1: unlimited; atomic */
	struct usft_filter *filter;	/* "if ..." */
	char *filter_str;
	struct te_file *target;		/* enable_event, disable_event */
};

/* published to the probes whole, replaced on each change */
struct te_trigs {
	size_t n;
	struct te_trigger *t[];
};

struct te_sysfilter {
	struct te_sysfilter *next;
	char *system, *str;
};

/* set_event_pid: sorted thread ids, published whole */
struct te_pids {
	size_t n;
	int v[];
};

struct te_tr {
	struct trace_array *tr;
	int slot;
	struct te_pids *pids;		/* NULL: every thread */
	unsigned char *buf;		/* TE_BUF_SIZE bytes, NULL until an event is enabled */
	unsigned long head;		/* bytes ever taken */
	struct te_sysfilter *sysfilters;
};

static struct te_call *calls[TE_MAX_EVENTS];
static unsigned int nr_calls;
static struct te_tr *trs[TE_MAX_ARRAYS];
static unsigned long long dl_adds = ~0ULL, dl_subs = ~0ULL;
static bool te_inited;

/* ---- grace periods for what probes read ---- */

static unsigned long te_readers[2];
static unsigned int te_idx;

static inline __attribute__((always_inline)) unsigned int te_read_lock(void)
{
	for (;;) {
		unsigned int i = __atomic_load_n(&te_idx, __ATOMIC_SEQ_CST) & 1;

		__atomic_add_fetch(&te_readers[i], 1, __ATOMIC_SEQ_CST);
		if ((__atomic_load_n(&te_idx, __ATOMIC_SEQ_CST) & 1) == i)
			return i;
		__atomic_sub_fetch(&te_readers[i], 1, __ATOMIC_RELEASE);
	}
}

static inline __attribute__((always_inline)) void te_read_unlock(unsigned int i)
{
	__atomic_sub_fetch(&te_readers[i], 1, __ATOMIC_RELEASE);
}

/*
 * Every probe that could see what was unpublished before this call has
 * returned.  Return: true; false after a second of waiting (a handler that
 * longjmp()ed out of a probe leaves its count behind for good): the caller
 * then keeps what it unpublished (a leak), never frees what may be in use.
 */
static bool te_synchronize(void)
{
	unsigned int old = __atomic_fetch_add(&te_idx, 1, __ATOMIC_SEQ_CST) & 1;
	struct timespec ts = { 0, 100000 };

	for (int i = 0; i < 10000; i++) {
		if (!__atomic_load_n(&te_readers[old], __ATOMIC_ACQUIRE))
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

/* ---- the probe ------------------------------------------------------------ */

static void te_run_triggers(struct te_file *fl, const unsigned char *rec, unsigned int len,
			    unsigned int cpu, unsigned long ip);
static void free_trigger(struct te_trigger *t);
static void print_triggers(FILE *f, const struct te_file *fl);
static int write_trigger(struct trace_array *tr, struct te_tr *tt, struct te_file *fl,
			 const char *v, size_t len, char *why, size_t wlen);

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* kernel trace_event_ignore_this_pid(), by thread id (bsearch(): no lock, no allocation) */
static inline __attribute__((always_inline)) bool pid_wanted(struct te_tr *tt, int tid)
{
	const struct te_pids *p = __atomic_load_n(&tt->pids, __ATOMIC_ACQUIRE);

	return !p || bsearch(&tid, p->v, p->n, sizeof(int), cmp_int);
}

static void te_probe(struct usft_trace_event *ev, const void *rec)
{
	struct te_call *c = __atomic_load_n(&ev->priv, __ATOMIC_ACQUIRE);
	unsigned long ip = (unsigned long)__builtin_return_address(0);
	unsigned char buf[TE_HDR + TE_MAX_REC];
	bool built = false;
	unsigned int idx, len;

	if (!c || usft_tbuf_self == USFT_TBUF_SELF)
		return;
	len = TE_HDR + c->size;
	idx = te_read_lock();
	for (int s = 0; s < TE_MAX_ARRAYS; s++) {
		struct te_file *fl = __atomic_load_n(&c->files[s], __ATOMIC_ACQUIRE);
		const struct usft_filter *flt;
		unsigned long off, alen = (len + 7) & ~7UL;
		unsigned int cpu;
		int flags, tid;
		struct te_tr *tt;

		if (!fl)
			continue;
		flags = __atomic_load_n(&fl->flags, __ATOMIC_ACQUIRE);
		if (!(flags & TE_FL_ENABLED))
			continue;
		if (!built) {
			uint16_t type = (uint16_t)c->id;
			int32_t pid = usft_gettid();

			memcpy(buf, &type, 2);
			buf[2] = 0;	/* common_flags: no irq state to report */
			buf[3] = 0;	/* common_preempt_count */
			memcpy(buf + 4, &pid, 4);
			memcpy(buf + TE_HDR, rec, c->size);
			built = true;
		}
		/* kernel: triggers run even while the event itself is soft-disabled */
		if (flags & TE_FL_TRIGGER_MODE)
			te_run_triggers(fl, buf, len, *usft_tbuf_cpu_ptr(), ip);
		if (flags & TE_FL_SOFT_DISABLED)
			continue;
		tt = fl->tt;
		if (!__atomic_load_n(&tt->buf, __ATOMIC_ACQUIRE) ||
		    !usft_trace_array_event_ok(tt->tr, &cpu, &tid) || !pid_wanted(tt, tid))
			continue;
		flt = (flags & TE_FL_FILTERED) ? __atomic_load_n(&fl->filter, __ATOMIC_ACQUIRE) : NULL;
		if (flt && !usft_filter_match(flt, buf, len, cpu))
			continue;
		off = __atomic_fetch_add(&tt->head, alen, __ATOMIC_RELAXED);
		for (unsigned int k = 0; k < len;) {
			unsigned long at = (off + k) & (TE_BUF_SIZE - 1);
			unsigned long n = TE_BUF_SIZE - at < len - k ? TE_BUF_SIZE - at : len - k;

			memcpy(tt->buf + at, buf + k, n);
			k += (unsigned int)n;
		}
		usft_trace_array_event_commit(tt->tr, cpu, off, len, (uint64_t)c->id);
	}
	te_read_unlock(idx);
}

/* ---- finding the events ---------------------------------------------------- */

struct te_obj {
	unsigned long base;
	const ElfW(Phdr) *phdr;
	int phnum;
};

/* [p, p + len) inside one loaded segment of @o (writable when @w) */
static bool in_obj(const struct te_obj *o, const void *p, size_t len, bool w)
{
	unsigned long a = (unsigned long)p;

	for (int i = 0; i < o->phnum; i++) {
		const ElfW(Phdr) *ph = &o->phdr[i];
		unsigned long lo = o->base + ph->p_vaddr, hi = lo + ph->p_memsz;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) || (w && !(ph->p_flags & PF_W)))
			continue;
		if (a >= lo && a <= hi && len <= hi - a)
			return true;
	}
	return false;
}

/* a copy of the program's string at @p (NUL inside a segment of @o, at most @max bytes) */
static char *obj_str(const struct te_obj *o, const char *p, size_t max)
{
	size_t n = 0;

	if (!p)
		return NULL;
	while (n < max && in_obj(o, p + n, 1, false) && p[n])
		n++;
	if (n >= max || !in_obj(o, p + n, 1, false))
		return NULL;
	return strndup(p, n);
}

static bool name_ok(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

static void free_call(struct te_call *c)
{
	if (!c)
		return;
	for (unsigned int i = 0; c->fields && i < c->nr_fields; i++) {
		struct usft_event_sym *sy = (struct usft_event_sym *)c->fields[i].syms;

		for (size_t k = 0; sy && sy[k].name; k++)
			free((char *)sy[k].name);
		free(sy);
		if (i < c->nr_ev_fields) {
			free((char *)c->fields[i].type);
			free((char *)c->fields[i].name);
		}
	}
	free(c->fields);
	free(c->system);
	free(c->name);
	free(c->print_fmt);
	free(c);
}

static const struct usft_event_field common_fields[] = {
	{ "unsigned short", "common_type", 0, 2, 0, 0, USFT_FILTER_NUMBER, NULL },
	{ "unsigned char", "common_flags", 2, 1, 0, 0, USFT_FILTER_NUMBER, NULL },
	{ "unsigned char", "common_preempt_count", 3, 1, 0, 0, USFT_FILTER_NUMBER, NULL },
	{ "int", "common_pid", 4, 4, 0, 1, USFT_FILTER_NUMBER, NULL },
	{ "int", "CPU", 0, 4, 0, 1, USFT_FILTER_CPU, NULL },
	{ "int", "cpu", 0, 4, 0, 1, USFT_FILTER_CPU, NULL },
};
#define NR_COMMON 4
#define NR_GENERIC 2

static struct usft_event_sym *copy_syms(const struct te_obj *o, const struct usft_event_sym *sy)
{
	struct usft_event_sym *out;
	size_t n = 0;

	while (n < 64 && in_obj(o, &sy[n], sizeof(sy[n]), false) && sy[n].name)
		n++;
	if (n == 64 || !in_obj(o, &sy[n], sizeof(sy[n]), false))
		return NULL;
	out = calloc(n + 1, sizeof(*out));
	for (size_t k = 0; out && k < n; k++) {
		out[k].value = sy[k].value;
		out[k].name = obj_str(o, sy[k].name, 64);
		if (!out[k].name) {
			while (k--)
				free((char *)out[k].name);
			free(out);
			return NULL;
		}
	}
	return out;
}

/* an event of object @o: checked, copied; Return: the call, NULL (reason logged) */
static struct te_call *make_call(const struct te_obj *o, struct usft_trace_event *ev)
{
	struct te_call *c;
	const struct usft_event_field *pf;
	unsigned int nf;

	if (!in_obj(o, ev, sizeof(*ev), true) || ev->magic != USFT_TRACE_EVENT_MAGIC)
		return NULL;
	nf = ev->nr_fields;
	pf = ev->fields;
	if (nf > 128 || ev->size > TE_MAX_REC || (nf && !in_obj(o, pf, nf * sizeof(*pf), false)))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ev = ev;
	c->size = ev->size;
	c->system = obj_str(o, ev->system, 64);
	c->name = obj_str(o, ev->name, 64);
	c->print_fmt = obj_str(o, ev->print_fmt, 1024);
	c->nr_ev_fields = nf;
	c->nr_fields = nf + NR_COMMON + NR_GENERIC;
	c->fields = calloc(c->nr_fields, sizeof(*c->fields));
	if (!c->system || !c->name || !c->print_fmt || !c->fields || !name_ok(c->system) ||
	    !name_ok(c->name))
		goto bad;
	for (unsigned int i = 0; i < nf; i++) {
		struct usft_event_field *f = &c->fields[i];

		*f = pf[i];
		f->type = obj_str(o, pf[i].type, 64);
		f->name = obj_str(o, pf[i].name, 64);
		f->syms = NULL;
		if (!f->type || !f->name || !name_ok(f->name) ||
		    (unsigned int)pf[i].offset + pf[i].size > c->size ||
		    (f->filter_type != USFT_FILTER_STRING &&
		     f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8) ||
		    f->filter_type > USFT_FILTER_STRING)
			goto bad;
		f->offset = (unsigned short)(f->offset + TE_HDR);
		if (pf[i].syms && !(f->syms = copy_syms(o, pf[i].syms)))
			goto bad;
	}
	memcpy(c->fields + nf, common_fields, sizeof(common_fields));
	for (unsigned int a = 0; a < USFT_EVENT_MAX_ARGS && ev->args[a]; a++) {
		char *an = obj_str(o, ev->args[a], 64);
		int k = -1;

		for (unsigned int i = 0; an && i < nf; i++)
			if (!strcmp(c->fields[i].name, an))
				k = (int)i;
		free(an);
		if (k < 0)
			goto bad;
		c->args[c->nr_args++] = k;
	}
	return c;
bad:
	dprintf(STDERR_FILENO, "usft: trace event %s:%s of the object at %#lx is malformed (a "
		"name, field or string outside the object, or an unknown layout); ignored\n",
		c->system ? c->system : "?", c->name ? c->name : "?", o->base);
	free_call(c);
	return NULL;
}

static struct te_file *new_file(struct te_call *c, struct te_tr *tt)
{
	struct te_file *f = calloc(1, sizeof(*f));

	if (f) {
		f->call = c;
		f->tt = tt;
		__atomic_store_n(&c->files[tt->slot], f, __ATOMIC_RELEASE);
	}
	return f;
}

static int cmp_call(const void *a, const void *b)
{
	const struct te_call *x = *(struct te_call *const *)a, *y = *(struct te_call *const *)b;
	int r = strcmp(x->system, y->system);

	return r ? r : strcmp(x->name, y->name);
}

/* the `usft_events` section of the object at @path: its link-time address and size */
static bool find_section(const char *path, unsigned long *addr, unsigned long *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool found = false;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *e;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && elf_kind(e) == ELF_K_ELF && !elf_getshdrstrndx(e, &shstrndx)) {
		while (!found && (scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;
			const char *n;

			if (!gelf_getshdr(scn, &sh))
				break;
			n = elf_strptr(e, shstrndx, sh.sh_name);
			if (n && !strcmp(n, "usft_events") && sh.sh_type == SHT_PROGBITS) {
				*addr = sh.sh_addr;
				*size = sh.sh_size;
				found = true;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found;
}

static void add_object_events(const struct te_obj *o, const char *path)
{
	unsigned long addr, size;
	struct usft_trace_event *const *tab;

	if (!find_section(path, &addr, &size) || size % sizeof(void *))
		return;
	tab = (struct usft_trace_event *const *)(o->base + addr);
	if (!in_obj(o, tab, size, false))
		return;
	for (unsigned long i = 0; i < size / sizeof(void *) && nr_calls < TE_MAX_EVENTS; i++) {
		struct usft_trace_event *ev = tab[i];
		struct te_call *c;
		bool dup = false;

		for (unsigned int k = 0; k < nr_calls; k++)
			dup |= calls[k]->ev == ev;
		if (!ev || dup || !(c = make_call(o, ev)))
			continue;
		for (unsigned int k = 0; k < nr_calls; k++)
			if (calls[k]->ev && !strcmp(calls[k]->system, c->system) &&
			    !strcmp(calls[k]->name, c->name)) {
				dprintf(STDERR_FILENO, "usft: trace event %s:%s is defined twice; the "
					"second (object at %#lx) is ignored\n", c->system, c->name,
					o->base);
				free_call(c);
				c = NULL;
				break;
			}
		if (!c)
			continue;
		c->obj_base = o->base;
		c->id = TE_FIRST_ID + (int)nr_calls;
		for (int s = 0; s < TE_MAX_ARRAYS; s++)
			if (trs[s])
				new_file(c, trs[s]);
		calls[nr_calls++] = c;
		__atomic_store_n(&ev->priv, c, __ATOMIC_RELEASE);
		__atomic_store_n(&ev->probe, te_probe, __ATOMIC_RELEASE);
	}
}

struct scan {
	struct te_obj objs[256];
	char paths[256][256];
	int n;
	unsigned long long adds, subs;
};

static int scan_cb(struct dl_phdr_info *info, size_t sz, void *arg)
{
	struct scan *sc = arg;

	(void)sz;
	sc->adds = info->dlpi_adds;
	sc->subs = info->dlpi_subs;
	if (sc->n == 256)
		return 0;
	sc->objs[sc->n] = (struct te_obj){ info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum };
	snprintf(sc->paths[sc->n], sizeof(sc->paths[0]), "%s",
		 info->dlpi_name && *info->dlpi_name ? info->dlpi_name : sc->n ? "" : "/proc/self/exe");
	sc->n++;
	return 0;
}

/* new objects' events in; the unloaded objects' events out (kernel: module load/unload) */
static void te_rescan(void)
{
	struct scan *sc = calloc(1, sizeof(*sc));

	if (!sc)
		return;
	dl_iterate_phdr(scan_cb, sc);
	if (sc->adds == dl_adds && sc->subs == dl_subs) {
		free(sc);
		return;
	}
	for (unsigned int k = 0; k < nr_calls; k++) {
		bool live = false;

		for (int i = 0; i < sc->n; i++)
			live |= sc->objs[i].base == calls[k]->obj_base;
		if (!live)
			calls[k]->ev = NULL;	/* its memory is gone: never written again */
	}
	for (int i = 0; i < sc->n; i++) {
		bool known = false;

		for (unsigned int k = 0; k < nr_calls; k++)
			known |= calls[k]->ev && calls[k]->obj_base == sc->objs[i].base;
		if (!known && sc->paths[i][0])
			add_object_events(&sc->objs[i], sc->paths[i]);
	}
	dl_adds = sc->adds;
	dl_subs = sc->subs;
	free(sc);
}

/* ---- trace arrays ------------------------------------------------------------ */

static struct te_tr *te_tr_of(struct trace_array *tr, bool create)
{
	int free_slot = -1;
	struct te_tr *tt;

	for (int s = 0; s < TE_MAX_ARRAYS; s++) {
		if (trs[s] && trs[s]->tr == tr)
			return trs[s];
		if (!trs[s] && free_slot < 0)
			free_slot = s;
	}
	if (!create || free_slot < 0)
		return NULL;
	tt = calloc(1, sizeof(*tt));
	if (!tt)
		return NULL;
	tt->tr = tr;
	tt->slot = free_slot;
	trs[free_slot] = tt;
	for (unsigned int k = 0; k < nr_calls; k++)
		new_file(calls[k], tt);
	return tt;
}

static struct te_file *file_of(struct te_tr *tt, struct te_call *c)
{
	return tt ? c->files[tt->slot] : NULL;
}

/* the tracepoint's on/off in the program (kernel call->class->reg) */
static void te_reg(struct te_call *c, bool on)
{
	c->nr_enabled += on ? 1 : -1;
	if (c->ev)
		__atomic_store_n(&c->ev->enabled, c->nr_enabled > 0, __ATOMIC_RELEASE);
}

static int te_buffer(struct te_tr *tt)
{
	void *p;

	if (tt->buf)
		return 0;
	p = mmap(NULL, TE_BUF_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	__atomic_store_n(&tt->buf, p, __ATOMIC_RELEASE);
	return 0;
}

/* kernel __ftrace_event_enable_disable(): the enable, soft-mode and soft-disable states */
static int te_enable_disable(struct te_file *f, int enable, int soft_disable)
{
	int fl = __atomic_load_n(&f->flags, __ATOMIC_ACQUIRE), ret;
	bool disable;

	if (!enable) {
		if (soft_disable) {
			if (--f->sm_ref > 0)
				return 0;
			disable = fl & TE_FL_SOFT_DISABLED;
			__atomic_and_fetch(&f->flags, ~TE_FL_SOFT_MODE, __ATOMIC_RELEASE);
		} else {
			disable = !(fl & TE_FL_SOFT_MODE);
		}
		if (disable && (__atomic_load_n(&f->flags, __ATOMIC_ACQUIRE) & TE_FL_ENABLED)) {
			__atomic_and_fetch(&f->flags, ~TE_FL_ENABLED, __ATOMIC_RELEASE);
			te_reg(f->call, false);
		}
		if (__atomic_load_n(&f->flags, __ATOMIC_ACQUIRE) & TE_FL_SOFT_MODE)
			__atomic_or_fetch(&f->flags, TE_FL_SOFT_DISABLED, __ATOMIC_RELEASE);
		else
			__atomic_and_fetch(&f->flags, ~TE_FL_SOFT_DISABLED, __ATOMIC_RELEASE);
		return 0;
	}
	if (!soft_disable) {
		__atomic_and_fetch(&f->flags, ~TE_FL_SOFT_DISABLED, __ATOMIC_RELEASE);
	} else {
		if (++f->sm_ref > 1)
			return 0;
		__atomic_or_fetch(&f->flags, TE_FL_SOFT_MODE, __ATOMIC_RELEASE);
	}
	if (!(__atomic_load_n(&f->flags, __ATOMIC_ACQUIRE) & TE_FL_ENABLED)) {
		if (soft_disable)
			__atomic_or_fetch(&f->flags, TE_FL_SOFT_DISABLED, __ATOMIC_RELEASE);
		ret = te_buffer(f->tt);
		if (ret)
			return ret;
		if (!f->call->ev)
			return -ENODEV;	/* its object is unloaded */
		__atomic_or_fetch(&f->flags, TE_FL_ENABLED, __ATOMIC_RELEASE);
		te_reg(f->call, true);
	}
	return 0;
}

/*
 * kernel __ftrace_set_clr_event_nolock(): every event of @tt that @match
 * (event or system name), @sub (system) and @event select; Return: 0, or
 * -EINVAL none did.  @dry: only whether some would be.
 */
static int set_clr_event(struct te_tr *tt, const char *match, const char *sub,
			 const char *event, int set, bool dry)
{
	int ret = -EINVAL, eret = 0;

	for (unsigned int k = 0; k < nr_calls; k++) {
		struct te_call *c = calls[k];

		if (!c->ev && !(file_of(tt, c)->flags & TE_FL_ENABLED))
			continue;
		if (match && strcmp(match, c->name) && strcmp(match, c->system))
			continue;
		if (sub && strcmp(sub, c->system))
			continue;
		if (event && strcmp(event, c->name))
			continue;
		ret = dry ? 0 : te_enable_disable(file_of(tt, c), set, 0);
		if (ret && !eret)
			eret = ret;
		ret = eret;
	}
	return ret;
}

/* kernel ftrace_set_clr_event(): "sys:event", "sys:", "*:event", ":event", "name" */
static int set_clr_word(struct te_tr *tt, char *w, bool dry)
{
	char *colon, *sub = NULL, *event = NULL, *match = w;
	int set = 1;

	if (*w == '!') {
		set = 0;
		match = ++w;
	}
	colon = strchr(w, ':');
	if (colon) {
		*colon = 0;
		sub = w;
		event = colon + 1;
		match = NULL;
		if (!*sub || !strcmp(sub, "*"))
			sub = NULL;
		if (!*event || !strcmp(event, "*"))
			event = NULL;
	}
	return set_clr_event(tt, match, sub, event, set, dry);
}

void usft_trace_events_remove(struct trace_array *tr)
{
	struct te_tr *tt = te_tr_of(tr, false);
	struct te_file **old;

	if (!tt)
		return;
	old = calloc(nr_calls + 1, sizeof(*old));
	for (unsigned int k = 0; k < nr_calls; k++) {
		struct te_file *f = file_of(tt, calls[k]);

		if (f && (f->flags & TE_FL_ENABLED))
			te_reg(calls[k], false);
		__atomic_store_n(&calls[k]->files[tt->slot], NULL, __ATOMIC_RELEASE);
		if (old)
			old[k] = f;
	}
	trs[tt->slot] = NULL;
	if (!te_synchronize()) {
		/* a probe may still be in a file of tt: keep the files, tt and its buffer */
		free(old);
		return;
	}
	for (unsigned int k = 0; old && k < nr_calls; k++) {
		if (!old[k])
			continue;
		usft_filter_free(old[k]->filter);
		free(old[k]->filter_str);
		for (size_t i = 0; old[k]->trigs && i < old[k]->trigs->n; i++)
			free_trigger(old[k]->trigs->t[i]);
		free(old[k]->trigs);
		free(old[k]);
	}
	free(old);
	free(tt->pids);
	if (tt->buf)
		munmap(tt->buf, TE_BUF_SIZE);
	while (tt->sysfilters) {
		struct te_sysfilter *s = tt->sysfilters;

		tt->sysfilters = s->next;
		free(s->system);
		free(s->str);
		free(s);
	}
	free(tt);
}

/* ---- printing ------------------------------------------------------------------ */

/*
 * the event's print_fmt applied to @rec: each conversion prints the next
 * field of the event's args (a string field with %s; a numeric field with
 * its own width; %s of a numeric field through its symbol table)
 */
static void print_fields(FILE *f, const struct te_call *c, const unsigned char *rec)
{
	unsigned int ai = 0;

	for (const char *p = c->print_fmt; *p;) {
		char spec[32], conv;
		const struct usft_event_field *fl;
		size_t sl = 1;
		const char *q = p + 1;
		uint64_t u;
		int64_t sv;

		if (*p != '%') {
			fputc(*p++, f);
			continue;
		}
		if (q[0] == '%') {
			fputc('%', f);
			p += 2;
			continue;
		}
		spec[0] = '%';
		while (*q && strchr("-+ #0", *q) && sl < 8)
			spec[sl++] = *q++;
		for (int d = 0; *q >= '0' && *q <= '9'; q++, d++)
			if (d < 3)
				spec[sl++] = *q;
		if (*q == '.') {
			spec[sl++] = *q++;
			for (int d = 0; *q >= '0' && *q <= '9'; q++, d++)
				if (d < 3)
					spec[sl++] = *q;
		}
		while (*q && strchr("hlLqjzt", *q))
			q++;
		conv = *q;
		if (!conv || !strchr("diuxXocsp", conv)) {
			fputs("?", f);
			p = *q ? q + 1 : q;
			continue;
		}
		p = q + 1;
		if (ai >= c->nr_args) {
			fputs("?", f);
			continue;
		}
		fl = &c->fields[c->args[ai++]];
		if (fl->filter_type == USFT_FILTER_STRING) {
			char s[TE_MAX_REC + 1];
			size_t n = strnlen((const char *)rec + fl->offset, fl->size);

			memcpy(s, rec + fl->offset, n);
			s[n] = 0;
			spec[sl++] = 's';
			spec[sl] = 0;
			fprintf(f, spec, s);
			continue;
		}
		sv = usft_event_field_value(fl, rec, &u);
		if (conv == 's') {
			const char *name = NULL;

			for (size_t k = 0; fl->syms && fl->syms[k].name; k++)
				if (fl->syms[k].value == sv)
					name = fl->syms[k].name;
			spec[sl++] = 's';
			spec[sl] = 0;
			if (name) {
				fprintf(f, spec, name);
			} else {
				char num[32];

				snprintf(num, sizeof(num), "0x%llx", (unsigned long long)u);
				fprintf(f, spec, num);
			}
			continue;
		}
		if (conv == 'p') {
			fprintf(f, "0x%llx", (unsigned long long)u);
			continue;
		}
		if (conv == 'c') {
			fputc((int)(u & 0xff), f);
			continue;
		}
		spec[sl++] = 'l';
		spec[sl++] = 'l';
		spec[sl++] = conv;
		spec[sl] = 0;
		if (conv == 'd' || conv == 'i')
			fprintf(f, spec, (long long)sv);
		else
			fprintf(f, spec, (unsigned long long)u);
	}
}

bool usft_trace_event_format(struct trace_array *tr, uint64_t off, uint64_t len, uint64_t id,
			     char *buf, size_t size)
{
	struct te_tr *tt = te_tr_of(tr, false);
	unsigned char rec[TE_HDR + TE_MAX_REC];
	struct te_call *c;
	unsigned long head;
	FILE *f;

	if (!tt || !tt->buf || id < TE_FIRST_ID || id >= TE_FIRST_ID + nr_calls || !size)
		return false;
	c = calls[id - TE_FIRST_ID];
	if (len != TE_HDR + c->size)
		return false;
	for (unsigned int k = 0; k < len;) {
		unsigned long at = (off + k) & (TE_BUF_SIZE - 1);
		unsigned long n = TE_BUF_SIZE - at < len - k ? TE_BUF_SIZE - at : len - k;

		memcpy(rec + k, tt->buf + at, n);
		k += (unsigned int)n;
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	head = __atomic_load_n(&tt->head, __ATOMIC_RELAXED);
	if (head - off > TE_BUF_SIZE)
		return false;	/* writers went round the buffer while it was copied */
	f = fmemopen(buf, size, "w");
	if (!f)
		return false;
	fprintf(f, "%s: ", c->name);
	print_fields(f, c, rec);
	fclose(f);
	buf[size - 1] = 0;
	return true;
}

static void print_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* kernel f_show() of events/SYS/EV/format */
static void print_format(FILE *f, const struct te_call *c)
{
	fprintf(f, "name: %s\nID: %d\nformat:\n", c->name, c->id);
	for (unsigned int i = c->nr_ev_fields; i < c->nr_ev_fields + NR_COMMON; i++) {
		const struct usft_event_field *fl = &c->fields[i];

		fprintf(f, "\tfield:%s %s;\toffset:%u;\tsize:%u;\tsigned:%d;\n", fl->type, fl->name,
			fl->offset, fl->size, fl->is_signed);
	}
	fputc('\n', f);
	for (unsigned int i = 0; i < c->nr_ev_fields; i++) {
		const struct usft_event_field *fl = &c->fields[i];

		if (fl->array)
			fprintf(f, "\tfield:%s %s[%u];\toffset:%u;\tsize:%u;\tsigned:%d;\n", fl->type,
				fl->name, fl->array, fl->offset, fl->size, fl->is_signed);
		else
			fprintf(f, "\tfield:%s %s;\toffset:%u;\tsize:%u;\tsigned:%d;\n", fl->type,
				fl->name, fl->offset, fl->size, fl->is_signed);
	}
	fputs("\nprint fmt: ", f);
	print_quoted(f, c->print_fmt);
	for (unsigned int a = 0; a < c->nr_args; a++) {
		const struct usft_event_field *fl = &c->fields[c->args[a]];

		if (!fl->syms) {
			fprintf(f, ", REC->%s", fl->name);
			continue;
		}
		fprintf(f, ", __print_symbolic(REC->%s", fl->name);
		for (size_t k = 0; fl->syms[k].name; k++)
			fprintf(f, ", { %ld, \"%s\" }", fl->syms[k].value, fl->syms[k].name);
		fputc(')', f);
	}
	fputc('\n', f);
}

/* ---- files ------------------------------------------------------------------ */

static struct te_call **sorted_calls(unsigned int *n)
{
	struct te_call **v = malloc((nr_calls + 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (unsigned int k = 0; k < nr_calls; k++)
		if (calls[k]->ev)
			v[(*n)++] = calls[k];
	qsort(v, *n, sizeof(*v), cmp_call);
	return v;
}

static struct te_call *find_call(const char *sys, size_t sl, const char *name, size_t nl)
{
	for (unsigned int k = 0; k < nr_calls; k++) {
		struct te_call *c = calls[k];

		if (c->ev && strlen(c->system) == sl && !memcmp(c->system, sys, sl) &&
		    strlen(c->name) == nl && !memcmp(c->name, name, nl))
			return c;
	}
	return NULL;
}

static bool system_exists(const char *sys, size_t sl)
{
	for (unsigned int k = 0; k < nr_calls; k++)
		if (calls[k]->ev && strlen(calls[k]->system) == sl &&
		    !memcmp(calls[k]->system, sys, sl))
			return true;
	return false;
}

/* "events/SYS[/EV]/FILE" -> its parts; Return: 1 system file, 2 event file, 0 no such */
static int parse_path(const char *file, const char **sys, size_t *sl, struct te_call **c,
		      const char **leaf)
{
	const char *p = file + 7, *s1 = strchr(p, '/'), *s2;

	if (!s1)
		return 0;
	*sys = p;
	*sl = (size_t)(s1 - p);
	if (!system_exists(p, *sl))
		return 0;
	s2 = strchr(s1 + 1, '/');
	if (!s2) {
		*leaf = s1 + 1;
		return 1;
	}
	*c = find_call(p, *sl, s1 + 1, (size_t)(s2 - s1 - 1));
	*leaf = s2 + 1;
	return *c && !strchr(*leaf, '/') ? 2 : 0;
}

/* kernel system_enable_read(): 0, 1, X (mixed), ? (no events) */
static char system_state(struct te_tr *tt, const char *sys, size_t sl)
{
	static const char set_to_char[4] = { '?', '0', '1', 'X' };
	int set = 0;

	for (unsigned int k = 0; k < nr_calls; k++) {
		struct te_call *c = calls[k];

		if (!c->ev || (sys && (strlen(c->system) != sl || memcmp(c->system, sys, sl))))
			continue;
		set |= 1 << !!(file_of(tt, c)->flags & TE_FL_ENABLED);
	}
	return set_to_char[set];
}

#define DEFAULT_SYS_FILTER_MESSAGE						\
	"### global filter ###\n"						\
	"# Use this to set filters for multiple events.\n"			\
	"# Only events with the given fields will be affected.\n"		\
	"# If no events are modified, an error message will be displayed here\n"

static struct te_sysfilter **sysfilter_slot(struct te_tr *tt, const char *sys, size_t sl)
{
	struct te_sysfilter **pp;

	for (pp = &tt->sysfilters; *pp; pp = &(*pp)->next)
		if (strlen((*pp)->system) == sl && !memcmp((*pp)->system, sys, sl))
			break;
	return pp;
}

int usft_trace_events_read(struct trace_array *tr, const char *file, FILE *f)
{
	struct te_tr *tt;
	struct te_call **v, *c = NULL;
	const char *sys, *leaf;
	unsigned int n;
	size_t sl;
	int k;

	if (strcmp(file, "available_events") && strcmp(file, "set_event") &&
	    strcmp(file, "events") && strncmp(file, "events/", 7) && strcmp(file, "set_event_pid"))
		return -ENOENT;
	usft_trace_events_init();
	te_rescan();
	tt = te_tr_of(tr, true);
	if (!tt)
		return -ENOMEM;
	if (!strcmp(file, "available_events") || !strcmp(file, "set_event") ||
	    !strcmp(file, "events")) {
		v = sorted_calls(&n);
		if (!v)
			return -ENOMEM;
		for (unsigned int i = 0; i < n; i++) {
			if (file[0] == 's' && !(file_of(tt, v[i])->flags & TE_FL_ENABLED))
				continue;
			fprintf(f, file[0] == 'e' ? "%s/%s\n" : "%s:%s\n", v[i]->system, v[i]->name);
		}
		free(v);
		return 0;
	}
	if (!strcmp(file, "set_event_pid")) {
		for (size_t i = 0; tt->pids && i < tt->pids->n; i++)
			fprintf(f, "%d\n", tt->pids->v[i]);
		return 0;
	}
	if (!strcmp(file, "events/enable")) {
		char st = system_state(tt, NULL, 0);

		fprintf(f, "%c\n", st == '?' ? '0' : st);
		return 0;
	}
	k = parse_path(file, &sys, &sl, &c, &leaf);
	if (k == 1 && !strcmp(leaf, "enable")) {
		fprintf(f, "%c\n", system_state(tt, sys, sl));
	} else if (k == 1 && !strcmp(leaf, "filter")) {
		struct te_sysfilter *s = *sysfilter_slot(tt, sys, sl);

		if (s)
			fprintf(f, "%s\n", s->str);
		else
			fputs(DEFAULT_SYS_FILTER_MESSAGE, f);
	} else if (k == 2 && !strcmp(leaf, "enable")) {
		int fl = file_of(tt, c)->flags;

		/* kernel event_enable_read() */
		fprintf(f, "%c%s\n", (fl & TE_FL_ENABLED) && !(fl & TE_FL_SOFT_DISABLED) ? '1' : '0',
			fl & (TE_FL_SOFT_DISABLED | TE_FL_SOFT_MODE) ? "*" : "");
	} else if (k == 2 && !strcmp(leaf, "id")) {
		fprintf(f, "%d\n", c->id);
	} else if (k == 2 && !strcmp(leaf, "format")) {
		print_format(f, c);
	} else if (k == 2 && !strcmp(leaf, "filter")) {
		struct te_file *fl = file_of(tt, c);

		fprintf(f, "%s\n", fl->filter_str ? fl->filter_str : "none");
	} else if (k == 2 && !strcmp(leaf, "trigger")) {
		print_triggers(f, file_of(tt, c));
	} else {
		return -ENOENT;
	}
	return 0;
}

/* replace @fl's filter with @nf (NULL: none), shown as @str; the old one freed after the probes */
static void set_filter(struct te_file *fl, struct usft_filter *nf, char *str, bool ok)
{
	struct usft_filter *old = fl->filter;

	__atomic_and_fetch(&fl->flags, ~TE_FL_FILTERED, __ATOMIC_RELEASE);
	__atomic_store_n(&fl->filter, nf, __ATOMIC_RELEASE);
	if (ok && nf)
		__atomic_or_fetch(&fl->flags, TE_FL_FILTERED, __ATOMIC_RELEASE);
	free(fl->filter_str);
	fl->filter_str = str;
	if (old && te_synchronize())
		usft_filter_free(old);
}

/*
 * kernel append_filter_err(): the error_log entry of a bad filter (the
 * filter, a caret under the error, its message)
 */
static void filter_log_err(struct trace_array *tr, const char *str,
			   const struct usft_filter_error *pe)
{
	if (pe->code > 0)
		usft_trace_array_log_err(tr, "event filter parse error", str,
					 usft_filter_err_text[pe->code], pe->pos);
	else
		usft_trace_array_log_err(tr, "event filter parse error", str,
					 usft_filter_err_text[FILT_ERR_ERRNO], 0);
}

static char *trimmed(const char *v, size_t len)
{
	while (len && (v[len - 1] == '\n' || v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	return strndup(v, len);
}

static bool is_zero(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return !strcmp(s, "0");
}

/* kernel apply_event_filter() */
static int write_event_filter(struct trace_array *tr, struct te_file *fl, const char *v,
			      size_t len, char *why, size_t wlen)
{
	struct usft_filter_error pe;
	struct usft_filter *nf = NULL;
	char *str;
	int ret;

	if (len >= 4096) {
		snprintf(why, wlen, "a filter is at most 4095 bytes");
		return -EINVAL;
	}
	str = trimmed(v, len);
	if (!str)
		return -ENOMEM;
	if (is_zero(str)) {
		free(str);
		set_filter(fl, NULL, NULL, false);
		return 0;
	}
	ret = usft_filter_parse(str, fl->call->fields, fl->call->nr_fields, &nf, &pe);
	if (ret == -ENOMEM) {
		free(str);
		return ret;
	}
	if (ret) {
		/*
		 * differs: the kernel installs the bad filter, disabled, showing the
		 * error; here a refused write changes nothing (error_log shows where)
		 */
		filter_log_err(tr, str, &pe);
		snprintf(why, wlen, "event filter parse error: %s (error_log shows where)",
			 usft_filter_err_text[pe.code > 0 ? pe.code : FILT_ERR_ERRNO]);
		free(str);
		return -EINVAL;
	}
	set_filter(fl, nf, str, true);
	return 0;
}

/*
 * kernel apply_subsystem_event_filter(): every event of the system whose
 * fields the filter names gets it, the others stop filtering; when it fits
 * none: EINVAL, nothing changed
 */
static int write_system_filter(struct trace_array *tr, struct te_tr *tt, const char *sys,
			       size_t sl, const char *v, size_t len, char *why, size_t wlen)
{
	struct te_sysfilter **pp = sysfilter_slot(tt, sys, sl), *s = *pp;
	struct usft_filter **nf = calloc(nr_calls + 1, sizeof(*nf));
	struct usft_filter_error pe;
	char *str = trimmed(v, len);
	bool any = false, zero;

	if (!str || !nf) {
		free(str);
		free(nf);
		return -ENOMEM;
	}
	zero = is_zero(str);
	for (unsigned int k = 0; k < nr_calls && !zero; k++) {
		struct te_call *c = calls[k];

		if (c->ev && strlen(c->system) == sl && !memcmp(c->system, sys, sl) &&
		    !usft_filter_parse(str, c->fields, c->nr_fields, &nf[k], &pe))
			any = true;
	}
	if (!zero && !any) {
		usft_trace_array_log_err(tr, "event filter parse error", str,
					 usft_filter_err_text[FILT_ERR_BAD_SUBSYS_FILTER], 0);
		snprintf(why, wlen, "%s", usft_filter_err_text[FILT_ERR_BAD_SUBSYS_FILTER]);
		free(str);
		free(nf);
		return -EINVAL;
	}
	for (unsigned int k = 0; k < nr_calls; k++) {
		struct te_call *c = calls[k];
		char *shown;

		if (!c->ev || strlen(c->system) != sl || memcmp(c->system, sys, sl))
			continue;
		if (zero || !nf[k]) {
			set_filter(file_of(tt, c), NULL, NULL, false);
			continue;
		}
		shown = strdup(str);
		set_filter(file_of(tt, c), nf[k], shown, shown != NULL);
	}
	free(nf);
	if (zero) {
		if (s) {
			*pp = s->next;
			free(s->system);
			free(s->str);
			free(s);
		}
		free(str);
		return 0;
	}
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s || !(s->system = strndup(sys, sl))) {
			free(s);
			free(str);
			return -ENOMEM;
		}
		*pp = s;
	}
	free(s->str);
	s->str = str;
	return 0;
}

static int parse_01(const char *v, size_t len, unsigned long *out)
{
	char *s = trimmed(v, len), *end;
	int ret = 0;

	if (!s)
		return -ENOMEM;
	errno = 0;
	*out = strtoul(s, &end, 0);
	if (!*s || *end || errno || s[0] == '-' || *out > 1)
		ret = -EINVAL;
	free(s);
	return ret;
}

/* set_event: words, each "[!]system:event" as ftrace_set_clr_event() takes it */
static int write_set_event(struct te_tr *tt, const char *v, size_t len, bool append, char *why,
			   size_t wlen)
{
	char *copy = strndup(v, len), *save = NULL;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	/* check every word first: a refused write changes nothing */
	for (char *w = strtok_r(copy, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
		char *t = strdup(w);

		ret = t ? set_clr_word(tt, t, true) : -ENOMEM;
		free(t);
		if (ret) {
			snprintf(why, wlen, "'%.100s': no such event or system (cat available_events; "
				 "the forms are system:event, system:*, *:event, event, !...)", w);
			free(copy);
			return ret;
		}
	}
	free(copy);
	if (!append)
		set_clr_event(tt, NULL, NULL, NULL, 0, false);	/* O_TRUNC: all off first */
	copy = strndup(v, len);
	if (!copy)
		return -ENOMEM;
	save = NULL;
	for (char *w = strtok_r(copy, " \t\n", &save); w && !ret; w = strtok_r(NULL, " \t\n", &save))
		ret = set_clr_word(tt, w, false);
	free(copy);
	if (ret)
		snprintf(why, wlen, "an event could not be enabled: %s", strerror(-ret));
	return ret;
}

/*
 * set_event_pid (kernel ftrace_event_pid_write()): thread ids, `>`
 * replaces, `>>` adds; a word that is not a thread id: EINVAL, nothing
 * changed.  The old list is freed after the probes that may read it.
 */
static int write_event_pids(struct te_tr *tt, const char *v, size_t len, bool append,
			    char *why, size_t wlen)
{
	size_t have = append && tt->pids ? tt->pids->n : 0, n = 0, cap = have + len / 2 + 1;
	struct te_pids *np = malloc(sizeof(*np) + cap * sizeof(int)), *old;
	char *copy = strndup(v, len), *save = NULL;

	if (!np || !copy) {
		free(np);
		free(copy);
		return -ENOMEM;
	}
	if (have)
		memcpy(np->v, tt->pids->v, have * sizeof(int));
	n = have;
	for (char *w = strtok_r(copy, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
		char *end;
		long t;

		errno = 0;
		t = strtol(w, &end, 10);
		if (*end || errno || t <= 0 || t > 0x7fffffff) {
			snprintf(why, wlen, "'%.40s': set_event_pid takes thread ids", w);
			free(np);
			free(copy);
			return -EINVAL;
		}
		np->v[n++] = (int)t;
	}
	free(copy);
	qsort(np->v, n, sizeof(int), cmp_int);
	np->n = 0;
	for (size_t i = 0; i < n; i++)
		if (!np->n || np->v[np->n - 1] != np->v[i])
			np->v[np->n++] = np->v[i];
	old = tt->pids;
	__atomic_store_n(&tt->pids, np->n ? np : NULL, __ATOMIC_RELEASE);
	if (!np->n)
		free(np);	/* empty: every thread again */
	if (old && te_synchronize())
		free(old);	/* (not freed: a probe never left; kept, never reused) */
	return 0;
}

int usft_trace_events_write(struct trace_array *tr, const char *file, const char *v, size_t len,
			    bool append, char *why, size_t wlen)
{
	struct te_call *c = NULL;
	const char *sys, *leaf;
	unsigned long n;
	struct te_tr *tt;
	size_t sl;
	int k, ret;

	if (strcmp(file, "set_event") && strncmp(file, "events/", 7) && strcmp(file, "set_event_pid"))
		return -ENOENT;
	usft_trace_events_init();
	te_rescan();
	tt = te_tr_of(tr, true);
	if (!tt) {
		snprintf(why, wlen, "events work in the top level and %d instances", TE_MAX_ARRAYS - 1);
		return -ENOMEM;
	}
	if (!strcmp(file, "set_event"))
		return write_set_event(tt, v, len, append, why, wlen);
	if (!strcmp(file, "set_event_pid"))
		return write_event_pids(tt, v, len, append, why, wlen);
	if (!strcmp(file, "events/enable")) {
		if (parse_01(v, len, &n)) {
			snprintf(why, wlen, "events/enable takes 0 or 1");
			return -EINVAL;
		}
		ret = set_clr_event(tt, NULL, NULL, NULL, (int)n, false);
		/* with no event at all there is nothing to switch (the kernel always has some) */
		return ret == -EINVAL && system_state(tt, NULL, 0) == '?' ? 0 : ret;
	}
	k = parse_path(file, &sys, &sl, &c, &leaf);
	if (k == 1 && !strcmp(leaf, "enable")) {
		char s[64];

		if (parse_01(v, len, &n)) {
			snprintf(why, wlen, "enable takes 0 or 1");
			return -EINVAL;
		}
		snprintf(s, sizeof(s), "%.*s", (int)sl, sys);
		return set_clr_event(tt, NULL, s, NULL, (int)n, false);
	}
	if (k == 1 && !strcmp(leaf, "filter"))
		return write_system_filter(tr, tt, sys, sl, v, len, why, wlen);
	if (k == 2 && !strcmp(leaf, "enable")) {
		if (parse_01(v, len, &n)) {
			snprintf(why, wlen, "enable takes 0 or 1");
			return -EINVAL;
		}
		ret = te_enable_disable(file_of(tt, c), (int)n, 0);
		if (ret)
			snprintf(why, wlen, "%s:%s not enabled: %s", c->system, c->name, strerror(-ret));
		return ret;
	}
	if (k == 2 && !strcmp(leaf, "filter"))
		return write_event_filter(tr, file_of(tt, c), v, len, why, wlen);
	if (k == 2 && !strcmp(leaf, "trigger"))
		return write_trigger(tr, tt, file_of(tt, c), v, len, why, wlen);
	if (k)
		return -EACCES;
	return -ENOENT;
}

/* ---- event triggers (kernel kernel/trace/trace_events_trigger.c) ---- */

/* one use of a counted trigger; Return: whether it may fire */
static bool trig_take(struct te_trigger *t)
{
	long old = __atomic_load_n(&t->count, __ATOMIC_ACQUIRE);

	do {
		if (!old)
			return false;
		if (old == -1)
			return true;
	} while (!__atomic_compare_exchange_n(&t->count, &old, old - 1, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	return true;
}

static void te_run_triggers(struct te_file *fl, const unsigned char *rec, unsigned int len,
			    unsigned int cpu, unsigned long ip)
{
	const struct te_trigs *ts = __atomic_load_n(&fl->trigs, __ATOMIC_ACQUIRE);
	struct trace_array *tr = fl->tt->tr;

	for (size_t i = 0; ts && i < ts->n; i++) {
		struct te_trigger *t = ts->t[i];
		bool on;

		if (t->filter && !usft_filter_match(t->filter, rec, len, cpu))
			continue;
		switch (t->type) {
		case TRIG_TRACEON:
		case TRIG_TRACEOFF:
			/* kernel traceon_count_trigger(): counts only a change of state */
			on = t->type == TRIG_TRACEON;
			if (usft_trace_array_is_on(tr) == on || !trig_take(t))
				break;
			usft_trace_array_set_on(tr, on);
			break;
		case TRIG_STACKTRACE:
			if (trig_take(t))
				usft_trace_array_dump_stack(tr, ip, 0);
			break;
		default:
			on = t->type == TRIG_ENABLE;
			if (on == !(__atomic_load_n(&t->target->flags, __ATOMIC_ACQUIRE) &
				    TE_FL_SOFT_DISABLED) || !trig_take(t))
				break;
			if (on)
				__atomic_and_fetch(&t->target->flags, ~TE_FL_SOFT_DISABLED,
						   __ATOMIC_RELEASE);
			else
				__atomic_or_fetch(&t->target->flags, TE_FL_SOFT_DISABLED,
						  __ATOMIC_RELEASE);
			break;
		}
	}
}

static void print_triggers(FILE *f, const struct te_file *fl)
{
	const struct te_trigs *ts = fl->trigs;

	if (!ts || !ts->n) {
		fputs("# Available triggers:\n# traceon traceoff stacktrace enable_event "
		      "disable_event\n", f);
		return;
	}
	for (size_t i = 0; i < ts->n; i++) {
		const struct te_trigger *t = ts->t[i];
		long count = __atomic_load_n(&t->count, __ATOMIC_RELAXED);

		fputs(trig_names[t->type], f);
		if (t->target)
			fprintf(f, ":%s:%s", t->target->call->system, t->target->call->name);
		if (count == -1)
			fputs(":unlimited", f);
		else
			fprintf(f, ":count=%ld", count);
		if (t->filter_str)
			fprintf(f, " if %s", t->filter_str);
		fputc('\n', f);
	}
}

static void free_trigger(struct te_trigger *t)
{
	usft_filter_free(t->filter);
	free(t->filter_str);
	free(t);
}

/* kernel trace_event_trigger_enable_disable(): the first trigger puts the event in soft mode */
static int trigger_mode(struct te_file *fl, bool on)
{
	int ret = 0;

	if (on) {
		if (fl->tm_ref++)
			return 0;
		__atomic_or_fetch(&fl->flags, TE_FL_TRIGGER_MODE, __ATOMIC_RELEASE);
		ret = te_enable_disable(fl, 1, 1);
		if (ret) {
			fl->tm_ref--;
			__atomic_and_fetch(&fl->flags, ~TE_FL_TRIGGER_MODE, __ATOMIC_RELEASE);
		}
		return ret;
	}
	if (--fl->tm_ref)
		return 0;
	__atomic_and_fetch(&fl->flags, ~TE_FL_TRIGGER_MODE, __ATOMIC_RELEASE);
	return te_enable_disable(fl, 0, 1);
}

/*
 * one command written to a trigger file (kernel trigger_process_regex()):
 * "[!]traceon|traceoff|stacktrace[:N] [if FILTER]",
 * "[!]enable_event|disable_event:SYSTEM:EVENT[:N] [if FILTER]"
 */
static int write_trigger(struct trace_array *tr, struct te_tr *tt, struct te_file *fl,
			 const char *v, size_t len, char *why, size_t wlen)
{
	char *buf = trimmed(v, len), *cmd, *next, *param = NULL, *fstr = NULL, *number = NULL;
	struct te_trigs *old = fl->trigs, *nt;
	struct te_trigger *t = NULL;
	struct te_file *target = NULL;
	struct usft_filter_error pe;
	bool remove;
	int type = -1, ret = -EINVAL;
	size_t n = old ? old->n : 0, k;

	if (!buf)
		return -ENOMEM;
	next = buf;
	while (*next == ' ' || *next == '\t')
		next++;
	if (!*next) {
		free(buf);
		return 0;	/* kernel: an empty write does nothing */
	}
	cmd = strsep(&next, ": \t");
	remove = cmd[0] == '!';
	cmd += remove;
	while (next && (*next == ' ' || *next == '\t'))
		next++;
	if (next && !*next)
		next = NULL;
	for (int i = 0; i < 5; i++)
		if (!strcmp(cmd, trig_names[i]))
			type = i;
	if (type < 0) {
		snprintf(why, wlen, "'%.40s': no such trigger (traceon, traceoff, stacktrace, "
			 "enable_event, disable_event)", cmd);
		goto out;
	}
	/* kernel event_trigger_separate_filter(): "param if filter"; a param is a number here */
	if (next && (type >= TRIG_ENABLE || (*next >= '0' && *next <= '9'))) {
		param = strsep(&next, " \t");
		if (next) {
			while (*next == ' ' || *next == '\t')
				next++;
			fstr = *next ? next : NULL;
		}
	} else {
		fstr = next;
	}
	if (type >= TRIG_ENABLE) {
		char *system = param ? strsep(&param, ":") : NULL, *event = param ?
			       strsep(&param, ":") : NULL;
		struct te_call *c = system && event ? find_call(system, strlen(system), event,
								 strlen(event)) : NULL;

		if (!c) {
			snprintf(why, wlen, "%s takes SYSTEM:EVENT[:N] of an event (cat "
				 "available_events)", cmd);
			goto out;
		}
		target = file_of(tt, c);
		number = param;
	} else {
		number = param;
	}
	for (k = 0; k < n; k++)
		if ((int)old->t[k]->type == type && old->t[k]->target == target)
			break;
	if (remove) {
		if (k == n) {
			ret = 0;	/* kernel: removing what is not there is no error */
			goto out;
		}
	} else if (k < n) {
		snprintf(why, wlen, "%s is already set on this event ('!%s' removes it)", cmd, cmd);
		ret = -EEXIST;
		goto out;
	}
	if (!remove) {
		t = calloc(1, sizeof(*t));
		if (!t) {
			ret = -ENOMEM;
			goto out;
		}
		t->type = (enum te_trig_type)type;
		t->target = target;
		t->count = -1;
		if (number) {
			char *end;

			errno = 0;
			t->count = (long)strtoul(number, &end, 0);
			if (!*number || *end || errno || *number == '-') {
				snprintf(why, wlen, "'%s': the count is a number", number);
				goto out;
			}
		}
		if (fstr) {
			char *w = strsep(&fstr, " \t");

			if (strcmp(w, "if") || !fstr) {
				snprintf(why, wlen, "a trigger's filter is 'if FILTER'");
				goto out;
			}
			ret = usft_filter_parse(fstr, fl->call->fields, fl->call->nr_fields,
						&t->filter, &pe);
			if (ret) {
				if (ret == -EINVAL)
					filter_log_err(tr, fstr, &pe);
				snprintf(why, wlen, "the trigger's filter: %s (error_log shows where)",
					 usft_filter_err_text[pe.code > 0 ? pe.code : FILT_ERR_ERRNO]);
				goto out;
			}
			t->filter_str = strdup(fstr);
			ret = -EINVAL;
		}
	}
	nt = malloc(sizeof(*nt) + (n + 1) * sizeof(nt->t[0]));
	if (!nt) {
		ret = -ENOMEM;
		goto out;
	}
	nt->n = 0;
	if (!remove) {
		/* the target first (kernel event_enable_trigger_func()), then this event */
		ret = target ? te_enable_disable(target, 1, 1) : 0;
		if (!ret) {
			ret = trigger_mode(fl, true);
			if (ret && target)
				te_enable_disable(target, 0, 1);
		}
		if (ret) {
			free(nt);
			snprintf(why, wlen, "the trigger's event not enabled: %s", strerror(-ret));
			goto out;
		}
		nt->t[nt->n++] = t;	/* newest first, as the kernel's list_add_rcu() */
	}
	for (size_t i = 0; i < n; i++)
		if (!remove || i != k)
			nt->t[nt->n++] = old->t[i];
	__atomic_store_n(&fl->trigs, nt, __ATOMIC_RELEASE);
	if (remove) {
		struct te_trigger *gone = old->t[k];

		trigger_mode(fl, false);
		if (gone->target)
			te_enable_disable(gone->target, 0, 1);
		if (te_synchronize()) {
			free_trigger(gone);
			free(old);
		}
	} else if (old && te_synchronize()) {
		free(old);
	}
	t = NULL;
	ret = 0;
out:
	if (t)
		free_trigger(t);
	free(buf);
	return ret;
}

/* ---- enable_event / disable_event (kernel event_enable_func() and its probes) ---- */

struct event_probe_data {
	struct te_file *file;
	long count;		/* -1: unlimited */
	int ref;
	bool enable;
};

static void update_event_probe(struct event_probe_data *d)
{
	if (d->enable)
		__atomic_and_fetch(&d->file->flags, ~TE_FL_SOFT_DISABLED, __ATOMIC_RELEASE);
	else
		__atomic_or_fetch(&d->file->flags, TE_FL_SOFT_DISABLED, __ATOMIC_RELEASE);
}

static void event_enable_probe(unsigned long ip, unsigned long parent_ip, struct trace_array *tr,
			       struct ftrace_probe_ops *ops, void *data)
{
	void **pd = ftrace_func_mapper_find_ip(data, ip);

	(void)parent_ip, (void)tr, (void)ops;
	if (pd && *pd)
		update_event_probe(*pd);
}

static void event_enable_count_probe(unsigned long ip, unsigned long parent_ip,
				     struct trace_array *tr, struct ftrace_probe_ops *ops, void *data)
{
	void **pd = ftrace_func_mapper_find_ip(data, ip);
	struct event_probe_data *d;
	long old;

	(void)parent_ip, (void)tr, (void)ops;
	if (!pd || !*pd)
		return;
	d = *pd;
	old = __atomic_load_n(&d->count, __ATOMIC_ACQUIRE);
	do {
		if (!old)
			return;
		/* already in the state it would switch to */
		if (d->enable == !(__atomic_load_n(&d->file->flags, __ATOMIC_ACQUIRE) &
				   TE_FL_SOFT_DISABLED))
			return;
		if (old == -1)
			break;
	} while (!__atomic_compare_exchange_n(&d->count, &old, old - 1, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	update_event_probe(d);
}

static int event_enable_print(struct seq_file *m, unsigned long ip, struct ftrace_probe_ops *ops,
			      void *data)
{
	void **pd = ftrace_func_mapper_find_ip(data, ip);
	struct event_probe_data *d;
	const char *fn;
	long count;

	(void)ops;
	if (!pd || !*pd)
		return 0;
	d = *pd;
	fn = usft_kallsyms_lookup(ip, NULL);
	if (fn)
		seq_printf(m, "%s:", fn);
	else
		seq_printf(m, "0x%lx:", ip);
	seq_printf(m, "%s:%s:%s", d->enable ? "enable_event" : "disable_event",
		   d->file->call->system, d->file->call->name);
	count = __atomic_load_n(&d->count, __ATOMIC_RELAXED);
	if (count == -1)
		seq_puts(m, ":unlimited\n");
	else
		seq_printf(m, ":count=%ld\n", count);
	return 0;
}

static int event_enable_init(struct ftrace_probe_ops *ops, struct trace_array *tr,
			     unsigned long ip, void *init_data, void **data)
{
	struct ftrace_func_mapper *mapper = *data;
	struct event_probe_data *d = init_data;
	int ret;

	(void)ops, (void)tr;
	if (!mapper) {
		mapper = allocate_ftrace_func_mapper();
		if (!mapper)
			return -ENODEV;
		*data = mapper;
	}
	ret = ftrace_func_mapper_add_ip(mapper, ip, d);
	if (ret < 0)
		return ret;
	d->ref++;
	return 0;
}

static void free_probe_data(void *data)
{
	struct event_probe_data *d = data;

	if (--d->ref)
		return;
	te_enable_disable(d->file, 0, 1);	/* its soft mode ends */
	free(d);
}

static void event_enable_free(struct ftrace_probe_ops *ops, struct trace_array *tr,
			      unsigned long ip, void *data)
{
	struct event_probe_data *d;

	(void)ops, (void)tr;
	if (!ip) {
		if (data)
			free_ftrace_func_mapper(data, free_probe_data);
		return;
	}
	d = ftrace_func_mapper_remove_ip(data, ip);
	if (d && d->ref > 0)
		free_probe_data(d);
}

static struct ftrace_probe_ops event_enable_probe_ops = {
	.func = event_enable_probe, .print = event_enable_print,
	.init = event_enable_init, .free = event_enable_free,
};
static struct ftrace_probe_ops event_enable_count_probe_ops = {
	.func = event_enable_count_probe, .print = event_enable_print,
	.init = event_enable_init, .free = event_enable_free,
};
static struct ftrace_probe_ops event_disable_probe_ops = {
	.func = event_enable_probe, .print = event_enable_print,
	.init = event_enable_init, .free = event_enable_free,
};
static struct ftrace_probe_ops event_disable_count_probe_ops = {
	.func = event_enable_count_probe, .print = event_enable_print,
	.init = event_enable_init, .free = event_enable_free,
};

/* "glob:enable_event:system:event[:count]" (kernel event_enable_func()) */
static int event_enable_func(struct trace_array *tr, struct ftrace_hash *hash, char *glob,
			     char *cmd, char *param, int enabled)
{
	struct ftrace_probe_ops *ops;
	struct event_probe_data *d;
	char *system, *event, *number, *end;
	struct te_call *c;
	struct te_tr *tt;
	bool enable;
	int ret;

	(void)hash;
	if (!tr)
		return -ENODEV;
	if (!enabled || !param)
		return -EINVAL;
	system = strsep(&param, ":");
	if (!param)
		return -EINVAL;
	event = strsep(&param, ":");
	te_rescan();
	tt = te_tr_of(tr, true);
	c = find_call(system, strlen(system), event, strlen(event));
	if (!tt || !c)
		return -EINVAL;
	enable = !strcmp(cmd, "enable_event");
	if (enable)
		ops = param ? &event_enable_count_probe_ops : &event_enable_probe_ops;
	else
		ops = param ? &event_disable_count_probe_ops : &event_disable_probe_ops;
	if (glob[0] == '!')
		return unregister_ftrace_function_probe_func(glob + 1, tr, ops);
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->enable = enable;
	d->count = -1;
	d->file = file_of(tt, c);
	if (param) {
		number = strsep(&param, ":");
		errno = 0;
		d->count = (long)strtoul(number, &end, 0);
		if (!*number || *end || errno || number[0] == '-') {
			free(d);
			return -EINVAL;
		}
	}
	ret = te_enable_disable(d->file, 1, 1);
	if (ret < 0) {
		free(d);
		return ret;
	}
	ret = register_ftrace_function_probe(glob, tr, ops, d);
	if (ret <= 0) {
		te_enable_disable(d->file, 0, 1);
		if (!d->ref)
			free(d);
		return ret ? ret : -ENOENT;
	}
	return 0;
}

static struct ftrace_func_command event_enable_cmd = {
	.name = "enable_event", .func = event_enable_func,
};
static struct ftrace_func_command event_disable_cmd = {
	.name = "disable_event", .func = event_enable_func,
};

void usft_trace_events_init(void)
{
	if (te_inited)
		return;
	te_inited = true;
	te_rescan();
	/* kernel register_event_cmds() */
	register_ftrace_command(&event_enable_cmd);
	register_ftrace_command(&event_disable_cmd);
}
