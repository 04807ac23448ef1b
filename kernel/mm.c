// SPDX-License-Identifier: MIT
/*
 * kernel/mm.c - the toy kernel's memory: a slab-like allocator (kmalloc,
 * kfree, ...) and a page-fault path (handle_mm_fault() and the functions it
 * calls), built with the patch flags.  The allocator keeps a size header in
 * front of every object; handle_mm_fault() "maps" the page by touching a
 * page-sized buffer of the vma's own.
 */
#include <stdlib.h>

#include <usft/module.h>

#include "kernel.h"

struct slab_hdr {
	size_t size;
	unsigned long magic;
};
#define SLAB_MAGIC 0x5ab5ab5ab5ab5ab5UL

static noinline void *slab_alloc(size_t size, gfp_t flags)
{
	struct slab_hdr *h;

	h = (flags & __GFP_ZERO) ? calloc(1, sizeof(*h) + size) : malloc(sizeof(*h) + size);
	if (!h)
		return NULL;
	h->size = size;
	h->magic = SLAB_MAGIC;
	return h + 1;
}

void *kmalloc(size_t size, gfp_t flags)
{
	return slab_alloc(size, flags);
}

void *kzalloc(size_t size, gfp_t flags)
{
	return slab_alloc(size, flags | __GFP_ZERO);
}

void *kmalloc_array(size_t n, size_t size, gfp_t flags)
{
	if (size && n > (size_t)-1 / size)
		return NULL;
	return kmalloc(n * size, flags);
}

void *kcalloc(size_t n, size_t size, gfp_t flags)
{
	return kmalloc_array(n, size, flags | __GFP_ZERO);
}

void kfree(const void *p)
{
	struct slab_hdr *h;

	if (!p)
		return;
	h = (struct slab_hdr *)p - 1;
	BUG_ON(h->magic != SLAB_MAGIC);
	h->magic = 0;
	free(h);
}

char *kstrdup(const char *s, gfp_t flags)
{
	size_t n = strlen(s) + 1;
	char *p = kmalloc(n, flags);

	if (p)
		memcpy(p, s, n);
	return p;
}

void *vmalloc(unsigned long size)
{
	return slab_alloc(size, 0);
}

void *vzalloc(unsigned long size)
{
	return slab_alloc(size, __GFP_ZERO);
}

void vfree(const void *p)
{
	kfree(p);
}

/* the page-fault path: handle_mm_fault -> __handle_mm_fault -> do_anonymous_page */
static noinline vm_fault_t do_anonymous_page(struct vm_area_struct *vma, unsigned long address)
{
	volatile unsigned char *page = usft_kernel_vma_page(vma);

	page[address & 4095] = 1;
	return 0;
}

static noinline vm_fault_t __handle_mm_fault(struct vm_area_struct *vma, unsigned long address,
					     unsigned int flags)
{
	(void)flags;
	if (address < vma->vm_start || address >= vma->vm_end)
		return 0x0002;	/* VM_FAULT_SIGSEGV */
	return do_anonymous_page(vma, address);
}

vm_fault_t handle_mm_fault(struct vm_area_struct *vma, unsigned long address,
			   unsigned int flags, struct pt_regs *regs)
{
	(void)regs;
	return __handle_mm_fault(vma, address, flags);
}
