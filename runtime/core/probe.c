// SPDX-License-Identifier: MIT
/*
 * core/probe.c - function probes (kernel/trace/ftrace.c:
 * register_ftrace_function_probe(), unregister_ftrace_function_probe_func(),
 * clear_ftrace_function_probes(), the ftrace_func_mapper, the command list
 * of register_ftrace_command() and ftrace_process_regex(), t_probe_show()),
 * and the tracing_on of a trace array (kernel/trace/trace.c:
 * tracer_tracing_on/off/is_on()).
 *
 * One struct ftrace_func_probe per (trace array, probe_ops): its embedded
 * ftrace_ops has the probed functions as its filter and calls
 * probe_ops->func.  Every change to a probe runs under probe_mutex, taken
 * before any core lock.  A function enters a probe's filter only after
 * probe_ops->init ran for it, and probe_ops->free runs for it only after it
 * left the filter and a tasks grace period passed, so a callback always
 * finds the data its init made.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <usft/ftrace_probe.h>
#include "core/internal.h"

/* ---- the ftrace_func_mapper -------------------------------------------- */

#define MAPPER_BITS	10

struct ftrace_func_map {
	struct ftrace_func_map *next;
	unsigned long ip;
	void *data;
};

struct ftrace_func_mapper {
	struct ftrace_func_map *buckets[1UL << MAPPER_BITS];
};

USFT_API struct ftrace_func_mapper *allocate_ftrace_func_mapper(void)
{
	return calloc(1, sizeof(struct ftrace_func_mapper));
}

USFT_API void **ftrace_func_mapper_find_ip(struct ftrace_func_mapper *mapper, unsigned long ip)
{
	struct ftrace_func_map *e;

	if (!mapper)
		return NULL;
	e = __atomic_load_n(&mapper->buckets[ftrace_hash_key(ip, MAPPER_BITS)], __ATOMIC_ACQUIRE);
	for (; e; e = __atomic_load_n(&e->next, __ATOMIC_ACQUIRE))
		if (e->ip == ip)
			return &e->data;
	return NULL;
}

USFT_API int ftrace_func_mapper_add_ip(struct ftrace_func_mapper *mapper, unsigned long ip,
				       void *data)
{
	struct ftrace_func_map **head, *e;

	if (!mapper)
		return -EINVAL;
	if (ftrace_func_mapper_find_ip(mapper, ip))
		return -EBUSY;
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	head = &mapper->buckets[ftrace_hash_key(ip, MAPPER_BITS)];
	e->ip = ip;
	e->data = data;
	e->next = *head;
	/* a lock-free reader sees the whole entry or not at all */
	__atomic_store_n(head, e, __ATOMIC_RELEASE);
	return 0;
}

USFT_API void *ftrace_func_mapper_remove_ip(struct ftrace_func_mapper *mapper, unsigned long ip)
{
	struct ftrace_func_map **pp, *e;
	void *data;

	if (!mapper)
		return NULL;
	pp = &mapper->buckets[ftrace_hash_key(ip, MAPPER_BITS)];
	for (e = *pp; e; pp = &e->next, e = *pp) {
		if (e->ip != ip)
			continue;
		/* a reader standing on @e still finds its successor */
		__atomic_store_n(pp, e->next, __ATOMIC_RELEASE);
		data = e->data;
		usft_call_rcu_tasks(free, e);
		return data;
	}
	return NULL;
}

USFT_API void free_ftrace_func_mapper(struct ftrace_func_mapper *mapper, void (*free_func)(void *))
{
	if (!mapper)
		return;
	for (size_t i = 0; i < (1UL << MAPPER_BITS); i++) {
		struct ftrace_func_map *e = mapper->buckets[i], *n;

		for (; e; e = n) {
			n = e->next;
			if (free_func)
				free_func(e->data);
			free(e);
		}
	}
	free(mapper);
}

/* ---- tracing_on of a trace array ------------------------------------ */

static const struct usft_trace_array_ops *trace_array_ops;
static int usft_top_tracing_on = 1;	/* without trace_array_ops */

