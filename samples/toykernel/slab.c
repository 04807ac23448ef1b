// SPDX-License-Identifier: MIT
/*
 * slab.c - a slab allocator (mm/slab.c, mm/slab_common.c).  A cache hands
 * out objects of one size from a free list; when the list is empty it
 * grows by one 4 KiB slab page, carved into objects.  kmalloc() picks the
 * smallest kmalloc-N cache that fits, and keeps the cache in a header in
 * front of the object so that kfree() finds it (the kernel finds it from
 * the page the object lives in).
 *
 *   kmalloc()                      kmem_cache_alloc()
 *     kmalloc_slab()                 spin_lock()
 *     kmem_cache_alloc()             cache_grow()  when the list is empty
 *                                      alloc_slab_page()
 */
#include <stdlib.h>
#include <string.h>
#include "toykernel.h"

#define SLAB_PAGE_SIZE	4096

struct kmem_cache {
	const char *name;
	size_t size;
	spinlock_t lock;
	void *freelist;		/* each free object's first word links the next */
	unsigned long nr_active, nr_slabs;
};

#define NR_KMALLOC_CACHES 5
static struct kmem_cache caches[16 + NR_KMALLOC_CACHES];
static int nr_caches;
static DEFINE_SPINLOCK(slab_lock);
static struct kmem_cache *kmalloc_caches[NR_KMALLOC_CACHES];

struct kmalloc_header {
	struct kmem_cache *cache;
	size_t pad;		/* keeps the object 16-byte aligned */
};

__toy struct kmem_cache *kmem_cache_create(const char *name, size_t size)
{
	struct kmem_cache *s;

	spin_lock(&slab_lock);
	s = &caches[nr_caches++];
	s->name = name;
	s->size = (size + 15) & ~(size_t)15;
	spin_unlock(&slab_lock);
	return s;
}

/* the page allocator: libc's, which is not traced */
__toy static void *alloc_slab_page(void)
{
	return aligned_alloc(SLAB_PAGE_SIZE, SLAB_PAGE_SIZE);
}

/* called with s->lock held */
__toy static int cache_grow(struct kmem_cache *s)
{
	char *page = alloc_slab_page();

	if (!page)
		return -1;
	for (size_t off = 0; off + s->size <= SLAB_PAGE_SIZE; off += s->size) {
		*(void **)(page + off) = s->freelist;
		s->freelist = page + off;
	}
	s->nr_slabs++;
	return 0;
}

__toy void *kmem_cache_alloc(struct kmem_cache *s)
{
	void *obj = NULL;

	spin_lock(&s->lock);
	if (s->freelist || cache_grow(s) == 0) {
		obj = s->freelist;
		s->freelist = *(void **)obj;
		s->nr_active++;
	}
	spin_unlock(&s->lock);
	return obj;
}

__toy void kmem_cache_free(struct kmem_cache *s, void *obj)
{
	spin_lock(&s->lock);
	*(void **)obj = s->freelist;
	s->freelist = obj;
	s->nr_active--;
	spin_unlock(&s->lock);
}

__toy static struct kmem_cache *kmalloc_slab(size_t size)
{
	for (int i = 0; i < NR_KMALLOC_CACHES; i++)
		if (size + sizeof(struct kmalloc_header) <= kmalloc_caches[i]->size)
			return kmalloc_caches[i];
	return NULL;
}

__toy void *kmalloc(size_t size)
{
	struct kmem_cache *s = kmalloc_slab(size);
	struct kmalloc_header *h;

	if (!s)
		return NULL;
	h = kmem_cache_alloc(s);
	if (!h)
		return NULL;
	h->cache = s;
	return h + 1;
}

__toy void kfree(void *obj)
{
	struct kmalloc_header *h;

	if (!obj)
		return;
	h = (struct kmalloc_header *)obj - 1;
	kmem_cache_free(h->cache, h);
}

void kmem_cache_init(void)
{
	static const char *const names[NR_KMALLOC_CACHES] = {
		"kmalloc-32", "kmalloc-64", "kmalloc-128", "kmalloc-256", "kmalloc-512",
	};

	for (int i = 0; i < NR_KMALLOC_CACHES; i++)
		kmalloc_caches[i] = kmem_cache_create(names[i], (size_t)32 << i);
}
