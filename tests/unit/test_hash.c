// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_hash.c - core/hash.c: struct ftrace_hash allocation,
 * insertion (plain and direct), lookup (including EMPTY_HASH and NULL),
 * removal, copy, the resizing "move" (bits = min(fls(count/2), 12)) and the
 * bucket key (kernel: ftrace_hash_key(), kernel/trace/ftrace.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/internal.h"

/* Site-like addresses: 16-byte aligned, as function entries usually are. */
#define IP_BASE		0x401000UL
#define IP(i)		(IP_BASE + 16UL * (unsigned long)(i))
#define DIRECT_OF(ip)	((ip) ^ 0x7f0000000000UL)

static unsigned long nr_buckets(const struct ftrace_hash *hash)
{
	return 1UL << hash->size_bits;
}

/* Entries reachable through the buckets (independent of hash->count). */
static unsigned long walk_count(struct ftrace_hash *hash)
{
	struct ftrace_func_entry *e;
	unsigned long i, n = 0;

	for_each_hash_entry(hash, i, e)
		n++;
	return n;
}

/* Every entry sits in the bucket its key names. */
static void assert_buckets_consistent(struct ftrace_hash *hash)
{
	struct ftrace_func_entry *e;
	unsigned long i;

	for_each_hash_entry(hash, i, e)
		cr_assert_eq(ftrace_hash_key(e->ip, hash->size_bits), i,
			     "ip %#lx in bucket %lu, key says %lu", e->ip, i,
			     ftrace_hash_key(e->ip, hash->size_bits));
	cr_assert_eq(walk_count(hash), hash->count);
}

static void fill(struct ftrace_hash *hash, unsigned long n, bool direct)
{
	for (unsigned long i = 0; i < n; i++) {
		struct ftrace_func_entry *e;

		if (direct)
			e = add_ftrace_hash_entry_direct(hash, IP(i), DIRECT_OF(IP(i)));
		else
			e = add_hash_entry(hash, IP(i));
		cr_assert_not_null(e, "add %lu", i);
	}
	cr_assert_eq(hash->count, n);
}

/* ---- allocation ----------------------------------------------------- */

Test(hash_alloc, bits_0)
{
	struct ftrace_hash *hash = alloc_ftrace_hash(0);

	cr_assert_not_null(hash);
	cr_assert_eq(hash->size_bits, 0);
	cr_assert_not_null(hash->buckets);
	cr_assert_null(hash->buckets[0]);
	cr_assert_eq(hash->count, 0);
	cr_assert_eq(hash->flags, 0);
	cr_assert(ftrace_hash_empty(hash));
	cr_assert_eq(ftrace_hash_count(hash), 0);
	free_ftrace_hash(hash);
}

Test(hash_alloc, default_bits)
{
	struct ftrace_hash *hash = alloc_ftrace_hash(FTRACE_HASH_DEFAULT_BITS);

	cr_assert_eq(FTRACE_HASH_DEFAULT_BITS, 10);
	cr_assert_eq(FTRACE_HASH_MAX_BITS, 12);
	cr_assert_not_null(hash);
	cr_assert_eq(hash->size_bits, 10);
	cr_assert_eq(nr_buckets(hash), 1024);
	for (unsigned long i = 0; i < nr_buckets(hash); i++)
		cr_assert_null(hash->buckets[i], "bucket %lu not empty", i);
	cr_assert_eq(hash->count, 0);
	cr_assert_eq(walk_count(hash), 0);
	free_ftrace_hash(hash);
}

Test(hash_alloc, invalid_bits)
{
	errno = 0;
	cr_assert_null(alloc_ftrace_hash(-1));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(alloc_ftrace_hash(-1000));
	cr_assert_eq(errno, EINVAL);
	/* 1 << 64 buckets can never be valid (and must not be shifted). */
	errno = 0;
	cr_assert_null(alloc_ftrace_hash(64));
	cr_assert_eq(errno, EINVAL);
}

Test(hash_alloc, free_null_and_empty_are_noops)
{
	free_ftrace_hash(NULL);
	free_ftrace_hash(EMPTY_HASH);
	cr_assert_eq(EMPTY_HASH->count, 0);
	cr_assert_eq(EMPTY_HASH->size_bits, 0);
	cr_assert_null(EMPTY_HASH->buckets);
}

/* ---- EMPTY_HASH and NULL -------------------------------------------- */

Test(hash_empty, sentinel)
{
	struct ftrace_func_entry *e;
	unsigned long i, n = 0;

	cr_assert(ftrace_hash_empty(EMPTY_HASH));
	cr_assert(ftrace_hash_empty(NULL));
	cr_assert_eq(ftrace_hash_count(EMPTY_HASH), 0);
	cr_assert_eq(ftrace_hash_count(NULL), 0);
	/* zero buckets: iteration runs no body */
	for_each_hash_entry(EMPTY_HASH, i, e)
		n++;
	cr_assert_eq(n, 0);
}

Test(hash_empty, lookup_never_hits)
{
	cr_assert_null(ftrace_lookup_ip(EMPTY_HASH, IP(0)));
	cr_assert_null(ftrace_lookup_ip(EMPTY_HASH, 0));
	cr_assert_null(ftrace_lookup_ip(NULL, IP(0)));
	cr_assert_null(ftrace_lookup_ip(NULL, 0));
}

Test(hash_empty, add_refused)
{
	cr_assert_null(add_hash_entry(EMPTY_HASH, IP(0)));
	cr_assert_null(add_hash_entry(NULL, IP(0)));
	cr_assert_eq(EMPTY_HASH->count, 0);

	errno = 0;
	cr_assert_null(add_ftrace_hash_entry_direct(NULL, IP(0), 0x1234));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(add_ftrace_hash_entry_direct(EMPTY_HASH, IP(0), 0x1234));
	cr_assert_eq(EMPTY_HASH->count, 0);
}

/* ---- add / lookup ---------------------------------------------------- */

Test(hash_entry, add_and_lookup)
{
	struct ftrace_hash *hash = alloc_ftrace_hash(FTRACE_HASH_DEFAULT_BITS);
	struct ftrace_func_entry *a, *b;

	cr_assert_not_null(hash);
	a = add_hash_entry(hash, IP(1));
	cr_assert_not_null(a);
	cr_assert_eq(a->ip, IP(1));
	cr_assert_eq(a->direct, 0, "plain entries carry no direct");
	cr_assert_eq(hash->count, 1);
	cr_assert_not(ftrace_hash_empty(hash));

	b = add_hash_entry(hash, IP(2));
	cr_assert_not_null(b);
	cr_assert_neq(a, b);
	cr_assert_eq(hash->count, 2);
	cr_assert_eq(ftrace_hash_count(hash), 2);

	cr_assert_eq(ftrace_lookup_ip(hash, IP(1)), a);
	cr_assert_eq(ftrace_lookup_ip(hash, IP(2)), b);
	cr_assert_eq(__ftrace_lookup_ip(hash, IP(1)), a);
	/* misses: other sites, neighbours, 0 */
	cr_assert_null(ftrace_lookup_ip(hash, IP(3)));
	cr_assert_null(ftrace_lookup_ip(hash, IP(1) + 1));
	cr_assert_null(ftrace_lookup_ip(hash, IP(1) - 1));
	cr_assert_null(ftrace_lookup_ip(hash, 0));
	assert_buckets_consistent(hash);
	free_ftrace_hash(hash);
}

Test(hash_entry, bits_0_single_bucket)
{
	struct ftrace_hash *hash = alloc_ftrace_hash(0);

	cr_assert_not_null(hash);
	fill(hash, 50, false);
	/* every entry chains off bucket 0 */
	cr_assert_not_null(hash->buckets[0]);
	for (unsigned long i = 0; i < 50; i++) {
		struct ftrace_func_entry *e = ftrace_lookup_ip(hash, IP(i));

		cr_assert_not_null(e, "miss %lu", i);
		cr_assert_eq(e->ip, IP(i));
	}
	cr_assert_null(ftrace_lookup_ip(hash, IP(50)));
	assert_buckets_consistent(hash);
	free_ftrace_hash(hash);
}

Test(hash_entry, direct_value_kept)
{
	struct ftrace_hash *hash = alloc_ftrace_hash(4);
	struct ftrace_func_entry *e;

	cr_assert_not_null(hash);
	e = add_ftrace_hash_entry_direct(hash, IP(7), 0xdeadbeef00UL);
	cr_assert_not_null(e);
	cr_assert_eq(e->ip, IP(7));
	cr_assert_eq(e->direct, 0xdeadbeef00UL);
	/* the jmp bit (bit 0) on a direct target is kept verbatim */
	e = add_ftrace_hash_entry_direct(hash, IP(8), 0xdeadbeef01UL);
	cr_assert_not_null(e);
	cr_assert_eq(hash->count, 2);

	cr_assert_eq(ftrace_lookup_ip(hash, IP(7))->direct, 0xdeadbeef00UL);
	cr_assert_eq(ftrace_lookup_ip(hash, IP(8))->direct, 0xdeadbeef01UL);
	free_ftrace_hash(hash);
}

/* ---- remove / free entry -------------------------------------------- */

Test(hash_entry, remove_and_free)
{
	struct ftrace_hash *hash = alloc_ftrace_hash(2);
	struct ftrace_func_entry *e;

	cr_assert_not_null(hash);
	fill(hash, 20, false);	/* 4 buckets: chains of several entries */

	/* remove_hash_entry unlinks but leaves the entry to the caller */
	e = ftrace_lookup_ip(hash, IP(5));
	cr_assert_not_null(e);
	remove_hash_entry(hash, e);
	cr_assert_eq(hash->count, 19);
	cr_assert_null(ftrace_lookup_ip(hash, IP(5)));
	cr_assert_eq(e->ip, IP(5), "removed entry still owned by the caller");
	free(e);

	/* free_hash_entry unlinks and frees */
	e = ftrace_lookup_ip(hash, IP(0));
	cr_assert_not_null(e);
	free_hash_entry(hash, e);
	cr_assert_eq(hash->count, 18);
	cr_assert_null(ftrace_lookup_ip(hash, IP(0)));

	/* the rest is untouched, whatever its position in the chains */
	for (unsigned long i = 1; i < 20; i++) {
		if (i == 5)
			continue;
		cr_assert_not_null(ftrace_lookup_ip(hash, IP(i)), "lost %lu", i);
	}
	assert_buckets_consistent(hash);

	/* drain through free_hash_entry down to empty */
	for (unsigned long i = 1; i < 20; i++) {
		if (i == 5)
			continue;
		free_hash_entry(hash, ftrace_lookup_ip(hash, IP(i)));
	}
	cr_assert_eq(hash->count, 0);
	cr_assert(ftrace_hash_empty(hash));
	cr_assert_eq(walk_count(hash), 0);
	free_ftrace_hash(hash);
}

Test(hash_entry, clear)
{
	struct ftrace_hash *hash = alloc_ftrace_hash(3);

	cr_assert_not_null(hash);
	fill(hash, 40, true);
	ftrace_hash_clear(hash);
	cr_assert_eq(hash->count, 0);
	cr_assert_eq(walk_count(hash), 0);
	cr_assert_eq(hash->size_bits, 3);
	/* still usable */
	cr_assert_not_null(add_hash_entry(hash, IP(1)));
	cr_assert_not_null(ftrace_lookup_ip(hash, IP(1)));
	free_ftrace_hash(hash);
	/* clearing the sentinel or NULL is a no-op */
	ftrace_hash_clear(EMPTY_HASH);
	ftrace_hash_clear(NULL);
}

/* ---- copy ------------------------------------------------------------ */

Test(hash_copy, copies_ip_and_direct)
{
	struct ftrace_hash *src = alloc_ftrace_hash(FTRACE_HASH_DEFAULT_BITS);
	struct ftrace_hash *dst;

	cr_assert_not_null(src);
	fill(src, 300, true);
	src->flags = FTRACE_HASH_FL_MOD;

	dst = alloc_and_copy_ftrace_hash(5, src);
	cr_assert_not_null(dst);
	cr_assert_neq(dst, src);
	cr_assert_eq(dst->size_bits, 5, "copy uses the requested bits");
	cr_assert_eq(dst->count, 300);
	cr_assert_eq(dst->flags, FTRACE_HASH_FL_MOD);
	for (unsigned long i = 0; i < 300; i++) {
		struct ftrace_func_entry *d = ftrace_lookup_ip(dst, IP(i));
		struct ftrace_func_entry *s = ftrace_lookup_ip(src, IP(i));

		cr_assert_not_null(d, "copy lost %lu", i);
		cr_assert_neq(d, s, "entries are copied, not shared");
		cr_assert_eq(d->direct, DIRECT_OF(IP(i)), "direct of %lu", i);
	}
	assert_buckets_consistent(dst);

	/* the source is untouched and independent */
	cr_assert_eq(src->count, 300);
	free_hash_entry(dst, ftrace_lookup_ip(dst, IP(0)));
	cr_assert_not_null(ftrace_lookup_ip(src, IP(0)));
	free_ftrace_hash(dst);
	free_ftrace_hash(src);
}

Test(hash_copy, from_empty_null_and_sentinel)
{
	struct ftrace_hash *empty = alloc_ftrace_hash(3);
	struct ftrace_hash *srcs[] = { NULL, EMPTY_HASH, empty };

	cr_assert_not_null(empty);
	for (size_t i = 0; i < sizeof(srcs) / sizeof(srcs[0]); i++) {
		struct ftrace_hash *dst = alloc_and_copy_ftrace_hash(4, srcs[i]);

		cr_assert_not_null(dst, "src %zu", i);
		cr_assert_neq(dst, EMPTY_HASH, "a copy is always a fresh, writable hash");
		cr_assert_eq(dst->size_bits, 4);
		cr_assert_eq(dst->count, 0);
		cr_assert_not_null(add_hash_entry(dst, IP(1)));
		free_ftrace_hash(dst);
	}
	free_ftrace_hash(empty);
}

Test(hash_copy, invalid_bits)
{
	struct ftrace_hash *src = alloc_ftrace_hash(0);

	cr_assert_not_null(src);
	fill(src, 3, false);
	errno = 0;
	cr_assert_null(alloc_and_copy_ftrace_hash(-1, src));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(src->count, 3);
	free_ftrace_hash(src);
}

/* ---- move ------------------------------------------------------------ */

static int expected_move_bits(unsigned long n)
{
	int bits = 0;

	for (unsigned long half = n / 2; half; half >>= 1)
		bits++;			/* fls(n / 2) */
	return bits > FTRACE_HASH_MAX_BITS ? FTRACE_HASH_MAX_BITS : bits;
}

Test(hash_move, empty_gives_sentinel)
{
	struct ftrace_hash *src = alloc_ftrace_hash(FTRACE_HASH_DEFAULT_BITS);

	cr_assert_not_null(src);
	cr_assert_eq(__ftrace_hash_move(src), EMPTY_HASH);
	cr_assert_eq(__ftrace_hash_move(EMPTY_HASH), EMPTY_HASH);
	cr_assert_eq(__ftrace_hash_move(NULL), EMPTY_HASH);
	free_ftrace_hash(src);
}

Test(hash_move, bits_and_entries)
{
	static const unsigned long sizes[] = {
		1, 2, 3, 4, 5, 7, 8, 9, 100, 1023, 1024, 4095, 4096, 8191, 8192, 9000,
	};
	/* spot checks of the formula itself */
	cr_assert_eq(expected_move_bits(1), 0);
	cr_assert_eq(expected_move_bits(2), 1);
	cr_assert_eq(expected_move_bits(3), 1);
	cr_assert_eq(expected_move_bits(4), 2);
	cr_assert_eq(expected_move_bits(100), 6);
	cr_assert_eq(expected_move_bits(8191), 12);
	cr_assert_eq(expected_move_bits(8192), 12);	/* fls(4096) = 13, capped */

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		unsigned long n = sizes[k];
		struct ftrace_hash *src = alloc_ftrace_hash(FTRACE_HASH_DEFAULT_BITS);
		struct ftrace_hash *dst;

		cr_assert_not_null(src);
		fill(src, n, true);
		src->flags = FTRACE_HASH_FL_MOD;

		dst = __ftrace_hash_move(src);
		cr_assert_not_null(dst, "n=%lu", n);
		cr_assert_neq(dst, EMPTY_HASH);
		cr_assert_neq(dst, src);
		cr_assert_eq(dst->size_bits, (unsigned long)expected_move_bits(n),
			     "n=%lu: bits %lu, want %d", n, dst->size_bits,
			     expected_move_bits(n));
		cr_assert_eq(dst->count, n, "n=%lu", n);
		cr_assert_eq(dst->flags, FTRACE_HASH_FL_MOD, "n=%lu: flags kept", n);
		for (unsigned long i = 0; i < n; i++) {
			struct ftrace_func_entry *e = ftrace_lookup_ip(dst, IP(i));

			cr_assert_not_null(e, "n=%lu: lost %lu", n, i);
			cr_assert_eq(e->direct, DIRECT_OF(IP(i)));
		}
		cr_assert_null(ftrace_lookup_ip(dst, IP(n)));
		assert_buckets_consistent(dst);

		/* the source is emptied (its entries moved) but still a hash */
		cr_assert_eq(src->count, 0, "n=%lu", n);
		cr_assert_eq(walk_count(src), 0, "n=%lu", n);
		cr_assert_null(ftrace_lookup_ip(src, IP(0)));
		cr_assert_eq(src->size_bits, FTRACE_HASH_DEFAULT_BITS);
		free_ftrace_hash(src);
		free_ftrace_hash(dst);
	}
}