USFT_API int usft_set_trace_array_ops(const struct usft_trace_array_ops *ops)
{
	if (ops && (ops->sz < sizeof(size_t) ||
		    !usft_opts_valid(ops, ops->sz, offsetof(struct usft_trace_array_ops, dump_stack),
				     sizeof(*ops)) ||
		    !ops->is_on != !ops->set_on))
		return usft_err(-EINVAL);
	__atomic_store_n(&trace_array_ops, ops, __ATOMIC_RELEASE);
	return 0;
}

static inline const struct usft_trace_array_ops *tr_ops(size_t field_end)
{
	const struct usft_trace_array_ops *ops = __atomic_load_n(&trace_array_ops,
								 __ATOMIC_ACQUIRE);

	return ops && ops->sz >= field_end ? ops : NULL;
}

#define TR_OPS_HAS(field) \
	(offsetof(struct usft_trace_array_ops, field) + sizeof(((struct usft_trace_array_ops *)0)->field))

USFT_API bool tracer_tracing_is_on(struct trace_array *tr)
{
	const struct usft_trace_array_ops *ops = tr_ops(TR_OPS_HAS(set_on));

	if (ops && ops->is_on)
		return ops->is_on(tr);
	return __atomic_load_n(&usft_top_tracing_on, __ATOMIC_RELAXED);
}

USFT_API int __trace_puts(unsigned long ip, const char *str, int size)
{
	const struct usft_trace_array_ops *ops = tr_ops(TR_OPS_HAS(puts));
	int saved = errno;
	size_t len;
	bool done;

	if (!ops || !ops->puts || !str || size <= 0)
		return 0;
	len = strnlen(str, (size_t)size);
	/* one line: trace_printk()'s own newline ends it */
	while (len && str[len - 1] == '\n')
		len--;
	if (len > USFT_TRACE_PUTS_MAX)
		len = USFT_TRACE_PUTS_MAX;	/* the kernel's TRACE_BUF_SIZE cut */
	done = ops->puts(NULL, ip, str, len);
	errno = saved;
	return done ? size : 0;
}

static void tracer_tracing_set(struct trace_array *tr, bool on)
{
	const struct usft_trace_array_ops *ops = tr_ops(TR_OPS_HAS(set_on));

	if (ops && ops->set_on)
		ops->set_on(tr, on);
	else
		__atomic_store_n(&usft_top_tracing_on, on, __ATOMIC_RELEASE);
}

USFT_API void tracer_tracing_on(struct trace_array *tr)
{
	tracer_tracing_set(tr, true);
}

USFT_API void tracer_tracing_off(struct trace_array *tr)
{
	tracer_tracing_set(tr, false);
}

/* the stacktrace command's kernel __trace_stack(); probe_cmds.c */
void ftrace_probe_dump_stack(struct trace_array *tr, unsigned long ip, int skip)
{
	const struct usft_trace_array_ops *ops = tr_ops(TR_OPS_HAS(dump_stack));

	if (ops && ops->dump_stack)
		ops->dump_stack(tr, ip, skip);
}

/* ---- probes ------------------------------------------------------- */

struct ftrace_func_probe {
	struct ftrace_func_probe *next;
	struct ftrace_probe_ops *probe_ops;
	struct trace_array *tr;
	struct ftrace_ops ops;		/* ops.private = tr, as the kernel's */
	void *data;			/* probe_ops->init's */
};

static pthread_mutex_t probe_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct ftrace_func_probe *func_probes;	/* newest first (kernel list_add) */

static void function_trace_probe_call(unsigned long ip, unsigned long parent_ip,
				      struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct ftrace_func_probe *probe = container_of(op, struct ftrace_func_probe, ops);
	struct usft_stack_ctx ctx = { fregs, ip, parent_ip }, *outer = usft_stack_ctx;

	/* a handler interrupting this call sets and restores its own */
	usft_stack_ctx = &ctx;
	barrier();
	probe->probe_ops->func(ip, parent_ip, probe->tr, probe->probe_ops,
			       __atomic_load_n(&probe->data, __ATOMIC_ACQUIRE));
	barrier();
	usft_stack_ctx = outer;
}

