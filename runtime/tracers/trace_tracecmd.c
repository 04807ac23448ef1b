// SPDX-License-Identifier: MIT
/*
 * tracers/trace_tracecmd.c - `usft report --format trace-cmd -o FILE.dat`:
 * a trace-cmd file (trace-cmd.dat(5), version 6) written with Debian's
 * libtracecmd, that `trace-cmd report` prints and KernelShark opens.
 *
 * libtracecmd writes a file from a tracing directory (tracefs) and the raw
 * per-CPU ring-buffer pages: usft builds both in a private temporary
 * directory.  The tracing directory holds the kernel's header_page and
 * header_event descriptions and the formats of the three ftrace events the
 * tracers stand for: ftrace:function (ID 1, TRACE_FN), ftrace:funcgraph_exit
 * (10, TRACE_GRAPH_RET) and ftrace:funcgraph_entry (11, TRACE_GRAPH_ENT),
 * laid out as kernel/trace/trace_entries.h has them on a 64-bit kernel.
 * Each CPU's events go into pages of the kernel's ring buffer format
 * (kernel/trace/ring_buffer.c: a page header of timestamp and commit, then
 * events with a 5-bit type_len and a 27-bit time delta, TIME_EXTEND when a
 * delta does not fit).  Functions are named through a kallsyms file: one
 * made-up kernel-like address per distinct name, so the processes of a
 * trace (whose addresses overlap) keep their own names.
 *
 * The events are the recorded ones, on the CPU each was recorded on (CPU 0
 * when the recorder did not know it), pid = thread id; funcgraph_exit
 * carries the entry's time as calltime.  Lost events are not written.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "trace_views.h"

#ifndef USFT_HAVE_TRACECMD
int usft_write_tracecmd(FILE *out, struct usft_trace *t, const char **why)
{
	(void)out;
	(void)t;
	*why = "this usft was built without libtracecmd: install libtracecmd-dev (make deps) "
	       "and rebuild";
	return -ENOSYS;
}
#else
/*
 * libtracecmd's writer (libtracecmd 1.x/3.x, trace-cmd-private.h, not in
 * the -dev package's public header): the functions trace-cmd record uses.
 */
struct tracecmd_output;
struct tracecmd_event_list;
struct tracecmd_output *tracecmd_output_create_fd(int fd);
int tracecmd_output_set_version(struct tracecmd_output *handle, int file_version);
int tracecmd_output_set_trace_dir(struct tracecmd_output *handle, const char *tracing_dir);
int tracecmd_output_set_kallsyms(struct tracecmd_output *handle, const char *kallsyms);
int tracecmd_output_write_headers(struct tracecmd_output *handle,
				  struct tracecmd_event_list *list);
void tracecmd_set_quiet(struct tracecmd_output *handle, bool set_quiet);
void tracecmd_set_out_clock(struct tracecmd_output *handle, const char *clock);
int tracecmd_write_cmdlines(struct tracecmd_output *handle);
int tracecmd_write_cpus(struct tracecmd_output *handle, int cpus);
int tracecmd_add_buffer_info(struct tracecmd_output *handle, const char *name, int cpus);
int tracecmd_write_buffer_info(struct tracecmd_output *handle);
int tracecmd_write_options(struct tracecmd_output *handle);
int tracecmd_write_cpu_data(struct tracecmd_output *handle, int cpus,
			    char *const *cpu_data_files, const char *buff_name);
void tracecmd_output_close(struct tracecmd_output *handle);

#define TC_PAGE		4096
#define TC_PAGE_HDR	16		/* u64 timestamp, local_t commit */
#define TC_DELTA_BITS	27
#define TC_TYPE_EXTEND	30
#define TC_MAX_CPUS	4096
#define TC_DIR_MAX	1024		/* the temporary directory's path */
#define TC_ADDR_BASE	0xffffffff81000000ULL

enum { ID_FUNCTION = 1, ID_KERNEL_STACK = 4, ID_PRINT = 5, ID_GRAPH_RET = 10, ID_GRAPH_ENT = 11 };

