/* SPDX-License-Identifier: MIT */
/*
 * kernel/kernel.h - what the toy kernel's traced functions (sched.c, mm.c,
 * fork.c) need of the glue in module.c, which has no sites.
 */
#ifndef USFT_KERNEL_INTERNAL_H
#define USFT_KERNEL_INTERNAL_H

#include <usft/module.h>

struct usft_ktask {
	unsigned long nr_switches;
};

/* the bookkeeping of task @p */
struct usft_ktask *usft_kernel_task(struct task_struct *p);
/* give the CPU away (sched_yield) */
void usft_kernel_yield(void);
/* sleep until woken or @timeout jiffies passed; the jiffies left (0: timed out) */
long usft_kernel_sleep(struct task_struct *p, long timeout);
/* wake @p if it sleeps (or before it does); 1 if it was not already woken */
int usft_kernel_wake(struct task_struct *p);
/* a page of @vma's own */
void *usft_kernel_vma_page(struct vm_area_struct *vma);

#endif /* USFT_KERNEL_INTERNAL_H */
