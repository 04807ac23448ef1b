/* SPDX-License-Identifier: MIT */
/*
 * inject/preload/preload.h - between the shim's start (shim.c) and the
 * interposed libc functions (wrappers.c) of libusft-preload.so.
 */
#ifndef USFT_PRELOAD_H
#define USFT_PRELOAD_H

#include <stdbool.h>

/*
 * Find libusft's versioned sigaction/signal/dlclose and the real dlopen
 * (the wrappers call it on first use too; the constructor calls it first).
 */
void preload_resolve_hooks(void);
/*
 * libusft.so.0 comes after libc in the global scope (a mere dependency of
 * the shim): its wrappers cannot work and libc's functions are called
 * directly.  Set by preload_resolve_hooks().
 */
extern bool preload_libusft_misplaced;
/*
 * An attached process: the program's GOT entries for dlopen(), dlclose(),
 * exec*, syscall() and dlsym() get the shim's, so loads, unloads and execs
 * reach the runtime (wrappers.c); @loaded: after a dlopen(), only while
 * routed.  Return: entries changed.
 */
unsigned long preload_bind_dl(bool loaded);
/* the detach: each entry changed gets back what it held.  Return: how many */
unsigned long preload_unbind_dl(void);
/* the entry `usft attach` calls (shim.c): preload_bind_dl(), then
 * usft_control_start() */
int usft_attach_start(void);
/* remember the USFT_* and LD_PRELOAD values children started with an
 * environment of their own inherit (exec*e, posix_spawn*) */
void preload_carry_env_init(void);

#endif