/* the kernel's FTRACE_STACK_ENTRIES: kernel_stack's declared caller[] */
#define TC_STACK_DECLARED	8
/* frames kept of one stack (the writer's USFT_STACK_ENTRIES); a hostile file's extra ones are dropped */
#define TC_STACK_MAX		64

static const char header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";

static const char header_event[] =
	"# compressed entry header\n"
	"\ttype_len    :    5 bits\n"
	"\ttime_delta  :   27 bits\n"
	"\tarray       :   32 bits\n"
	"\n"
	"\tpadding     : type == 29\n"
	"\ttime_extend : type == 30\n"
	"\ttime_stamp : type == 31\n"
	"\tdata max type_len  == 28\n";

#define COMMON_FIELDS \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"

static const struct { const char *name, *format; } events[] = {
	{ "function",
	  "name: function\nID: 1\nformat:\n" COMMON_FIELDS
	  "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:unsigned long parent_ip;\toffset:16;\tsize:8;\tsigned:0;\n\n"
	  "print fmt: \" %ps <-- %ps\", (void *)REC->ip, (void *)REC->parent_ip\n" },
	{ "funcgraph_exit",
	  "name: funcgraph_exit\nID: 10\nformat:\n" COMMON_FIELDS
	  "\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:int depth;\toffset:16;\tsize:4;\tsigned:1;\n"
	  "\tfield:unsigned int overrun;\toffset:20;\tsize:4;\tsigned:0;\n"
	  "\tfield:unsigned long long calltime;\toffset:24;\tsize:8;\tsigned:0;\n"
	  "\tfield:unsigned long long rettime;\toffset:32;\tsize:8;\tsigned:0;\n\n"
	  "print fmt: \"<-- %ps (%d) (start: %llx  end: %llx) over: %d\", (void *)REC->func, "
	  "REC->depth, REC->calltime, REC->rettime, REC->depth\n" },
	/*
	 * kernel/trace/trace_entries.h's kernel_stack as 6.1 prints its format
	 * (F_printk() stringified); a record carries all its frames past the
	 * declared 8, as the kernel's does, and trace-cmd reads them all
	 */
	{ "kernel_stack",
	  "name: kernel_stack\nID: 4\nformat:\n" COMMON_FIELDS
	  "\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n"
	  "\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n\n"
	  "print fmt: \"\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n\" \"\\t=> %ps\\n\\t=> %ps\\n"
	  "\\t=> %ps\\n\" \"\\t=> %ps\\n\\t=> %ps\\n\", (void *)REC->caller[0], "
	  "(void *)REC->caller[1], (void *)REC->caller[2], (void *)REC->caller[3], "
	  "(void *)REC->caller[4], (void *)REC->caller[5], (void *)REC->caller[6], "
	  "(void *)REC->caller[7]\n" },
	{ "print",
	  "name: print\nID: 5\nformat:\n" COMMON_FIELDS
	  "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:1;\n\n"
	  "print fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n" },
	{ "funcgraph_entry",
	  "name: funcgraph_entry\nID: 11\nformat:\n" COMMON_FIELDS
	  "\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:int depth;\toffset:16;\tsize:4;\tsigned:1;\n\n"
	  "print fmt: \"--> %ps (%d)\", (void *)REC->func, REC->depth\n" },
};

/* ---- names -> made-up addresses (the kallsyms file) ---------------------------- */

struct tc_name {
	char *name;
	uint64_t addr;
};

