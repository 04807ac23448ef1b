// SPDX-License-Identifier: MIT
/*
 * kernel/module.c - the glue of libusft-kernel: module_init()/module_exit()
 * and module_param() bookkeeping, printk(), trace_printk(), WARN/BUG, tasks
 * and kthreads on pthreads, sleeping and waking, time, stack traces and
 * symbols, and the main() that plays insmod, runs the toy kernel's workload
 * and plays rmmod.  Built without the patch flags: nothing here has a site,
 * so a sample's callbacks calling printk() are never traced themselves.
 * docs/kernel-samples.md describes the contract.
 */

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <usft/ftrace.h>
#include <usft/module.h>
#include <usft/usft.h>

#include "kernel.h"

/* ------------------------------------------------------------------ */
/* the module                                                          */

static usft_initcall_t mod_init;
static usft_exitcall_t mod_exit;
static const char *mod_file;

#define MAX_INFO 32
static struct { const char *tag, *value; } mod_info[MAX_INFO];
static unsigned int nr_info;

struct mod_param {
	const char *name;
	void *var;
	enum usft_param_type type;
	size_t size;
};
#define MAX_PARAMS 64
static struct mod_param params[MAX_PARAMS];
static unsigned int nr_params;

static void die(const char *what)
{
	fprintf(stderr, "usft-kernel: %s\n", what);
	exit(2);
}

void usft_module_set_init(usft_initcall_t fn, const char *file)
{
	if (mod_init)
		die("two module_init() in one program (one module per program)");
	mod_init = fn;
	mod_file = file;
}

void usft_module_set_exit(usft_exitcall_t fn, const char *file)
{
	if (mod_exit)
		die("two module_exit() in one program (one module per program)");
	mod_exit = fn;
	if (!mod_file)
		mod_file = file;
}

void usft_module_info(const char *tag, const char *value)
{
	if (nr_info < MAX_INFO)
		mod_info[nr_info++] = (typeof(mod_info[0])){ tag, value };
}

static size_t param_size(enum usft_param_type t)
{
	switch (t) {
	case USFT_PARAM_byte: return sizeof(unsigned char);
	case USFT_PARAM_short: case USFT_PARAM_ushort: return sizeof(short);
	case USFT_PARAM_int: case USFT_PARAM_uint: return sizeof(int);
	case USFT_PARAM_long: case USFT_PARAM_ulong: return sizeof(long);
	case USFT_PARAM_ullong: return sizeof(unsigned long long);
	case USFT_PARAM_bool: case USFT_PARAM_invbool: return sizeof(bool);
	case USFT_PARAM_charp: return sizeof(char *);
	case USFT_PARAM_string: return 0;
	}
	return 0;
}

void usft_module_param(const char *name, void *var, enum usft_param_type type, size_t size)
{
	size_t want = param_size(type);

	if (want && size != want) {
		fprintf(stderr, "usft-kernel: module_param(%s): the variable's size %zu does not "
			"match its type (%zu)\n", name, size, want);
		exit(2);
	}
	if (nr_params == MAX_PARAMS)
		die("more than 64 module parameters");
	params[nr_params++] = (struct mod_param){ name, var, type, size };
}

