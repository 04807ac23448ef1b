// SPDX-License-Identifier: MIT
/*
 * core/hash.c - struct ftrace_hash (kernel/trace/ftrace.c hash helpers).
 *
 * A hash that is published (installed in an ops or as direct_functions) is
 * never modified again: writers build a copy and swap the pointer, and the
 * old one is freed after a tasks grace period (free_ftrace_hash_rcu()).
 */
#include <stdlib.h>
#include "core/internal.h"

struct ftrace_hash empty_hash = { .size_bits = 0, .buckets = NULL, .count = 0 };

USFT_API struct ftrace_hash *alloc_ftrace_hash(int size_bits)
{
	struct ftrace_hash *hash;

	if (size_bits < 0 || size_bits > FTRACE_HASH_MAX_BITS + 4) {
		errno = EINVAL;
		return NULL;
	}
	hash = calloc(1, sizeof(*hash));
	if (!hash)
		return NULL;
	hash->buckets = calloc(1UL << size_bits, sizeof(hash->buckets[0]));
	if (!hash->buckets) {
		free(hash);
		errno = ENOMEM;
		return NULL;
	}
	hash->size_bits = size_bits;
	return hash;
}

/* kernel add_ftrace_hash_entry(): link a caller-owned @entry (no allocation) */
USFT_API void add_ftrace_hash_entry(struct ftrace_hash *hash, struct ftrace_func_entry *entry)
{
	unsigned long key;

	if (!hash || hash == EMPTY_HASH || !hash->buckets || !entry)
		return;
	key = ftrace_hash_key(entry->ip, hash->size_bits);
	entry->hnext = hash->buckets[key];
	hash->buckets[key] = entry;
	hash->count++;
}

struct ftrace_func_entry *add_hash_entry(struct ftrace_hash *hash, unsigned long ip)
{
	struct ftrace_func_entry *entry;

	if (!hash || hash == EMPTY_HASH || !hash->buckets)
		return NULL;
	entry = malloc(sizeof(*entry));
	if (!entry)
		return NULL;
	entry->ip = ip;
	entry->direct = 0;
	add_ftrace_hash_entry(hash, entry);
	return entry;
}

USFT_API struct ftrace_func_entry *
add_ftrace_hash_entry_direct(struct ftrace_hash *hash, unsigned long ip, unsigned long direct)
{
	struct ftrace_func_entry *entry = add_hash_entry(hash, ip);

	if (!entry) {
		errno = (!hash || hash == EMPTY_HASH || !hash->buckets) ? EINVAL : ENOMEM;
		return NULL;
	}
	entry->direct = direct;
	return entry;
}

void remove_hash_entry(struct ftrace_hash *hash, struct ftrace_func_entry *entry)
{
	struct ftrace_func_entry **pp;

	pp = &hash->buckets[ftrace_hash_key(entry->ip, hash->size_bits)];
	for (; *pp; pp = &(*pp)->hnext)
		if (*pp == entry) {
			*pp = entry->hnext;
			hash->count--;
			return;
		}
}

void free_hash_entry(struct ftrace_hash *hash, struct ftrace_func_entry *entry)
{
	remove_hash_entry(hash, entry);
	free(entry);
}

void ftrace_hash_clear(struct ftrace_hash *hash)
{
	struct ftrace_func_entry *e, *n;
	unsigned long i;

	if (!hash || hash == EMPTY_HASH || !hash->buckets)
		return;
	for (i = 0; i < (1UL << hash->size_bits); i++) {
		for (e = hash->buckets[i]; e; e = n) {
			n = e->hnext;
			free(e);
		}
		hash->buckets[i] = NULL;
	}
	hash->count = 0;
}

USFT_API void free_ftrace_hash(struct ftrace_hash *hash)
{
	if (!hash || hash == EMPTY_HASH)
		return;
	ftrace_hash_clear(hash);
	free(hash->buckets);
	free(hash);
}

static void free_ftrace_hash_cb(void *p)
{
	free_ftrace_hash(p);
}

void free_ftrace_hash_rcu(struct ftrace_hash *hash)
{
	if (!hash || hash == EMPTY_HASH)
		return;
	usft_call_rcu_tasks(free_ftrace_hash_cb, hash);
}

USFT_API unsigned long ftrace_hash_count(struct ftrace_hash *hash)
{
	return hash ? hash->count : 0;
}

/*
 * kernel ftrace_hash_remove(): unlink every entry without freeing it, for
 * hashes whose entries the caller owns (add_ftrace_hash_entry()); the hash
 * can then be freed with free_ftrace_hash().
 */
USFT_API void ftrace_hash_remove(struct ftrace_hash *hash)
{
	if (!hash || hash == EMPTY_HASH || !hash->buckets)
		return;
	for (unsigned long i = 0; i < (1UL << hash->size_bits); i++)
		hash->buckets[i] = NULL;
	hash->count = 0;
}

/* Copies ip and direct ("direct friendly" since the single-ops series). */
struct ftrace_hash *alloc_and_copy_ftrace_hash(int size_bits, struct ftrace_hash *hash)
{
	struct ftrace_func_entry *e;
	struct ftrace_hash *new;
	unsigned long i;

	new = alloc_ftrace_hash(size_bits);
	if (!new)
		return NULL;
	if (hash)
		new->flags = hash->flags;
	if (ftrace_hash_empty(hash))
		return new;
	for_each_hash_entry(hash, i, e) {
		if (!add_ftrace_hash_entry_direct(new, e->ip, e->direct)) {
			free_ftrace_hash(new);
			return NULL;
		}
	}
	return new;
}

/*
 * __ftrace_hash_move() - the hash to install for scratch hash @src, resized
 * to min(fls(count/2), FTRACE_HASH_MAX_BITS) bits; EMPTY_HASH when empty.
 * @src is consumed (its entries move).  NULL on allocation failure (@src
 * untouched then).
 */
struct ftrace_hash *__ftrace_hash_move(struct ftrace_hash *src)
{
	struct ftrace_func_entry *e, *n;
	struct ftrace_hash *new;
	unsigned long i;
	int bits;

	if (ftrace_hash_empty(src))
		return EMPTY_HASH;
	bits = fls_long(src->count / 2);
	if (bits > FTRACE_HASH_MAX_BITS)
		bits = FTRACE_HASH_MAX_BITS;
	new = alloc_ftrace_hash(bits);
	if (!new)
		return NULL;
	new->flags = src->flags;
	for (i = 0; i < (1UL << src->size_bits); i++) {
		for (e = src->buckets[i]; e; e = n) {
			n = e->hnext;
			add_ftrace_hash_entry(new, e);
		}
		src->buckets[i] = NULL;
	}
	src->count = 0;
	return new;
}