struct tc_names {
	struct tc_name *tab;
	size_t cap, n;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static uint64_t name_addr(struct tc_names *m, const char *name)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap) {
		struct tc_names nm = { .cap = m->cap ? m->cap * 2 : 1024, .n = m->n };

		nm.tab = calloc(nm.cap, sizeof(*nm.tab));
		if (!nm.tab)
			return 0;
		for (size_t k = 0; k < m->cap; k++) {
			if (!m->tab[k].name)
				continue;
			for (i = str_hash(m->tab[k].name) & (nm.cap - 1); nm.tab[i].name;
			     i = (i + 1) & (nm.cap - 1))
				;
			nm.tab[i] = m->tab[k];
		}
		free(m->tab);
		*m = nm;
	}
	for (i = str_hash(name) & (m->cap - 1); m->tab[i].name; i = (i + 1) & (m->cap - 1))
		if (!strcmp(m->tab[i].name, name))
			return m->tab[i].addr;
	m->tab[i].name = strdup(name);
	if (!m->tab[i].name)
		return 0;
	m->tab[i].addr = TC_ADDR_BASE + 16 * (uint64_t)m->n++;
	return m->tab[i].addr;
}

static uint64_t ev_addr(struct tc_names *m, struct usft_trace *t, const struct usft_revent *e,
			uint64_t ip)
{
	const char *n = usft_trace_sym(t, e->sess, e->epoch, ip, NULL);
	char buf[32];

	if (!n) {
		snprintf(buf, sizeof(buf), "0x%" PRIx64, ip);
		n = buf;
	}
	return name_addr(m, n);
}

/* ---- per-thread entry times (funcgraph_exit's calltime) -------------------------- */

struct tc_thread {
	uint32_t sess, tid;
	uint64_t *ts;		/* by depth */
	unsigned int cap;
	struct tc_thread *next;
};

#define TC_TBUCKETS 4096

static struct tc_thread *tc_thread(struct tc_thread **tab, uint32_t sess, uint32_t tid)
{
	size_t h = (size_t)(((tid * 0x9e3779b97f4a7c15ULL) ^ sess) >> 20) & (TC_TBUCKETS - 1);
	struct tc_thread *th;

	for (th = tab[h]; th; th = th->next)
		if (th->tid == tid && th->sess == sess)
			return th;
	th = calloc(1, sizeof(*th));
	if (!th)
		return NULL;
	th->sess = sess;
	th->tid = tid;
	th->next = tab[h];
	tab[h] = th;
	return th;
}

/* ---- ring-buffer pages, one file per CPU ------------------------------------------- */

struct tc_cpu {
	FILE *f;
	unsigned char page[TC_PAGE];
	size_t len;		/* bytes of events in the page */
	uint64_t last;		/* time of the last event written */
	bool used;
};

static int flush_page(struct tc_cpu *c)
{
	uint64_t commit = c->len;

	if (!c->len)
		return 0;
	memcpy(c->page + 8, &commit, 8);
	memset(c->page + TC_PAGE_HDR + c->len, 0, TC_PAGE - TC_PAGE_HDR - c->len);
	if (fwrite(c->page, TC_PAGE, 1, c->f) != 1)
		return -errno;
	c->len = 0;
	return 0;
}

/*
 * one event of @len bytes (a multiple of 4, at most 112; longer ones, up to
 * a page, in the kernel's long form: type_len 0, the length in array[0])
 * at time @ts
 */
static int put_event(struct tc_cpu *c, uint64_t ts, const void *data, size_t len)
{
	uint64_t delta;
	bool big = len > 112;
	size_t need = 4 + (big ? 4 : 0) + len + 8;	/* room for a TIME_EXTEND too */
	uint32_t hdr;
	int r;

	if (c->len && TC_PAGE_HDR + c->len + need > TC_PAGE && (r = flush_page(c)))
		return r;
	if (!c->len) {
		memcpy(c->page, &ts, 8);	/* the page's timestamp: the first event's */
		c->last = ts;
	}
	delta = ts > c->last ? ts - c->last : 0;
	if (delta >> TC_DELTA_BITS) {
		uint32_t ext[2] = { TC_TYPE_EXTEND | (uint32_t)((delta & ((1U << TC_DELTA_BITS) - 1))
							       << 5),
				    (uint32_t)(delta >> TC_DELTA_BITS) };

		memcpy(c->page + TC_PAGE_HDR + c->len, ext, 8);
		c->len += 8;
		delta = 0;
	}
	hdr = (uint32_t)(big ? 0 : len / 4) | (uint32_t)(delta << 5);
	memcpy(c->page + TC_PAGE_HDR + c->len, &hdr, 4);
	c->len += 4;
	if (big) {
		/* kernel rb_update_event(): array[0] counts itself */
		uint32_t alen = (uint32_t)len + 4;

		memcpy(c->page + TC_PAGE_HDR + c->len, &alen, 4);
		c->len += 4;
	}
	memcpy(c->page + TC_PAGE_HDR + c->len, data, len);
	c->len += len;
	c->last = ts;
	c->used = true;
	return 0;
}

