/* SPDX-License-Identifier: MIT */
/*
 * tracers/trace_mod.h - the tracefs's cache of ":mod:" filters for objects
 * not loaded yet (the kernel's struct ftrace_mod_load on a trace_array's
 * mod_trace / mod_notrace lists, kernel/trace/ftrace.c: cache_mod(),
 * t_mod_show(), process_cached_mods()).  Here a module is a loaded object;
 * a filter cached for it is applied when a dlopen() brings it in.
 *
 * The lists belong to trace_array.c's arrays.  The control thread changes
 * them inside ta_mod_lock()/ta_mod_unlock(); a dlopen() on any thread calls
 * usft_tracefs_after_dlopen(), which never waits for that lock: when it is
 * held, the holder applies the filters as it lets go.
 */
#ifndef USFT_TRACE_MOD_H
#define USFT_TRACE_MOD_H

#include <stdbool.h>
#include <stdio.h>

struct ta_mod {
	struct ta_mod *next;
	char *func;		/* as written before ":mod:" ("" for ":mod:NAME") */
	char *module;
};

/* a copy of @src into *@dst (a write stages its changes there); 0 or -ENOMEM */
int ta_mod_dup(struct ta_mod **dst, const struct ta_mod *src);
void ta_mod_free(struct ta_mod *list);
/*
 * kernel ftrace_mod_callback() + cache_mod() for @tok ("func:mod:NAME"
 * whose glob matched no loaded function): "!func:mod:NAME" drops the cached
 * entries of NAME with that func ("!*" all of NAME); otherwise the entry is
 * cached when no object NAME is loaded.  Return: 0, -EINVAL (NAME is loaded
 * and has no such function; nothing cached to drop), -ENOMEM.
 */
int ta_mod_cache(struct ta_mod **list, const char *tok);
/* kernel t_mod_show(): "func:mod:NAME" a line, the last cached first */
void ta_mod_show(FILE *f, const struct ta_mod *list);
/* the entries of @list whose object is loaded now, unlinked from it */
struct ta_mod *ta_mod_take_loaded(struct ta_mod **list);

void ta_mod_lock(void);
void ta_mod_unlock(void);
/* trace_array.c: apply every array's cached filters whose object is loaded (lock held) */
void ta_mod_process(void);
/* the shim's dlopen(): an object may have come in (any thread, never blocks) */
void usft_tracefs_after_dlopen(void);

#endif /* USFT_TRACE_MOD_H */