static struct ftrace_func_probe *find_probe(struct trace_array *tr, struct ftrace_probe_ops *ops)
{
	for (struct ftrace_func_probe *p = func_probes; p; p = p->next)
		if (p->tr == tr && p->probe_ops == ops)
			return p;
	return NULL;
}

static int cmp_ip(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return (x > y) - (x < y);
}

/*
 * The live functions of @probe's filter, ascending, in a new array (NULL
 * with *@n 0 when none).  Entries whose object was unloaded read ip 0
 * (ftrace_object_release_hashes()) and are left out.  probe_mutex held.
 */
static int probe_ips(struct ftrace_func_probe *probe, unsigned long **ipsp, size_t *n)
{
	struct ftrace_hash *hash;
	struct ftrace_func_entry *e;
	unsigned long *ips = NULL;
	unsigned long i;
	size_t k = 0;

	*ipsp = NULL;
	*n = 0;
	pthread_mutex_lock(&ftrace_lock);
	hash = probe->ops.func_hash ? probe->ops.func_hash->filter_hash : NULL;
	if (!ftrace_hash_empty(hash)) {
		ips = malloc(hash->count * sizeof(*ips));
		if (!ips) {
			pthread_mutex_unlock(&ftrace_lock);
			return -ENOMEM;
		}
		for_each_hash_entry(hash, i, e)
			if (e->ip && k < hash->count)
				ips[k++] = e->ip;
	}
	pthread_mutex_unlock(&ftrace_lock);
	if (k)
		qsort(ips, k, sizeof(*ips), cmp_ip);
	*ipsp = ips;
	*n = k;
	return 0;
}

static bool has_space(const char *s)
{
	for (; *s; s++)
		if (isspace((unsigned char)*s))
			return true;
	return false;
}

/* the sites @glob selects, ascending, in a new array; -EINVAL: none */
static int match_glob(const char *glob, unsigned long **ipsp, size_t *n)
{
	unsigned long *ips;
	int cnt, got;

	*ipsp = NULL;
	*n = 0;
	cnt = usft_match_sites(glob, -1, NULL, 0);
	if (cnt < 0)
		return cnt;
	if (!cnt)
		return -EINVAL;
	ips = malloc((size_t)cnt * sizeof(*ips));
	if (!ips)
		return -ENOMEM;
	got = usft_match_sites(glob, -1, ips, (size_t)cnt);
	if (got < 0) {
		free(ips);
		return got;
	}
	*ipsp = ips;
	*n = (size_t)(got < cnt ? got : cnt);	/* an object may have gone meanwhile */
	return *n ? 0 : (free(ips), *ipsp = NULL, -EINVAL);
}

static bool sorted_has(const unsigned long *ips, size_t n, unsigned long ip)
{
	return n && bsearch(&ip, ips, n, sizeof(*ips), cmp_ip);
}

USFT_API int register_ftrace_function_probe(char *glob, struct trace_array *tr,
					    struct ftrace_probe_ops *probe_ops, void *data)
{
	USFT_API_ENTER(busy);
	struct ftrace_func_probe *probe, *fresh = NULL;
	unsigned long *ips = NULL, *cur = NULL;
	size_t n, ncur, count = 0;
	int ret;