/* ---- the temporary tracing directory --------------------------------------------------- */

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	int fd;
	size_t len = strlen(text);
	ssize_t w;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	w = write(fd, text, len);
	close(fd);
	return w == (ssize_t)len ? 0 : -EIO;
}

static void remove_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;

	if (d) {
		while ((de = readdir(d))) {
			char sub[PATH_MAX];

			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
			if (de->d_type == DT_DIR)
				remove_tree(sub);
			else
				unlink(sub);
		}
		closedir(d);
	}
	rmdir(path);
}

static int make_tracing_dir(const char *dir)
{
	char path[PATH_MAX];
	int r;

	snprintf(path, sizeof(path), "%s/events", dir);
	if (mkdir(path, 0700))
		return -errno;
	snprintf(path, sizeof(path), "%s/events/ftrace", dir);
	if (mkdir(path, 0700))
		return -errno;
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/ftrace/%s", dir, events[i].name);
		if (mkdir(path, 0700))
			return -errno;
		snprintf(path, sizeof(path), "events/ftrace/%s/format", events[i].name);
		if ((r = write_file(dir, path, events[i].format)))
			return r;
	}
	if ((r = write_file(dir, "events/header_page", header_page)) ||
	    (r = write_file(dir, "events/header_event", header_event)) ||
	    (r = write_file(dir, "printk_formats", "")) ||
	    (r = write_file(dir, "trace_clock", "[mono]\n")))
		return r;
	return 0;
}

/* ---- events ------------------------------------------------------------------------------ */

struct tc_ent {
	uint16_t type;
	uint8_t flags, preempt;
	int32_t pid;
};

static void tc_common(struct tc_ent *c, uint16_t type, uint32_t tid)
{
	*c = (struct tc_ent){ .type = type, .pid = (int32_t)tid };
}

/* a new file @name in @dir */
static FILE *open_part(const char *dir, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return fopen(path, "wxe");
}

static int close_part(FILE *f)
{
	int ret = ferror(f) ? -EIO : 0;

	if (fclose(f) && !ret)
		ret = -EIO;
	return ret;
}

/* @ncpus, or more when an event names a higher CPU (one pass over the events) */
static int max_cpus(struct usft_trace *t, int ncpus)
{
	struct usft_trace_iter *it = usft_trace_iter_new(t);
	const struct usft_revent *e;

	while (it && (e = usft_trace_iter_next(it)))
		if (e->cpu != EV_CPU_UNKNOWN && e->cpu >= ncpus)
			ncpus = e->cpu + 1;
	usft_trace_iter_free(it);
	return ncpus;
}

/*
 * A stack trace (@e, and the EV_STACK_FRAME events the reader split it
 * into, taken here) as the kernel's kernel_stack (__ftrace_trace_stack()):
 * size = the frame count, then the frames, the traced function first; a
 * stack of fewer than the declared 8 is filled up with ULONG_MAX, where
 * trace-cmd's kernel_stack handler stops.  Return: 0 or -errno.
 */
static int put_stack(struct tc_cpu *c, struct tc_names *names, struct usft_trace *t,
		     struct usft_trace_iter *it, const struct usft_revent *e)
{
	struct {
		struct tc_ent c;
		int32_t size, pad;
		uint64_t caller[TC_STACK_MAX];
	} ev;
	const struct usft_revent *f;
	uint64_t ts = e->ts;
	unsigned int n = 0, len;