/* ---- key -------------------------------------------------------------- */

Test(hash_key, zero_bits_is_bucket_0)
{
	static const unsigned long ips[] = { 0, 1, IP(0), IP(12345), ~0UL, 0x7fffffffffffUL };

	for (size_t i = 0; i < sizeof(ips) / sizeof(ips[0]); i++)
		cr_assert_eq(ftrace_hash_key(ips[i], 0), 0, "ip %#lx", ips[i]);
}

Test(hash_key, in_range)
{
	for (unsigned long bits = 1; bits <= FTRACE_HASH_MAX_BITS; bits++)
		for (unsigned long i = 0; i < 2000; i++) {
			unsigned long ip = IP(i) * 0x9e37UL + i;

			cr_assert_lt(ftrace_hash_key(ip, bits), 1UL << bits,
				     "ip %#lx bits %lu", ip, bits);
		}
	cr_assert_lt(ftrace_hash_key(~0UL, 12), 1UL << 12);
}

/*
 * ftrace_hash_key() is the kernel's hash_64() (multiply by GOLDEN_RATIO_64,
 * keep the top bits).  On evenly spaced addresses that is a Weyl sequence:
 * chains stay very short, but the occupancy swings with stride and bits
 * (stride 16 into 64 buckets uses only 19, the same in the kernel).  So the
 * bound is on the longest chain, with a loose floor on occupancy.
 */
