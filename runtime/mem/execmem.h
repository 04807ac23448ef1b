/* SPDX-License-Identifier: MIT */
/*
 * mem/execmem.h - trampoline memory (the kernel's execmem): windows of
 * executable memory placed within rel32 (x86-64) / BL (arm64) reach of a
 * text range, or anywhere ("far").  Pages are RX; writes go through
 * usft_text_open() windows like any other text write.
 */
#ifndef USFT_MEM_EXECMEM_H
#define USFT_MEM_EXECMEM_H

#include <stdbool.h>
#include <stddef.h>

struct usft_window;

/*
 * usft_window_near() - a window every byte of which is within @reach of
 * every byte of [lo, hi); created on first use.  NULL if none can be mapped.
 */
struct usft_window *usft_window_near(unsigned long lo, unsigned long hi, unsigned long reach);
/* usft_window_far() - a window anywhere (tramp_placement=far). */
struct usft_window *usft_window_far(void);

/*
 * usft_execmem_alloc() - @size bytes (16-aligned) in @w, still RW-less: the
 * caller fills them inside a text batch.  Return: address or 0.
 */
unsigned long usft_execmem_alloc(struct usft_window *w, size_t size);
/*
 * usft_execmem_free() - give back after a tasks grace period; reuse is FIFO
 * and delayed (see core/rcu_tasks.c on the entry/exit window).
 */
void usft_execmem_free(struct usft_window *w, unsigned long addr, size_t size);
bool usft_execmem_contains(unsigned long addr);

/*
 * usft_execmem_twin() - the data twin of trampoline memory at @addr: the
 * address USFT_EXECMEM_TWIN above it, in a private read-write mapping
 * that is never executable, owned with the chunk holding @addr (allocated
 * and freed with it).  Words a running trampoline reads and usft rewrites
 * live there, so each update is one aligned store whatever the text route
 * (mem/execmem.c).  Within RIP-relative reach of the chunk.
 */
#define USFT_EXECMEM_TWIN	(1UL << 20)
unsigned long usft_execmem_twin(unsigned long addr);
bool usft_window_contains(struct usft_window *w, unsigned long addr);
struct usft_window *usft_execmem_window_of(unsigned long addr);

/*
 * execmem_fill_trapping_insns() - arch hook (arch/<arch>/text_poke.c, the
 * kernel's hook of the same name): fill a new window, writable at that
 * point, with what traps when executed, so a stray jump traps instead of
 * sliding.
 */
void execmem_fill_trapping_insns(void *ptr, size_t size);

/*
 * usft_execmem_set_reclaim() - the check that lets freed chunks be reused
 * (core/tramp_alloc.c).  @fn runs under the allocator's lock once enough
 * chunks wait; @in_window tells whether a pc is inside any window.  It
 * returns true when no thread can be in one now: every chunk freed before
 * the call may then be handed out again.  Without it, none is reused.
 */
typedef bool (*usft_execmem_reclaim_fn)(bool (*in_window)(unsigned long pc));
void usft_execmem_set_reclaim(usft_execmem_reclaim_fn fn);

#endif