	tc_common(&ev.c, ID_KERNEL_STACK, e->tid);
	while ((f = usft_trace_iter_peek_same(it)) && usft_rev_type(f) == EV_STACK_FRAME) {
		if (n < sizeof(ev.caller) / sizeof(ev.caller[0])) {
			ev.caller[n] = ev_addr(names, t, f, f->aux);
			if (!ev.caller[n++])
				return -ENOMEM;
		}
		usft_trace_iter_drop_same(it);
	}
	ev.size = (int32_t)n;
	ev.pad = 0;
	for (len = n; len < TC_STACK_DECLARED; len++)
		ev.caller[len] = UINT64_MAX;
	return put_event(c, ts, &ev, offsetof(__typeof__(ev), caller) + len * sizeof(ev.caller[0]));
}

/* the events, per CPU, into @dir/cpuN; Return: CPUs, or -errno */
static int write_pages(const char *dir, struct usft_trace *t, struct tc_names *names,
		       struct tc_thread **threads, int ncpus)
{
	struct tc_cpu *cpu = calloc((size_t)ncpus, sizeof(*cpu));
	struct usft_trace_iter *it = NULL;
	const struct usft_revent *e;
	int ret = 0, r;

	if (!cpu)
		return -ENOMEM;
	for (int i = 0; i < ncpus; i++) {
		char name[16];

		snprintf(name, sizeof(name), "cpu%d", i);
		cpu[i].f = open_part(dir, name);
		if (!cpu[i].f) {
			ret = -errno;
			goto out;
		}
	}
	it = usft_trace_iter_new(t);
	if (!it) {
		ret = -ENOMEM;
		goto out;
	}
	while (!ret && (e = usft_trace_iter_next(it))) {
		unsigned int type = usft_rev_type(e), depth = usft_rev_depth(e);
		struct tc_cpu *c = &cpu[e->cpu == EV_CPU_UNKNOWN || e->cpu >= ncpus ? 0 : e->cpu];
		uint64_t func = 0;
		struct tc_thread *th;

		if (type != EV_FUNC && type != EV_PRINT && type != EV_STACK &&
		    (type < EV_GRAPH_ENT || type > EV_GRAPH_GONE))
			continue;
		th = tc_thread(threads, e->sess, e->tid);	/* for saved_cmdlines too */
		if (!th) {
			ret = -ENOMEM;
			break;
		}
		if (type == EV_FUNC) {
			struct { struct tc_ent c; uint64_t ip, parent; } ev;

			tc_common(&ev.c, ID_FUNCTION, e->tid);
			ev.ip = ev_addr(names, t, e, usft_rev_ip(e));
			ev.parent = ev_addr(names, t, e, e->aux);
			ret = put_event(c, e->ts, &ev, sizeof(ev));
			continue;
		}
		if (type == EV_STACK) {
			ret = put_stack(c, names, t, it, e);
			continue;
		}
		if (type == EV_PRINT) {
			struct { struct tc_ent c; uint64_t ip; char buf[EV_PRINT_MAX_WORDS * 8 + 8]; } ev;
			const char *text = usft_rev_text(e);
			size_t tl = strnlen(text, EV_PRINT_MAX_WORDS * 8 - 1);

			tc_common(&ev.c, ID_PRINT, e->tid);
			ev.ip = ev_addr(names, t, e, usft_rev_ip(e));
			/* the kernel's trace_printk() text ends in its newline */
			memcpy(ev.buf, text, tl);
			ev.buf[tl++] = '\n';
			ev.buf[tl++] = 0;
			while (tl % 4)
				ev.buf[tl++] = 0;
			ret = put_event(c, e->ts, &ev, offsetof(__typeof__(ev), buf) + tl);
			continue;
		}
		func = ev_addr(names, t, e, usft_rev_ip(e));
		if (!func) {
			ret = -ENOMEM;
			break;
		}
		if (depth >= th->cap) {
			unsigned int cap = th->cap ? th->cap : 16;
			uint64_t *p;

			while (cap <= depth)
				cap *= 2;
			p = realloc(th->ts, cap * sizeof(*p));
			if (!p) {
				ret = -ENOMEM;
				break;
			}
			memset(p + th->cap, 0, (cap - th->cap) * sizeof(*p));
			th->ts = p;
			th->cap = cap;
		}
		if (type == EV_GRAPH_ENT) {
			struct { struct tc_ent c; uint64_t func; int32_t depth, pad; } ev;

			tc_common(&ev.c, ID_GRAPH_ENT, e->tid);
			ev.func = func;
			ev.depth = (int32_t)depth;
			ev.pad = 0;
			th->ts[depth] = e->ts;
			ret = put_event(c, e->ts, &ev, sizeof(ev));
		} else {
			struct {
				struct tc_ent c;
				uint64_t func;
				int32_t depth;
				uint32_t overrun;
				uint64_t calltime, rettime;
			} ev;

			tc_common(&ev.c, ID_GRAPH_RET, e->tid);
			ev.func = func;
			ev.depth = (int32_t)depth;
			ev.overrun = 0;
			/* an entry not in the file (lost, before a fork): a zero-length call */
			ev.calltime = th->ts[depth] && th->ts[depth] <= e->ts ? th->ts[depth] : e->ts;
			ev.rettime = e->ts;
			th->ts[depth] = 0;
			ret = put_event(c, e->ts, &ev, sizeof(ev));
		}
	}
	if (!ret)
		ret = usft_trace_iter_error(it);
out:
	usft_trace_iter_free(it);
	for (int i = 0; i < ncpus; i++) {
		if (!cpu[i].f)
			continue;
		if (!ret)
			ret = flush_page(&cpu[i]);
		r = close_part(cpu[i].f);
		if (!ret)
			ret = r;
	}
	free(cpu);
	return ret ? ret : ncpus;
}

