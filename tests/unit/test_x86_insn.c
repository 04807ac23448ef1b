// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_x86_insn.c - x86-64 branch encoding (arch/x86_64/insn.h):
 * call rel32 (e8) / jmp rel32 (e9), the displacement counted from the end
 * of the 5-byte instruction, and the exact edges of the +-2 GiB reach that
 * x86_rel32_ok() and x86_encode_branch() must agree on.  Pure arithmetic on
 * buffers; nothing is patched.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "insn.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define INSN_SIZE 5

/* A user-space text address well away from 0 and from the canonical top. */
#define IP0 0x7f1234560000UL

static const unsigned char sentinel[INSN_SIZE] = { 0xa5, 0xa5, 0xa5, 0xa5, 0xa5 };

static int32_t rel_of(const unsigned char *buf)
{
	int32_t rel;

	memcpy(&rel, buf + 1, sizeof(rel));
	return rel;
}

/* Encode and compare with the exact expected bytes. */
static void expect_bytes(unsigned long ip, unsigned long target, bool jmp,
			 const unsigned char want[INSN_SIZE])
{
	unsigned char buf[INSN_SIZE];

	memcpy(buf, sentinel, sizeof(buf));
	cr_assert(x86_encode_branch(buf, ip, target, jmp), "%#lx -> %#lx refused", ip, target);
	cr_assert_arr_eq(buf, want, INSN_SIZE,
			 "%s %#lx -> %#lx: %02x %02x %02x %02x %02x", jmp ? "jmp" : "call",
			 ip, target, buf[0], buf[1], buf[2], buf[3], buf[4]);
}

/* Reachable: encodes, agrees with x86_rel32_ok, decodes back to @target. */
static void expect_ok(unsigned long ip, unsigned long target)
{
	for (int jmp = 0; jmp < 2; jmp++) {
		unsigned char buf[INSN_SIZE];

		memcpy(buf, sentinel, sizeof(buf));
		cr_assert(x86_rel32_ok(ip, target), "rel32_ok(%#lx, %#lx)", ip, target);
		cr_assert(x86_encode_branch(buf, ip, target, jmp), "encode %#lx -> %#lx",
			  ip, target);
		cr_assert_eq(buf[0], jmp ? JMP32_INSN_OPCODE : CALL_INSN_OPCODE);
		cr_assert_eq(ip + INSN_SIZE + (unsigned long)(long)rel_of(buf), target,
			     "%#lx -> %#lx decodes to %#lx", ip, target,
			     ip + INSN_SIZE + (long)rel_of(buf));
	}
}

/* Out of reach: refused by both, and the buffer is left alone. */
static void expect_refused(unsigned long ip, unsigned long target)
{
	for (int jmp = 0; jmp < 2; jmp++) {
		unsigned char buf[INSN_SIZE];

		memcpy(buf, sentinel, sizeof(buf));
		cr_assert_not(x86_rel32_ok(ip, target), "rel32_ok(%#lx, %#lx)", ip, target);
		cr_assert_not(x86_encode_branch(buf, ip, target, jmp), "encode %#lx -> %#lx",
			      ip, target);
		cr_assert_arr_eq(buf, sentinel, INSN_SIZE, "buffer written on refusal");
	}
}

Test(x86_insn, opcodes)
{
	cr_assert_eq(CALL_INSN_OPCODE, 0xe8);
	cr_assert_eq(JMP32_INSN_OPCODE, 0xe9);
	cr_assert_eq(INT3_INSN_OPCODE, 0xcc);
	cr_assert_eq(memcmp(X86_NOP5, "\x0f\x1f\x44\x00\x00", INSN_SIZE), 0);
}

Test(x86_insn, call_forward)
{
	static const unsigned char want[] = { 0xe8, 0xfb, 0x0f, 0x00, 0x00 };

	/* 0x2000 - (0x1000 + 5) = 0xffb */
	expect_bytes(0x1000, 0x2000, false, want);
}

Test(x86_insn, call_backward)
{
	static const unsigned char want[] = { 0xe8, 0xfb, 0xf7, 0xff, 0xff };

	/* 0x800 - 0x1005 = -0x805 = 0xfffff7fb */
	expect_bytes(0x1000, 0x800, false, want);
}