	if (busy)
		return usft_err(busy);
	/* kernel: WARN_ON(glob[0] == '!'): probes are removed by unregister */
	if (!glob || !*glob || glob[0] == '!' || has_space(glob) || !probe_ops ||
	    !probe_ops->func)
		return usft_err(-EINVAL);
	pthread_mutex_lock(&probe_mutex);
	ret = match_glob(glob, &ips, &n);
	if (ret)
		goto out;
	probe = find_probe(tr, probe_ops);
	if (!probe) {
		fresh = probe = calloc(1, sizeof(*probe));
		if (!probe) {
			ret = -ENOMEM;
			goto out;
		}
		probe->probe_ops = probe_ops;
		probe->tr = tr;
		probe->ops.func = function_trace_probe_call;
		/* the runtime guards recursion: probe_ops->func may call traced code */
		probe->ops.flags = FTRACE_OPS_FL_RECURSION;
		probe->ops.private = tr;
	}
	ret = probe_ips(probe, &cur, &ncur);
	if (ret)
		goto out_free;
	/* the functions not probed yet, in @ips[0..count) */
	for (size_t i = 0; i < n; i++)
		if (!sorted_has(cur, ncur, ips[i]))
			ips[count++] = ips[i];
	if (!count) {
		ret = -EINVAL;	/* kernel: "Nothing was added?" */
		goto out_free;
	}
	if (probe_ops->init) {
		void *pdata = probe->data;

		for (size_t i = 0; i < count; i++) {
			ret = probe_ops->init(probe_ops, tr, ips[i], data, &pdata);
			/* published before any function that uses it is probed */
			__atomic_store_n(&probe->data, pdata, __ATOMIC_RELEASE);
			if (ret < 0) {
				count = i;
				goto out_uninit;
			}
		}
	}
	ret = ftrace_set_filter_ips(&probe->ops, ips, (unsigned int)count, 0, 0);
	if (ret)
		goto out_uninit;
	if (!(probe->ops.flags & FTRACE_OPS_FL_ENABLED)) {
		ret = register_ftrace_function(&probe->ops);
		if (ret) {
			if (fresh)
				ftrace_free_filter(&probe->ops);
			else
				ftrace_set_filter_ips(&probe->ops, ips, (unsigned int)count, 1, 0);
			goto out_uninit;
		}
	}
	if (fresh) {
		probe->next = func_probes;
		func_probes = probe;
		fresh = NULL;
	}
	ret = count > INT_MAX ? INT_MAX : (int)count;
	goto out_free;

out_uninit:
	/* nothing of this call reached a callback: undo its inits */
	if (probe_ops->free) {
		for (size_t i = 0; i < count; i++)
			probe_ops->free(probe_ops, tr, ips[i], probe->data);
		if (fresh)
			probe_ops->free(probe_ops, tr, 0, probe->data);
	}
	if (fresh)
		probe->data = NULL;
out_free:
	free(fresh);
	free(cur);
	free(ips);
out:
	pthread_mutex_unlock(&probe_mutex);
	return ret < 0 ? usft_err(ret) : ret;
}

/*
 * Take @k functions @gone out of @probe (all it has when @all) and free
 * their data; the probe goes away when it had no other.  probe_mutex held.
 */
static int probe_remove(struct ftrace_func_probe *probe, unsigned long *gone, size_t k, bool all)
{
	struct ftrace_probe_ops *probe_ops = probe->probe_ops;
	int ret;

	if (all) {
		/* first off the list: an empty filter would mean every function */
		ret = unregister_ftrace_function(&probe->ops);
		if (ret)
			return ret;
		ftrace_free_filter(&probe->ops);
	} else {
		ret = ftrace_set_filter_ips(&probe->ops, gone, (unsigned int)k, 1, 0);
		if (ret)
			return ret;
		/* no thread is left in the callback for @gone (kernel: synchronize_rcu()) */
		synchronize_rcu_tasks();
	}
	if (probe_ops->free)
		for (size_t i = 0; i < k; i++)
			probe_ops->free(probe_ops, probe->tr, gone[i], probe->data);
	if (all) {
		struct ftrace_func_probe **pp;

		if (probe_ops->free)
			probe_ops->free(probe_ops, probe->tr, 0, probe->data);
		for (pp = &func_probes; *pp; pp = &(*pp)->next)
			if (*pp == probe) {
				*pp = probe->next;
				break;
			}
		free(probe);
	}
	return 0;
}

USFT_API int unregister_ftrace_function_probe_func(char *glob, struct trace_array *tr,
						   struct ftrace_probe_ops *probe_ops)
{
	USFT_API_ENTER(busy);
	struct ftrace_func_probe *probe;
	unsigned long *cur = NULL, *match = NULL;
	size_t ncur, nmatch = 0, k = 0;
	bool every = !glob || !*glob || !strcmp(glob, "*");
	int ret;