static void check_load(const unsigned long *ips, unsigned long n, unsigned long bits,
		       const char *what)
{
	unsigned long nb = 1UL << bits;
	unsigned int *load = calloc(nb, sizeof(*load));
	unsigned long used = 0, max = 0;

	cr_assert_not_null(load);
	for (unsigned long i = 0; i < n; i++)
		load[ftrace_hash_key(ips[i], bits)]++;
	for (unsigned long b = 0; b < nb; b++) {
		used += load[b] != 0;
		if (load[b] > max)
			max = load[b];
	}
	free(load);
	cr_assert_geq(used, nb / 4, "%s bits %lu: only %lu/%lu buckets used",
		      what, bits, used, nb);
	cr_assert_leq(max, 8, "%s bits %lu: chain of %lu", what, bits, max);
}

Test(hash_key, spreads)
{
	static const unsigned long strides[] = { 1, 5, 16, 32, 64, 4096 };
	static const unsigned long bits[] = { 6, FTRACE_HASH_DEFAULT_BITS, FTRACE_HASH_MAX_BITS };
	unsigned long *ips = calloc(1UL << FTRACE_HASH_MAX_BITS, sizeof(*ips));
	unsigned long seed = 12345;

	cr_assert_not_null(ips);
	for (size_t b = 0; b < sizeof(bits) / sizeof(bits[0]); b++) {
		unsigned long n = 1UL << bits[b];
		char what[32];

		/* evenly spaced sites, one per bucket on average */
		for (size_t s = 0; s < sizeof(strides) / sizeof(strides[0]); s++) {
			for (unsigned long i = 0; i < n; i++)
				ips[i] = IP_BASE + strides[s] * i;
			snprintf(what, sizeof(what), "stride %lu", strides[s]);
			check_load(ips, n, bits[b], what);
		}
		/* 16-aligned functions of 16..640 bytes (fixed LCG) */
		ips[0] = IP_BASE;
		for (unsigned long i = 1; i < n; i++) {
			seed = seed * 6364136223846793005UL + 1442695040888963407UL;
			ips[i] = ips[i - 1] + 16 * (1 + (seed >> 33) % 40);
		}
		check_load(ips, n, bits[b], "random gaps");
	}
	free(ips);
	/* neighbours differ */
	cr_assert_neq(ftrace_hash_key(IP(0), 10), ftrace_hash_key(IP(1), 10));
}