/* the kernel's param_set_<type>: -EINVAL for a value the type cannot hold */
static int param_set(const struct mod_param *p, const char *val)
{
	unsigned long long u;
	long long s;
	char *end;

	switch (p->type) {
	case USFT_PARAM_charp:
		*(const char **)p->var = val;
		return 0;
	case USFT_PARAM_string:
		if (strlen(val) + 1 > p->size) {
			printk(KERN_ERR "%s: string doesn't fit in %zu chars.\n", p->name,
			       p->size - 1);
			return -ENOSPC;
		}
		strcpy(p->var, val);
		return 0;
	case USFT_PARAM_bool:
	case USFT_PARAM_invbool: {
		bool b;

		if (!*val || !strcmp(val, "1") || !strcasecmp(val, "y") || !strcasecmp(val, "on"))
			b = true;
		else if (!strcmp(val, "0") || !strcasecmp(val, "n") || !strcasecmp(val, "off"))
			b = false;
		else
			return -EINVAL;
		*(bool *)p->var = p->type == USFT_PARAM_bool ? b : !b;
		return 0;
	}
	default:
		break;
	}
	errno = 0;
	if (p->type == USFT_PARAM_short || p->type == USFT_PARAM_int || p->type == USFT_PARAM_long) {
		s = strtoll(val, &end, 0);
		if (errno || end == val || *end)
			return -EINVAL;
		if (p->type == USFT_PARAM_short && (s < SHRT_MIN || s > SHRT_MAX))
			return -EINVAL;
		if (p->type == USFT_PARAM_int && (s < INT_MIN || s > INT_MAX))
			return -EINVAL;
		if (p->type == USFT_PARAM_short)
			*(short *)p->var = (short)s;
		else if (p->type == USFT_PARAM_int)
			*(int *)p->var = (int)s;
		else
			*(long *)p->var = (long)s;
		return 0;
	}
	if (*val == '-')
		return -EINVAL;
	u = strtoull(val, &end, 0);
	if (errno || end == val || *end)
		return -EINVAL;
	switch (p->type) {
	case USFT_PARAM_byte:
		if (u > UCHAR_MAX)
			return -EINVAL;
		*(unsigned char *)p->var = (unsigned char)u;
		break;
	case USFT_PARAM_ushort:
		if (u > USHRT_MAX)
			return -EINVAL;
		*(unsigned short *)p->var = (unsigned short)u;
		break;
	case USFT_PARAM_uint:
		if (u > UINT_MAX)
			return -EINVAL;
		*(unsigned int *)p->var = (unsigned int)u;
		break;
	case USFT_PARAM_ulong:
		*(unsigned long *)p->var = (unsigned long)u;
		break;
	default:
		*(unsigned long long *)p->var = u;
		break;
	}
	return 0;
}

/* the toy kernel's own parameters (usft_kernel.NAME=VALUE) */
static unsigned int run_ms = 300;
static unsigned int nr_workers = 2;

/* one "name=value" (or "name" for a bool) */
static int parse_one(char *arg)
{
	char *eq = strchr(arg, '=');
	const char *val = eq ? eq + 1 : "";
	unsigned int i;
	int err;

	if (eq)
		*eq = '\0';
	if (!strncmp(arg, "usft_kernel.", 12)) {
		struct mod_param own[] = {
			{ "run_ms", &run_ms, USFT_PARAM_uint, sizeof(run_ms) },
			{ "workers", &nr_workers, USFT_PARAM_uint, sizeof(nr_workers) },
		};
		for (i = 0; i < ARRAY_SIZE(own); i++)
			if (!strcmp(arg + 12, own[i].name))
				return param_set(&own[i], val);
		printk(KERN_WARNING "usft_kernel: unknown parameter '%s' ignored\n", arg + 12);
		return 0;
	}
	for (i = 0; i < nr_params; i++) {
		if (strcmp(params[i].name, arg))
			continue;
		err = param_set(&params[i], val);
		if (err)
			printk(KERN_ERR "%s: '%s' invalid for parameter '%s'\n",
			       program_invocation_short_name, val, arg);
		return err;
	}
	/* the kernel warns and loads the module anyway */
	printk(KERN_WARNING "%s: unknown parameter '%s' ignored\n",
	       program_invocation_short_name, arg);
	return 0;
}

