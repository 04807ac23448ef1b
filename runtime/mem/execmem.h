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
bool usft_window_contains(struct usft_window *w, unsigned long addr);
struct usft_window *usft_execmem_window_of(unsigned long addr);

/*
 * execmem_fill_trapping_insns() - arch hook (arch/<arch>/text_poke.c, the
 * kernel's hook of the same name): fill a new window, writable at that
 * point, with what traps when executed, so a stray jump traps instead of
 * sliding.
 */
void execmem_fill_trapping_insns(void *ptr, size_t size);

/* reserve @len bytes placed per tramp_placement near @near_ip; ftrace_lock held */
unsigned long usft_execmem_reserve(unsigned long near_ip, size_t len, struct usft_window **wp);
/* fill reserved memory (inside a text window, then sync) */
int usft_execmem_write(unsigned long addr, const void *code, size_t len);
/* copy @code into memory placed per tramp_placement near @near_ip; ftrace_lock held */
unsigned long usft_execmem_place(const void *code, size_t len, unsigned long near_ip,
				 struct usft_window **wp);

#endif