	if (busy)
		return usft_err(busy);
	if (!every && (glob[0] == '!' || has_space(glob)))
		return usft_err(-EINVAL);
	pthread_mutex_lock(&probe_mutex);
	ret = -EINVAL;
	probe = find_probe(tr, probe_ops);
	if (!probe)
		goto out;
	ret = probe_ips(probe, &cur, &ncur);
	if (ret)
		goto out;
	if (!every) {
		/* kernel: an index glob matches no name here */
		ret = isdigit((unsigned char)glob[0]) ? -EINVAL : match_glob(glob, &match, &nmatch);
		if (ret == -EINVAL)
			nmatch = 0;
		else if (ret)
			goto out;
	}
	for (size_t i = 0; i < ncur; i++)
		if (every || sorted_has(match, nmatch, cur[i]))
			cur[k++] = cur[i];
	ret = -EINVAL;	/* kernel: "Nothing found?" */
	if (k)
		ret = probe_remove(probe, cur, k, k == ncur);
out:
	pthread_mutex_unlock(&probe_mutex);
	free(cur);
	free(match);
	return usft_err(ret);
}

USFT_API void clear_ftrace_function_probes(struct trace_array *tr)
{
	USFT_API_ENTER(busy);
	struct ftrace_func_probe *probe, *next;
	int saved = errno;

	if (busy) {
		pr_warn("usft: %s() from inside a callback: refused (EDEADLK)\n", __func__);
		return;
	}
	pthread_mutex_lock(&probe_mutex);
	for (probe = func_probes; probe; probe = next) {
		unsigned long *cur;
		size_t n;

		next = probe->next;
		if (probe->tr != tr || probe_ips(probe, &cur, &n))
			continue;
		if (probe_remove(probe, cur, n, true))
			pr_warn("usft: a probe of trace array %p could not be removed\n", (void *)tr);
		free(cur);
	}
	pthread_mutex_unlock(&probe_mutex);
	errno = saved;
}

/* ---- reading back: t_probe_show() --------------------------------- */

struct seq_file {
	char *buf;
	size_t size;
	size_t len;	/* what the whole text needs */
};

static int seq_vprintf(struct seq_file *m, const char *fmt, va_list ap)
{
	size_t room = m->len < m->size ? m->size - m->len : 0;
	int n = vsnprintf(room ? m->buf + m->len : NULL, room, fmt, ap);

	if (n > 0)
		m->len += (size_t)n;
	return 0;
}

USFT_API int seq_printf(struct seq_file *m, const char *fmt, ...)
{
	va_list ap;
	int ret;

	if (!m || !fmt)
		return -EINVAL;
	va_start(ap, fmt);
	ret = seq_vprintf(m, fmt, ap);
	va_end(ap);
	return ret;
}

USFT_API int seq_puts(struct seq_file *m, const char *s)
{
	return seq_printf(m, "%s", s ? s : "");
}

USFT_API int usft_ftrace_probes_show(struct trace_array *tr, char *buf, size_t size)
{
	USFT_API_ENTER(busy);
	struct seq_file m = { .buf = buf, .size = buf ? size : 0 };
	int ret = 0;

	if (busy)
		return usft_err(busy);
	if (unlikely(ftrace_disabled))
		return usft_err(-ENODEV);
	if (m.size)
		buf[0] = 0;
	pthread_mutex_lock(&probe_mutex);
	for (struct ftrace_func_probe *p = func_probes; p && !ret; p = p->next) {
		struct ftrace_probe_ops *probe_ops = p->probe_ops;
		unsigned long *ips;
		size_t n;

		if (p->tr != tr)
			continue;
		ret = probe_ips(p, &ips, &n);
		for (size_t i = 0; !ret && i < n; i++) {
			if (probe_ops->print) {
				probe_ops->print(&m, ips[i], probe_ops, p->data);
			} else {
				const char *name = usft_kallsyms_lookup(ips[i], NULL);

				seq_printf(&m, "%s:%p\n", name ? name : "?",
					   (void *)(unsigned long)probe_ops->func);
			}
		}
		free(ips);
	}
	pthread_mutex_unlock(&probe_mutex);
	if (m.size)
		buf[m.len < m.size ? m.len : m.size - 1] = 0;
	if (ret)
		return usft_err(ret);
	return m.len > INT_MAX ? INT_MAX : (int)m.len;
}