/* ---- bulk ------------------------------------------------------------- */

#define BULK 10000UL

Test(hash_bulk, round_trip_10000)
{
	struct ftrace_hash *scratch = alloc_ftrace_hash(FTRACE_HASH_DEFAULT_BITS);
	struct ftrace_hash *copy, *moved;

	cr_assert_not_null(scratch);
	fill(scratch, BULK, true);
	assert_buckets_consistent(scratch);
	for (unsigned long i = 0; i < BULK; i++) {
		struct ftrace_func_entry *e = ftrace_lookup_ip(scratch, IP(i));

		cr_assert_not_null(e, "miss %lu", i);
		cr_assert_eq(e->ip, IP(i));
		cr_assert_eq(e->direct, DIRECT_OF(IP(i)));
		/* odd addresses between sites never hit */
		cr_assert_null(ftrace_lookup_ip(scratch, IP(i) + 8));
	}

	copy = alloc_and_copy_ftrace_hash(FTRACE_HASH_DEFAULT_BITS, scratch);
	cr_assert_not_null(copy);
	moved = __ftrace_hash_move(copy);
	cr_assert_not_null(moved);
	cr_assert_eq(moved->size_bits, FTRACE_HASH_MAX_BITS);
	cr_assert_eq(moved->count, BULK);
	cr_assert_eq(copy->count, 0);
	free_ftrace_hash(copy);

	/* remove the even half from the moved hash */
	for (unsigned long i = 0; i < BULK; i += 2)
		free_hash_entry(moved, ftrace_lookup_ip(moved, IP(i)));
	cr_assert_eq(moved->count, BULK / 2);
	for (unsigned long i = 0; i < BULK; i++) {
		struct ftrace_func_entry *e = ftrace_lookup_ip(moved, IP(i));

		if (i & 1) {
			cr_assert_not_null(e, "odd %lu lost", i);
			cr_assert_eq(e->direct, DIRECT_OF(IP(i)));
		} else {
			cr_assert_null(e, "even %lu still there", i);
		}
		/* the scratch hash is unaffected */
		cr_assert_not_null(ftrace_lookup_ip(scratch, IP(i)));
	}
	assert_buckets_consistent(moved);
	free_ftrace_hash(moved);
	free_ftrace_hash(scratch);
}
