// SPDX-License-Identifier: MIT
/*
 * The per-thread ring's producer side (tracers/ring_buffer.c) with no
 * writer thread: the test stands in for it by moving `consumed` itself.
 * The writer's watermark: a producer that passes half its ring wakes the
 * writer once (the kernel's buffer_percent, 50), not before, not again
 * until the ring has been read and half of it written anew; a full ring
 * under drop-and-count drops and counts.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include "ring_buffer.h"

#define RING	(64UL << 10)
#define EV	24UL		/* a function tracer event: 3 words */

static unsigned int kicks;

static void count_kick(void)
{
	kicks++;
}

static struct usft_tbuf *ring(void)
{
	struct usft_pool_opts o = { .ring_bytes = RING, .max_threads = 4 };
	struct usft_tbuf *b;

	cr_assert_eq(usft_tbuf_pool_init(&o), 0);
	usft_tbuf_kick_hook = count_kick;
	kicks = 0;
	b = usft_tbuf_get();
	cr_assert(b && b != USFT_TBUF_NONE && b != USFT_TBUF_SELF);
	return b;
}

static bool event(struct usft_tbuf *b, uint64_t n)
{
	return usft_tbuf_write(b, n, usft_ev_w1(0x1000, 0, EV_FUNC), n, 3);
}

/* events while the next one still ends at or before @bytes */
static void write_to(struct usft_tbuf *b, unsigned long bytes)
{
	while (b->head + EV <= bytes)
		cr_assert(event(b, b->head));
}

Test(ring_watermark, the_writer_is_woken_once_past_half)
{
	struct usft_tbuf *b = ring();

	write_to(b, RING / 2);
	cr_assert_eq(kicks, 0U, "woken before half: %u", kicks);
	cr_assert(event(b, 1));		/* the event that ends past half */
	cr_assert_eq(kicks, 1U);
	/* the rest of the ring: no more wake-ups, no loss */
	while (b->head + EV <= RING)
		cr_assert(event(b, 2));
	cr_assert_eq(kicks, 1U, "%u wake-ups for one half", kicks);
	cr_assert_eq(b->lost, 0UL);
	cr_assert_eq(b->commit, b->head);
}

Test(ring_watermark, each_half_written_after_a_read_wakes_it_again)
{
	struct usft_tbuf *b = ring();

	write_to(b, RING / 2 + EV);
	cr_assert_eq(kicks, 1U);
	/* the writer reads everything so far */
	__atomic_store_n(&b->consumed, b->head, __ATOMIC_RELEASE);
	{
		unsigned long from = b->head;

		write_to(b, from + RING / 2 - 2 * EV);
		cr_assert_eq(kicks, 1U, "woken again before a new half was written");
		write_to(b, from + RING / 2 + 2 * EV);
		cr_assert_eq(kicks, 2U);
	}
	cr_assert_eq(b->lost, 0UL);
}

Test(ring_watermark, a_full_ring_drops_and_counts_without_the_writer)
{
	struct usft_tbuf *b = ring();
	unsigned long n = 0;

	usft_tbuf_set_lossless(false);
	while (event(b, n))
		n++;
	cr_assert_eq(n, RING / EV);
	cr_assert_eq(b->lost, 1UL);
	cr_assert(event(b, 0) == false);
	cr_assert_eq(b->lost, 2UL);
	cr_assert_eq(kicks, 1U);
}