static int parse_params(int argc, char **argv)
{
	const char *env = getenv("USFT_MODULE_PARAMS");
	int err, i;

	if (env) {
		char *copy = strdup(env), *save = NULL, *tok;

		if (!copy)
			return -ENOMEM;
		/* copy stays allocated: charp parameters point into it */
		for (tok = strtok_r(copy, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
			err = parse_one(tok);
			if (err)
				return err;
		}
	}
	for (i = 1; i < argc; i++) {
		err = parse_one(argv[i]);
		if (err)
			return err;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* printk, trace_printk, WARN, BUG                                     */

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

static bool env_on(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0");
}

/*
 * The kernel's vsnprintf(): C's conversions, plus the pointer extensions
 * kernel code prints symbols with: %pS ("name+0xoff"), %ps ("name"), %pB
 * (as %pS), %pF/%pf (their old names), %px and %pK (the raw pointer, which
 * plain %p also gives here: userspace has no pointer hashing to do).
 */
static void fmt_append(char *buf, size_t size, size_t *len, const char *spec, ...)
	__attribute__((format(printf, 4, 5)));
static void fmt_append(char *buf, size_t size, size_t *len, const char *spec, ...)
{
	va_list ap;
	int n;

	if (*len >= size - 1)
		return;
	va_start(ap, spec);
	n = vsnprintf(buf + *len, size - *len, spec, ap);
	va_end(ap);
	if (n > 0)
		*len = *len + (size_t)n < size - 1 ? *len + (size_t)n : size - 1;
}

static int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	size_t len = 0;
	char spec[32];

	buf[0] = '\0';
	while (*fmt) {
		const char *start = fmt;
		int width = 0, prec = 0, lng = 0;
		bool have_w = false, have_p = false, bad = false;
		char conv;

		if (*fmt != '%' || fmt[1] == '%') {
			fmt_append(buf, size, &len, "%c", *fmt);
			fmt += *fmt == '%' ? 2 : 1;
			continue;
		}
		fmt++;
		while (*fmt && strchr("-+ #0'", *fmt))
			fmt++;
		if (*fmt == '*') {
			width = va_arg(ap, int);
			have_w = true;
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9')
			fmt++;
		if (*fmt == '.') {
			fmt++;
			if (*fmt == '*') {
				prec = va_arg(ap, int);
				have_p = true;
				fmt++;
			}
			while (*fmt >= '0' && *fmt <= '9')
				fmt++;
		}
		while (*fmt && strchr("hlLqjzt", *fmt)) {
			lng += *fmt == 'l' || *fmt == 'q' || *fmt == 'L' ? 1 : 0;
			lng += *fmt == 'j' || *fmt == 'z' || *fmt == 't' ? 1 : 0;
			fmt++;
		}
		conv = *fmt;
		if (!conv || (size_t)(fmt - start) >= sizeof(spec) - 2)
			break;	/* a broken conversion ends the output, as the kernel's */
		fmt++;
		if (conv == 'p' && *fmt && strchr("SsBFfxK", *fmt)) {
			void *ptr = va_arg(ap, void *);
			char ext = *fmt++;

			if (ext == 'x' || ext == 'K') {
				fmt_append(buf, size, &len, "%016lx", (unsigned long)ptr);
			} else {
				char sym[KSYM_SYMBOL_LEN];

				sprint_symbol(sym, (unsigned long)ptr);
				if (ext == 's' || ext == 'f') {
					char *plus = strchr(sym, '+');

					if (plus)
						*plus = '\0';
				}
				fmt_append(buf, size, &len, "%s", sym);
			}
			continue;
		}
		memcpy(spec, start, (size_t)(fmt - start));
		spec[fmt - start] = '\0';
#define EMIT(val)								\
		do {								\
			if (have_w && have_p)					\
				fmt_append(buf, size, &len, spec, width, prec, val); \
			else if (have_w)					\
				fmt_append(buf, size, &len, spec, width, val);	\
			else if (have_p)					\
				fmt_append(buf, size, &len, spec, prec, val);	\
			else							\
				fmt_append(buf, size, &len, spec, val);		\
		} while (0)
		_Pragma("GCC diagnostic push")
		_Pragma("GCC diagnostic ignored \"-Wformat-nonliteral\"")
		_Pragma("GCC diagnostic ignored \"-Wformat-security\"")
		switch (conv) {
		case 'd': case 'i':
			if (lng >= 2)
				EMIT(va_arg(ap, long long));
			else if (lng == 1)
				EMIT(va_arg(ap, long));
			else
				EMIT(va_arg(ap, int));
			break;
		case 'u': case 'o': case 'x': case 'X':
			if (lng >= 2)
				EMIT(va_arg(ap, unsigned long long));
			else if (lng == 1)
				EMIT(va_arg(ap, unsigned long));
			else
				EMIT(va_arg(ap, unsigned int));
			break;
		case 'c':
			EMIT(va_arg(ap, int));
			break;
		case 's':
			EMIT(va_arg(ap, const char *));
			break;
		case 'p':
			/* the kernel's %p: hex digits without "0x", pointer-wide */
			fmt_append(buf, size, &len, "%016lx", (unsigned long)va_arg(ap, void *));
			break;
		case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case 'a': case 'A':
			if (strchr(spec, 'L'))
				EMIT(va_arg(ap, long double));
			else
				EMIT(va_arg(ap, double));
			break;
		default:
			/* %n and unknown conversions print nothing and end the line */
			bad = true;
			break;
		}
		_Pragma("GCC diagnostic pop")
		if (bad)
			return (int)len;
#undef EMIT
	}
	return (int)len;
}

int vprintk(const char *fmt, va_list ap)
{
	char level = '4';	/* MESSAGE_LOGLEVEL_DEFAULT */
	char buf[1024];
	int n;

	while (fmt[0] == KERN_SOH[0] && fmt[1]) {
		if (fmt[1] != 'c')
			level = fmt[1];
		fmt += 2;
	}
	if (level == '7' && !env_on("USFT_PRINTK_DEBUG"))
		return 0;
	n = kvsnprintf(buf, sizeof(buf), fmt, ap);
	pthread_mutex_lock(&print_lock);
	if (env_on("USFT_PRINTK_LEVELS"))
		fprintf(stderr, "<%c>", level);
	fputs(buf, stderr);
	pthread_mutex_unlock(&print_lock);
	return n;
}

int printk(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vprintk(fmt, ap);
	va_end(ap);
	return n;
}

/* no trace took the line: stderr, as "comm-pid: text" */
static void trace_print_stderr(const char *buf)
{
	size_t len = strlen(buf);

	pthread_mutex_lock(&print_lock);
	fprintf(stderr, "%s-%d: %s", current->comm, current->pid, buf);
	if (!len || buf[len - 1] != '\n')
		fputc('\n', stderr);
	pthread_mutex_unlock(&print_lock);
}

int __trace_printk(unsigned long ip, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (!__trace_puts(ip, buf, (int)strlen(buf) + 1))
		trace_print_stderr(buf);
	return n;
}

int usft_trace_puts(unsigned long ip, const char *str)
{
	int n = (int)strlen(str);

	if (!__trace_puts(ip, str, n + 1))
		trace_print_stderr(str);
	return n;
}

static void dump_stack(void)
{
	unsigned long entries[32];
	unsigned int n = stack_trace_save(entries, ARRAY_SIZE(entries), 2);

	printk(KERN_WARNING "Call Trace:\n");
	stack_trace_print(entries, n, 1);
}

bool usft_warn(bool cond, bool once_flag, int *once, const char *expr, const char *file, int line)
{
	if (!cond)
		return false;
	if (once_flag && __atomic_exchange_n(once, 1, __ATOMIC_RELAXED))
		return true;
	printk(KERN_WARNING "WARNING: CPU: %d PID: %d at %s:%d: %s\n", smp_processor_id(),
	       current->pid, file, line, expr);
	dump_stack();
	return true;
}

void usft_bug(const char *expr, const char *file, int line)
{
	printk(KERN_EMERG "kernel BUG at %s:%d! (%s)\n", file, line, expr);
	dump_stack();
	abort();
}

/* ------------------------------------------------------------------ */
/* tasks, sleeping and waking, kthreads                                */

struct ktask {
	struct task_struct task;
	struct usft_ktask k;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int woken;
	bool should_stop;
	bool ran;
	int (*fn)(void *data);
	void *data;
	int ret;
	pthread_t thread;
};

static __thread struct ktask *current_ktask;

static struct ktask *ktask_new(void)
{
	struct ktask *kt = calloc(1, sizeof(*kt));
	pthread_condattr_t ca;

	if (!kt)
		return NULL;
	pthread_mutex_init(&kt->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&kt->cv, &ca);
	pthread_condattr_destroy(&ca);
	kt->task.usft_private = kt;
	kt->task.tgid = getpid();
	return kt;
}

struct task_struct *get_current(void)
{
	struct ktask *kt = current_ktask;

	if (!kt) {
		kt = ktask_new();
		if (!kt)
			die("out of memory for a task_struct");
		kt->task.pid = gettid();
		prctl(PR_GET_NAME, kt->task.comm);
		current_ktask = kt;	/* one per thread, kept for the program's life */
	}
	return &kt->task;
}

struct usft_ktask *usft_kernel_task(struct task_struct *p)
{
	static struct usft_ktask none;
	struct ktask *kt = p->usft_private;

	return kt ? &kt->k : &none;
}

void usft_kernel_yield(void)
{
	sched_yield();
}

long usft_kernel_sleep(struct task_struct *p, long timeout)
{
	struct ktask *kt = p->usft_private;
	struct timespec now, end;
	long left;
	int err = 0;

	if (!kt)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &end);
	if (timeout != MAX_SCHEDULE_TIMEOUT) {
		long long ns = (long long)timeout * (NSEC_PER_SEC / HZ);

		end.tv_sec += ns / NSEC_PER_SEC;
		end.tv_nsec += ns % NSEC_PER_SEC;
		if (end.tv_nsec >= NSEC_PER_SEC) {
			end.tv_sec++;
			end.tv_nsec -= NSEC_PER_SEC;
		}
	}
	pthread_mutex_lock(&kt->mu);
	while (!kt->woken && !kt->should_stop && err != ETIMEDOUT) {
		if (timeout == MAX_SCHEDULE_TIMEOUT)
			pthread_cond_wait(&kt->cv, &kt->mu);
		else
			err = pthread_cond_timedwait(&kt->cv, &kt->mu, &end);
	}
	kt->woken = 0;
	pthread_mutex_unlock(&kt->mu);
	if (timeout == MAX_SCHEDULE_TIMEOUT)
		return MAX_SCHEDULE_TIMEOUT;
	clock_gettime(CLOCK_MONOTONIC, &now);
	left = (long)(((end.tv_sec - now.tv_sec) * NSEC_PER_SEC + (end.tv_nsec - now.tv_nsec)) /
		      (NSEC_PER_SEC / HZ));
	return left > 0 ? left : 0;
}

int usft_kernel_wake(struct task_struct *p)
{
	struct ktask *kt = p->usft_private;
	int r;

	if (!kt)
		return 0;
	pthread_mutex_lock(&kt->mu);
	r = !kt->woken;
	kt->woken = 1;
	WRITE_ONCE(p->__state, TASK_RUNNING);
	pthread_cond_signal(&kt->cv);
	pthread_mutex_unlock(&kt->mu);
	return r;
}

static void *kthread_main(void *arg)
{
	struct ktask *kt = arg;

	current_ktask = kt;
	kt->task.pid = gettid();
	prctl(PR_SET_NAME, kt->task.comm);
	/* a new kthread runs once woken (kthread_run() does that) or stopped */
	usft_kernel_sleep(&kt->task, MAX_SCHEDULE_TIMEOUT);
	if (!READ_ONCE(kt->should_stop)) {
		kt->ran = true;
		kt->ret = kt->fn(kt->data);
	}
	return NULL;
}

struct task_struct *kthread_create_on_node(int (*fn)(void *data), void *data, int node,
					   const char *namefmt, ...)
{
	struct ktask *kt = ktask_new();
	va_list ap;
	int err;

	(void)node;
	if (!kt)
		return ERR_PTR(-ENOMEM);
	va_start(ap, namefmt);
	vsnprintf(kt->task.comm, sizeof(kt->task.comm), namefmt, ap);
	va_end(ap);
	kt->fn = fn;
	kt->data = data;
	kt->task.__state = TASK_UNINTERRUPTIBLE;
	err = pthread_create(&kt->thread, NULL, kthread_main, kt);
	if (err) {
		free(kt);
		return ERR_PTR(-err);
	}
	return &kt->task;
}

bool kthread_should_stop(void)
{
	struct ktask *kt = current_ktask;

	return kt && READ_ONCE(kt->should_stop);
}

int kthread_stop(struct task_struct *k)
{
	struct ktask *kt = k->usft_private;
	int ret;

	pthread_mutex_lock(&kt->mu);
	kt->should_stop = true;
	pthread_cond_signal(&kt->cv);
	pthread_mutex_unlock(&kt->mu);
	pthread_join(kt->thread, NULL);
	ret = kt->ran ? kt->ret : -EINTR;
	/* the task_struct stays allocated: a sample may still print its comm */
	return ret;
}

static void sleep_ns(long long ns)
{
	struct timespec ts = { ns / NSEC_PER_SEC, ns % NSEC_PER_SEC };

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

void msleep(unsigned int msecs)
{
	sleep_ns((long long)msecs * NSEC_PER_MSEC);
}

unsigned long msleep_interruptible(unsigned int msecs)
{
	msleep(msecs);
	return 0;
}

void usleep_range(unsigned long min, unsigned long max)
{
	(void)max;
	sleep_ns((long long)min * NSEC_PER_USEC);
}

int smp_processor_id(void)
{
	int cpu = sched_getcpu();

	return cpu < 0 ? 0 : cpu;
}

ktime_t ktime_get(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ktime_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

u64 ktime_get_ns(void)
{
	return (u64)ktime_get();
}

/* ------------------------------------------------------------------ */
/* stack traces and symbols                                            */

unsigned int stack_trace_save(unsigned long *store, unsigned int size, unsigned int skipnr)
{
	void *frames[64];
	int n = backtrace(frames, ARRAY_SIZE(frames));
	unsigned int i, out = 0;

	skipnr++;	/* this function */
	for (i = skipnr; i < (unsigned int)n && out < size; i++)
		store[out++] = (unsigned long)frames[i];
	return out;
}

int sprint_symbol(char *buffer, unsigned long address)
{
	unsigned long off = 0;
	const char *name = usft_kallsyms_lookup(address, &off);
	Dl_info di;

	if (name)
		return snprintf(buffer, KSYM_SYMBOL_LEN, "%s+0x%lx", name, off);
	if (dladdr((void *)address, &di) && di.dli_sname)
		return snprintf(buffer, KSYM_SYMBOL_LEN, "%s+0x%lx", di.dli_sname,
				address - (unsigned long)di.dli_saddr);
	return snprintf(buffer, KSYM_SYMBOL_LEN, "%#lx", address);
}

void stack_trace_print(const unsigned long *trace, unsigned int nr_entries, int spaces)
{
	char sym[KSYM_SYMBOL_LEN];
	unsigned int i;

	for (i = 0; i < nr_entries; i++) {
		sprint_symbol(sym, trace[i]);
		printk(KERN_INFO "%*c%s\n", 1 + spaces, ' ', sym);
	}
}

unsigned long kallsyms_lookup_name(const char *name)
{
	return usft_lookup_name(name);
}

void *usft_kernel_vma_page(struct vm_area_struct *vma)
{
	return (void *)vma->vm_flags;	/* the workload keeps the page there */
}

/* ------------------------------------------------------------------ */
/* insmod, the workload, rmmod                                         */

static unsigned long nr_calls[4];
static volatile bool workload_stop;

static void *worker(void *arg)
{
	static __thread unsigned char page[4096];
	struct vm_area_struct vma = {
		.vm_start = 0x400000, .vm_end = 0x500000, .vm_flags = (unsigned long)page,
	};
	struct kernel_clone_args args = { .exit_signal = 17 };
	struct task_struct *peer = arg;
	unsigned long round = 0;

	while (!READ_ONCE(workload_stop)) {
		schedule();
		if (peer)
			wake_up_process(peer);
		handle_mm_fault(&vma, vma.vm_start + (round % 256) * 4096 + round % 4096,
				FAULT_FLAG_USER | FAULT_FLAG_WRITE, NULL);
		kernel_clone(&args);
		__atomic_add_fetch(&nr_calls[0], 1, __ATOMIC_RELAXED);
		round++;
		/* a sleeper the other worker wakes: wake_up_process() finds it */
		set_current_state(TASK_INTERRUPTIBLE);
		schedule_timeout(1);
	}
	return NULL;
}

static void *worker_main(void *arg)
{
	struct task_struct **slot = arg;

	prctl(PR_SET_NAME, "kworker");
	get_current();
	__atomic_store_n(slot, current, __ATOMIC_RELEASE);
	while (!__atomic_load_n(slot + 1, __ATOMIC_ACQUIRE) && !READ_ONCE(workload_stop))
		sched_yield();	/* wait for the peer's task */
	return worker(__atomic_load_n(slot + 1, __ATOMIC_ACQUIRE));
}

static void run_workload(void)
{
	unsigned int n = nr_workers ? nr_workers : 1, i;
	pthread_t *thr = calloc(n, sizeof(*thr));
	struct task_struct ***slots = calloc(n, sizeof(*slots));

	if (!thr || !slots)
		die("out of memory for the workload");
	/* worker i wakes worker i+1 (the last one wakes the first) */
	for (i = 0; i < n; i++) {
		slots[i] = calloc(2, sizeof(**slots));
		if (!slots[i] || pthread_create(&thr[i], NULL, worker_main, slots[i]))
			die("cannot start the workload's threads");
	}
	for (i = 0; i < n; i++) {
		while (!__atomic_load_n(&slots[i][0], __ATOMIC_ACQUIRE))
			sched_yield();
	}
	for (i = 0; i < n; i++)
		__atomic_store_n(&slots[i][1], slots[(i + 1) % n][0], __ATOMIC_RELEASE);
	msleep(run_ms);
	WRITE_ONCE(workload_stop, true);
	for (i = 0; i < n; i++) {
		usft_kernel_wake(slots[i][0]);
		pthread_join(thr[i], NULL);
		free(slots[i]);
	}
	free(slots);
	free(thr);
}

int main(int argc, char **argv)
{
	void *warm[4];
	int err;

	if (argc == 2 && !strcmp(argv[1], "--modinfo")) {
		printf("filename:       %s\n", mod_file ? mod_file : "?");
		for (unsigned int i = 0; i < nr_info; i++) {
			if (!strncmp(mod_info[i].tag, "parm:", 5))
				printf("%-15s %s:%s\n", "parm:", mod_info[i].tag + 5,
				       mod_info[i].value);
			else
				printf("%-15s %s\n", mod_info[i].tag, mod_info[i].value);
		}
		return 0;
	}
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: %s [--modinfo] [name=value ...] [usft_kernel.run_ms=N] "
		       "[usft_kernel.workers=N]\n"
		       "Loads this module (module_init), runs the toy kernel's workload, unloads\n"
		       "it (module_exit).  Parameters also come from $USFT_MODULE_PARAMS.\n",
		       program_invocation_short_name);
		return 0;
	}
	if (!mod_init)
		die("this program has no module_init()");
	/* backtrace() loads libgcc_s on first use: do it now, not in a callback */
	backtrace(warm, ARRAY_SIZE(warm));
	prctl(PR_SET_NAME, "insmod");
	get_current();
	err = parse_params(argc, argv);
	if (!err)
		err = mod_init();
	if (err) {
		fprintf(stderr, "insmod: ERROR: could not insert module %s: %s\n",
			program_invocation_short_name, strerror(err < 0 ? -err : err));
		return 1;
	}
	run_workload();
	prctl(PR_SET_NAME, "rmmod");
	if (mod_exit)
		mod_exit();
	fprintf(stderr, "usft-kernel: %s: %lu rounds of the workload\n",
		program_invocation_short_name, nr_calls[0]);
	return 0;
}