Test(x86_insn, jmp_forward_and_backward)
{
	static const unsigned char fwd[] = { 0xe9, 0x7b, 0x56, 0x34, 0x12 };
	static const unsigned char back[] = { 0xe9, 0x85, 0xa9, 0xcb, 0xed };

	/* +0x1234567b and -0x1234567b from ip+5 */
	expect_bytes(IP0, IP0 + 5 + 0x1234567bUL, true, fwd);
	expect_bytes(IP0, IP0 + 5 - 0x1234567bUL, true, back);
}

Test(x86_insn, zero_and_self)
{
	static const unsigned char call0[] = { 0xe8, 0x00, 0x00, 0x00, 0x00 };
	static const unsigned char jmp_self[] = { 0xe9, 0xfb, 0xff, 0xff, 0xff };

	/* the next instruction: rel 0 */
	expect_bytes(IP0, IP0 + 5, false, call0);
	/* a jump to itself: rel -5 */
	expect_bytes(IP0, IP0, true, jmp_self);
}

Test(x86_insn, reach_edges)
{
	unsigned long next = IP0 + INSN_SIZE;

	/* forward: INT32_MAX ok, one more refused */
	expect_ok(IP0, next + (unsigned long)INT32_MAX);
	expect_refused(IP0, next + (unsigned long)INT32_MAX + 1);
	/* backward: INT32_MIN ok, one further refused */
	expect_ok(IP0, next - 0x80000000UL);
	expect_refused(IP0, next - 0x80000000UL - 1);
	/* and far beyond either side */
	expect_refused(IP0, next + (1UL << 40));
	expect_refused(IP0, next - (1UL << 40));
	expect_refused(IP0, 0);
	expect_refused(0x1000, 0x7fffffffffffUL);
}

Test(x86_insn, reach_edge_bytes)
{
	static const unsigned char max_call[] = { 0xe8, 0xff, 0xff, 0xff, 0x7f };
	static const unsigned char min_jmp[] = { 0xe9, 0x00, 0x00, 0x00, 0x80 };
	unsigned long next = IP0 + INSN_SIZE;

	expect_bytes(IP0, next + (unsigned long)INT32_MAX, false, max_call);
	expect_bytes(IP0, next - 0x80000000UL, true, min_jmp);
}

/* The edge is measured from ip + 5, not from ip. */
Test(x86_insn, edge_counts_from_insn_end)
{
	/* forwards target - ip == INT32_MAX + 5 is still reachable ... */
	expect_ok(IP0, IP0 + (unsigned long)INT32_MAX + 5);
	/* ... while backwards target - ip == INT32_MIN + 5 is the farthest */
	expect_ok(IP0, IP0 - 0x80000000UL + 5);
	expect_refused(IP0, IP0 - 0x80000000UL + 4);
}

/* Sweep around both edges and a spread of distances: the two agree. */
Test(x86_insn, rel32_ok_agrees_with_encoder)
{
	static const long deltas[] = {
		0, 1, -1, 5, -5, 127, -128, 0x7fff, -0x8000, 0x12345678, -0x12345678,
		0x7ffffff0L, -0x7ffffff0L, 0x100000000L, -0x100000000L,
		0x7fffffffffffL, -0x7fffffffffffL,
	};
	unsigned long ips[] = { IP0, 0x400000UL, 0x555555554000UL, 0x7ffff7dd0000UL };
	unsigned long checked = 0;

	for (size_t i = 0; i < ARRAY_SIZE(ips); i++) {
		unsigned long next = ips[i] + INSN_SIZE;

		for (long d = -8; d <= 8; d++) {
			unsigned long hi = next + (unsigned long)((long)INT32_MAX + d);
			unsigned long lo = next + (unsigned long)((long)INT32_MIN + d);

			if (d <= 0)
				expect_ok(ips[i], hi);
			else
				expect_refused(ips[i], hi);
			if (d >= 0)
				expect_ok(ips[i], lo);
			else
				expect_refused(ips[i], lo);
			checked += 2;
		}
		for (size_t k = 0; k < ARRAY_SIZE(deltas); k++) {
			unsigned long target = next + (unsigned long)deltas[k];
			bool fits = deltas[k] >= INT32_MIN && deltas[k] <= INT32_MAX;

			if (fits)
				expect_ok(ips[i], target);
			else
				expect_refused(ips[i], target);
			checked++;
		}
	}
	cr_assert_eq(checked, ARRAY_SIZE(ips) * (34 + ARRAY_SIZE(deltas)));
}
