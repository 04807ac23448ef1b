// SPDX-License-Identifier: MIT
/*
 * tracers/trace_mod.c - cached ":mod:" filters (trace_mod.h; the kernel's
 * ftrace_mod_load lists in kernel/trace/ftrace.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <usft/usft.h>
#include "trace_mod.h"
#include "ring_buffer.h"

static pthread_mutex_t mod_lock = PTHREAD_MUTEX_INITIALIZER;
static int mod_pending;		/* a dlopen() came while the lock was held */
static long mod_live;		/* entries allocated: 0 lets a dlopen() return at once */

static struct ta_mod *mod_new(const char *func, size_t flen, const char *module)
{
	struct ta_mod *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->func = strndup(func, flen);
	m->module = strdup(module);
	if (!m->func || !m->module) {
		free(m->func);
		free(m->module);
		free(m);
		return NULL;
	}
	__atomic_add_fetch(&mod_live, 1, __ATOMIC_RELAXED);
	return m;
}

static void mod_del(struct ta_mod *m)
{
	free(m->func);
	free(m->module);
	free(m);
	__atomic_sub_fetch(&mod_live, 1, __ATOMIC_RELAXED);
}

void ta_mod_free(struct ta_mod *list)
{
	while (list) {
		struct ta_mod *n = list->next;

		mod_del(list);
		list = n;
	}
}

int ta_mod_dup(struct ta_mod **dst, const struct ta_mod *src)
{
	struct ta_mod **tail = dst;

	*dst = NULL;
	for (; src; src = src->next) {
		*tail = mod_new(src->func, strlen(src->func), src->module);
		if (!*tail) {
			ta_mod_free(*dst);
			*dst = NULL;
			return -ENOMEM;
		}
		tail = &(*tail)->next;
	}
	return 0;
}

int ta_mod_cache(struct ta_mod **list, const char *tok)
{
	const char *sep = strstr(tok, ":mod:"), *module;
	struct ta_mod *m, **pp;
	size_t flen;
	int ret = -EINVAL;

	if (!sep)
		return -EINVAL;
	module = sep + 5;
	flen = (size_t)(sep - tok);
	if (tok[0] == '!') {
		/* we do not cache inverse filters: drop the cached ones */
		tok++;
		flen--;
		for (pp = list; (m = *pp);) {
			if (!strcmp(m->module, module) &&
			    ((flen == 1 && tok[0] == '*') ||
			     (strlen(m->func) == flen && !memcmp(m->func, tok, flen)))) {
				*pp = m->next;
				mod_del(m);
				ret = 0;
				continue;
			}
			pp = &m->next;
		}
		return ret;
	}
	/* only objects that are not loaded yet are cached */
	if (!*module || usft_module_exists(module))
		return -EINVAL;
	m = mod_new(tok, flen, module);
	if (!m)
		return -ENOMEM;
	m->next = *list;	/* list_add(): the newest first */
	*list = m;
	return 0;
}

void ta_mod_show(FILE *f, const struct ta_mod *list)
{
	for (; list; list = list->next)
		fprintf(f, "%s:mod:%s\n", list->func, list->module);
}

struct ta_mod *ta_mod_take_loaded(struct ta_mod **list)
{
	struct ta_mod *taken = NULL, **tail = &taken, *m, **pp;

	for (pp = list; (m = *pp);) {
		if (usft_module_exists(m->module)) {
			*pp = m->next;
			m->next = NULL;
			*tail = m;
			tail = &m->next;
			continue;
		}
		pp = &m->next;
	}
	return taken;
}

void ta_mod_lock(void)
{
	pthread_mutex_lock(&mod_lock);
}

/* the holder applies what a dlopen() left pending while it held the lock */
void ta_mod_unlock(void)
{
	for (;;) {
		if (__atomic_exchange_n(&mod_pending, 0, __ATOMIC_ACQ_REL))
			ta_mod_process();
		pthread_mutex_unlock(&mod_lock);
		if (!__atomic_load_n(&mod_pending, __ATOMIC_ACQUIRE) ||
		    pthread_mutex_trylock(&mod_lock))
			return;
	}
}

void usft_tracefs_after_dlopen(void)
{
	if (!__atomic_load_n(&mod_live, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&mod_pending, 1, __ATOMIC_RELEASE);
	/* held (by the control thread, or another dlopen()): its unlock applies them */
	if (pthread_mutex_trylock(&mod_lock))
		return;
	usft_self_begin();
	ta_mod_unlock();
	usft_self_end();
}