/* ---- commands: register_ftrace_command(), ftrace_process_regex() ----- */

static pthread_mutex_t ftrace_cmd_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct ftrace_func_command *ftrace_commands;	/* ->list links them */
static pthread_once_t ftrace_cmds_once = PTHREAD_ONCE_INIT;

void ftrace_probe_cmds_init(void);	/* probe_cmds.c: traceon, traceoff, stacktrace */

static struct ftrace_func_command *find_command(const char *name)
{
	for (struct ftrace_func_command *p = ftrace_commands; p; p = p->list)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

int __register_ftrace_command(struct ftrace_func_command *cmd)
{
	int ret = 0;

	if (!cmd || !cmd->name || !*cmd->name || !cmd->func || strchr(cmd->name, ':'))
		return -EINVAL;
	pthread_mutex_lock(&ftrace_cmd_mutex);
	if (find_command(cmd->name) || !strcmp(cmd->name, "mod")) {
		ret = -EBUSY;
	} else {
		cmd->list = ftrace_commands;
		ftrace_commands = cmd;
	}
	pthread_mutex_unlock(&ftrace_cmd_mutex);
	return ret;
}

USFT_API int register_ftrace_command(struct ftrace_func_command *cmd)
{
	pthread_once(&ftrace_cmds_once, ftrace_probe_cmds_init);
	return usft_err(__register_ftrace_command(cmd));
}

USFT_API int unregister_ftrace_command(struct ftrace_func_command *cmd)
{
	struct ftrace_func_command **pp;
	int ret = -ENODEV;

	pthread_once(&ftrace_cmds_once, ftrace_probe_cmds_init);
	if (!cmd)
		return usft_err(-EINVAL);
	pthread_mutex_lock(&ftrace_cmd_mutex);
	for (pp = &ftrace_commands; *pp; pp = (struct ftrace_func_command **)&(*pp)->list)
		if (*pp == cmd) {
			*pp = cmd->list;
			cmd->list = NULL;
			ret = 0;
			break;
		}
	pthread_mutex_unlock(&ftrace_cmd_mutex);
	return usft_err(ret);
}

USFT_API int usft_ftrace_regex_cmd(struct trace_array *tr, const char *token, int enable)
{
	USFT_API_ENTER(busy);
	struct ftrace_func_command *p;
	char *copy, *func, *command, *next;
	size_t len;
	int ret = -EINVAL;

	if (busy)
		return usft_err(busy);
	if (!token)
		return usft_err(-EINVAL);
	pthread_once(&ftrace_cmds_once, ftrace_probe_cmds_init);
	while (isspace((unsigned char)*token))
		token++;
	len = strlen(token);
	while (len && isspace((unsigned char)token[len - 1]))
		len--;
	copy = strndup(token, len);
	if (!copy)
		return usft_err(-ENOMEM);
	next = copy;
	func = strsep(&next, ":");
	if (!next) {
		free(copy);
		return USFT_REGEX_GLOB;
	}
	command = strsep(&next, ":");
	if (!strcmp(command, "mod")) {
		/* ftrace_set_filter() parses "glob:mod:NAME" itself */
		free(copy);
		return USFT_REGEX_GLOB;
	}
	/*
	 * The command runs under ftrace_cmd_mutex as in the kernel: a command
	 * being unregistered is not left half-called.
	 */
	pthread_mutex_lock(&ftrace_cmd_mutex);
	p = find_command(command);
	if (p)
		ret = p->func(tr, NULL, func, command, next, enable);
	pthread_mutex_unlock(&ftrace_cmd_mutex);
	free(copy);
	return ret < 0 ? usft_err(ret) : ret;
}