static int write_kallsyms(const char *dir, const struct tc_names *m)
{
	FILE *f = open_part(dir, "kallsyms");

	if (!f)
		return -errno;
	for (size_t i = 0; i < m->cap; i++) {
		const char *n = m->tab[i].name;

		if (!n)
			continue;
		/* one token per name: kallsyms lines are "addr type name" */
		fprintf(f, "%016" PRIx64 " T ", m->tab[i].addr);
		for (; *n; n++)
			fputc(*n == ' ' || *n == '\t' || *n == '\n' ? '_' : *n, f);
		fputc('\n', f);
	}
	return close_part(f);
}

static int write_cmdlines(const char *dir, struct usft_trace *t, struct tc_thread **threads)
{
	FILE *f = open_part(dir, "saved_cmdlines");

	if (!f)
		return -errno;
	for (size_t h = 0; h < TC_TBUCKETS; h++)
		for (struct tc_thread *th = threads[h]; th; th = th->next)
			fprintf(f, "%u %s\n", th->tid, usft_trace_comm(t, th->sess, (int)th->tid));
	return close_part(f);
}

int usft_write_tracecmd(FILE *out, struct usft_trace *t, const char **why)
{
	char dir[] = "/tmp/usft-tracecmd-XXXXXX";
	const char *tmp = getenv("TMPDIR");
	char dirbuf[TC_DIR_MAX], kallsyms[PATH_MAX], *files[TC_MAX_CPUS] = { 0 };
	struct tc_thread **threads = calloc(TC_TBUCKETS, sizeof(*threads));
	struct tc_names names = { 0 };
	struct tracecmd_output *h = NULL;
	struct stat st;
	int ncpus = 1, ret = 0, fd = -1;

	*why = NULL;
	if (!threads)
		return -ENOMEM;
	for (size_t i = 0; i < t->nsess; i++)
		if (t->sess[i].nr_cpus > ncpus)
			ncpus = t->sess[i].nr_cpus;
	ncpus = max_cpus(t, ncpus);
	if (ncpus > TC_MAX_CPUS)
		ncpus = TC_MAX_CPUS;
	if (tmp && *tmp && snprintf(dirbuf, sizeof(dirbuf), "%s/usft-tracecmd-XXXXXX", tmp) <
	    (int)sizeof(dirbuf))
		;
	else
		snprintf(dirbuf, sizeof(dirbuf), "%s", dir);
	if (!mkdtemp(dirbuf)) {
		*why = "cannot make a temporary directory for the trace-cmd file's parts "
		       "(set TMPDIR to a directory you can write)";
		free(threads);
		return -errno;
	}
	ret = make_tracing_dir(dirbuf);
	if (!ret)
		ret = write_pages(dirbuf, t, &names, threads, ncpus);
	if (ret >= 0)
		ret = write_kallsyms(dirbuf, &names);
	if (!ret)
		ret = write_cmdlines(dirbuf, t, threads);
	if (ret) {
		*why = "cannot write the trace-cmd file's parts in the temporary directory "
		       "(TMPDIR, default /tmp: full or read-only?)";
		goto out;
	}
	for (int i = 0; i < ncpus; i++)
		if (asprintf(&files[i], "%s/cpu%d", dirbuf, i) < 0) {
			files[i] = NULL;
			ret = -ENOMEM;
			goto out;
		}
	/*
	 * libtracecmd 3.1's tracecmd_write_cpu_data() keeps each CPU file's
	 * size in an int: past 2 GiB it fails after copying ("did not match
	 * size of 2391515136 to -1903452160").  Say so before that copy.
	 */
	for (int i = 0; i < ncpus; i++) {
		static char msg[256];

		if (!stat(files[i], &st) && st.st_size > INT_MAX) {
			snprintf(msg, sizeof(msg), "CPU %d has %lld MiB of events and libtracecmd "
				 "writes at most 2047 MiB per CPU: convert a part of the trace "
				 "(--tid or --pid; one thread's cannot be split)", i, (long long)(st.st_size >> 20));
			*why = msg;
			ret = -EFBIG;
			goto out;
		}
	}
	snprintf(kallsyms, sizeof(kallsyms), "%s/kallsyms", dirbuf);
	fflush(out);
	fd = dup(fileno(out));
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		*why = "a trace-cmd file is written with seeks: -o must name a regular file";
		ret = -ESPIPE;
		goto out;
	}
	h = tracecmd_output_create_fd(fd);
	if (!h) {
		ret = -ENOMEM;
		goto out;
	}
	fd = -1;	/* the handle closes it */
	tracecmd_set_quiet(h, true);
	if (tracecmd_output_set_version(h, 6) || tracecmd_output_set_trace_dir(h, dirbuf) ||
	    tracecmd_output_set_kallsyms(h, kallsyms)) {
		ret = -EINVAL;
		goto fail;
	}
	tracecmd_set_out_clock(h, "mono");
	if (tracecmd_output_write_headers(h, NULL) || tracecmd_write_cmdlines(h) < 0 ||
	    tracecmd_write_cpus(h, ncpus) < 0 || tracecmd_add_buffer_info(h, "", ncpus) ||
	    tracecmd_write_buffer_info(h) < 0 || tracecmd_write_options(h) < 0 ||
	    tracecmd_write_cpu_data(h, ncpus, files, "") < 0) {
		ret = errno ? -errno : -EIO;
		goto fail;
	}
	tracecmd_output_close(h);
	h = NULL;
	goto out;
fail:
	*why = "libtracecmd could not write the file (see its message above)";
	tracecmd_output_close(h);
	h = NULL;
out:
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < ncpus; i++)
		free(files[i]);
	for (size_t i = 0; i < names.cap; i++)
		free(names.tab[i].name);
	free(names.tab);
	for (size_t k = 0; k < TC_TBUCKETS; k++)
		while (threads[k]) {
			struct tc_thread *n = threads[k]->next;

			free(threads[k]->ts);
			free(threads[k]);
			threads[k] = n;
		}
	free(threads);
	remove_tree(dirbuf);
	if (ret < 0 && !*why)
		*why = strerror(-ret);
	return ret < 0 ? ret : 0;
}
#endif /* USFT_HAVE_TRACECMD */
