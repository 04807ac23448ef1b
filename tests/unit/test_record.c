// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_record.c - ftrace_check_record() through its two wrappers,
 * ftrace_test_record() (no update) and ftrace_update_record(), on hand-built
 * struct dyn_ftrace values: no site is read or patched.  Kernel:
 * FTRACE_FL_* (include/linux/ftrace.h), ftrace_check_record() (kernel/trace/ftrace.c).
 */
#include <stdbool.h>
#include <stdio.h>

#include <criterion/criterion.h>

#include "core/internal.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define ENABLED		((unsigned long)FTRACE_FL_ENABLED)
#define REGS		((unsigned long)FTRACE_FL_REGS)
#define REGS_EN		((unsigned long)FTRACE_FL_REGS_EN)
#define TRAMP		((unsigned long)FTRACE_FL_TRAMP)
#define TRAMP_EN	((unsigned long)FTRACE_FL_TRAMP_EN)
#define IPMODIFY	((unsigned long)FTRACE_FL_IPMODIFY)
#define DISABLED	((unsigned long)FTRACE_FL_DISABLED)
#define DIRECT		((unsigned long)FTRACE_FL_DIRECT)
#define DIRECT_EN	((unsigned long)FTRACE_FL_DIRECT_EN)
#define CALL_OPS	((unsigned long)FTRACE_FL_CALL_OPS)
#define CALL_OPS_EN	((unsigned long)FTRACE_FL_CALL_OPS_EN)
#define TOUCHED		((unsigned long)FTRACE_FL_TOUCHED)
#define MODIFIED	((unsigned long)FTRACE_FL_MODIFIED)
#define NOCLEAR		((unsigned long)FTRACE_NOCLEAR_FLAGS)

#define IGNORE		FTRACE_UPDATE_IGNORE
#define MAKE_CALL	FTRACE_UPDATE_MAKE_CALL
#define MODIFY_CALL	FTRACE_UPDATE_MODIFY_CALL
#define MAKE_NOP	FTRACE_UPDATE_MAKE_NOP

#define SITE_IP		0x401230UL

static const char *const ret_names[] = { "IGNORE", "MAKE_CALL", "MODIFY_CALL", "MAKE_NOP" };

static const char *ret_name(int r)
{
	return r >= 0 && r < (int)ARRAY_SIZE(ret_names) ? ret_names[r] : "?";
}

/*
 * One transition: ftrace_test_record() must predict @ret and leave the
 * record alone, ftrace_update_record() must return the same and leave
 * exactly @after.  Returns the updated flags for chaining.
 */
static unsigned long step(unsigned long before, bool enable, int ret, unsigned long after)
{
	struct dyn_ftrace rec = { .ip = SITE_IP, .flags = before };
	int r;

	r = ftrace_test_record(&rec, enable);
	cr_assert_eq(r, ret, "test(%#lx, %d) = %s, want %s", before, enable,
		     ret_name(r), ret_name(ret));
	cr_assert_eq(rec.flags, before, "test_record changed %#lx to %#lx",
		     before, rec.flags);

	r = ftrace_update_record(&rec, enable);
	cr_assert_eq(r, ret, "update(%#lx, %d) = %s, want %s", before, enable,
		     ret_name(r), ret_name(ret));
	cr_assert_eq(rec.flags, after, "update(%#lx, %d): flags %#lx, want %#lx",
		     before, enable, rec.flags, after);
	cr_assert_eq(rec.ip, SITE_IP, "ip untouched");
	return rec.flags;
}

/* ---- constants --------------------------------------------------------- */

Test(record_flags, bit_values)
{
	cr_assert_eq(ENABLED, 1UL << 31);
	cr_assert_eq(REGS, 1UL << 30);
	cr_assert_eq(REGS_EN, 1UL << 29);
	cr_assert_eq(TRAMP, 1UL << 28);
	cr_assert_eq(TRAMP_EN, 1UL << 27);
	cr_assert_eq(IPMODIFY, 1UL << 26);
	cr_assert_eq(DISABLED, 1UL << 25);
	cr_assert_eq(DIRECT, 1UL << 24);
	cr_assert_eq(DIRECT_EN, 1UL << 23);
	cr_assert_eq(CALL_OPS, 1UL << 22);
	cr_assert_eq(CALL_OPS_EN, 1UL << 21);
	cr_assert_eq(TOUCHED, 1UL << 20);
	cr_assert_eq(MODIFIED, 1UL << 19);
	cr_assert_eq(NOCLEAR, 0x2180000UL);
	cr_assert_eq(FTRACE_REF_MAX_SHIFT, 19);
	cr_assert_eq(FTRACE_REF_MAX, 524287UL);
	/* the state bits and the count do not overlap */
	cr_assert_eq((ENABLED | REGS | REGS_EN | TRAMP | TRAMP_EN | IPMODIFY | DISABLED |
		      DIRECT | DIRECT_EN | CALL_OPS | CALL_OPS_EN | TOUCHED | MODIFIED) &
		     FTRACE_REF_MAX, 0);
	cr_assert_eq(IGNORE, 0);
	cr_assert_eq(MAKE_CALL, 1);
	cr_assert_eq(MODIFY_CALL, 2);
	cr_assert_eq(MAKE_NOP, 3);
}

Test(record_flags, rec_count_masks_19_bits)
{
	struct dyn_ftrace rec = { .ip = SITE_IP };

	rec.flags = 0;
	cr_assert_eq(ftrace_rec_count(&rec), 0);
	rec.flags = 1;
	cr_assert_eq(ftrace_rec_count(&rec), 1);
	rec.flags = FTRACE_REF_MAX;
	cr_assert_eq(ftrace_rec_count(&rec), 524287);
	rec.flags = MODIFIED;			/* bit 19: first state bit */
	cr_assert_eq(ftrace_rec_count(&rec), 0);
	rec.flags = 0xfff80000UL | 5;		/* every state bit + 5 */
	cr_assert_eq(ftrace_rec_count(&rec), 5);
	rec.flags = 0xffffffffUL;
	cr_assert_eq(ftrace_rec_count(&rec), FTRACE_REF_MAX);
	rec.flags = ENABLED | TOUCHED | 2;
	rec.flags++;				/* how __ftrace_hash_rec_update counts */
	cr_assert_eq(ftrace_rec_count(&rec), 3);
	cr_assert_eq(rec.flags & ~FTRACE_REF_MAX, ENABLED | TOUCHED);
}

/* ---- basic enable / disable ------------------------------------------- */

Test(record, count_0_not_enabled_is_ignored)
{
	step(0, true, IGNORE, 0);
	step(0, false, IGNORE, 0);
	/* wanted bits without a count do not make a call */
	step(REGS | TRAMP | DIRECT | CALL_OPS | IPMODIFY, true, IGNORE,
	     REGS | TRAMP | DIRECT | CALL_OPS | IPMODIFY);
	step(TOUCHED | MODIFIED, true, IGNORE, TOUCHED | MODIFIED);
}

Test(record, count_1_makes_call)
{
	unsigned long f;

	f = step(1, true, MAKE_CALL, 1 | ENABLED | TOUCHED);
	/* same state again: nothing to do */
	f = step(f, true, IGNORE, 1 | ENABLED | TOUCHED);
	/* a second plain user changes nothing in the bytes */
	f = step(f + 1, true, IGNORE, 2 | ENABLED | TOUCHED);
	cr_assert_eq(f, 2 | ENABLED | TOUCHED);
	/* counts far above 1 behave the same */
	step(FTRACE_REF_MAX, true, MAKE_CALL, FTRACE_REF_MAX | ENABLED | TOUCHED);
}

Test(record, touched_survives_a_previous_life)
{
	/* a site traced before (TOUCHED kept at count 0) is enabled again */
	step(1 | TOUCHED, true, MAKE_CALL, 1 | ENABLED | TOUCHED);
}

/* ---- REGS / TRAMP mirror their _EN bit -------------------------------- */

Test(record, regs_wanted)
{
	unsigned long f;

	/* at first enable */
	step(1 | REGS, true, MAKE_CALL, 1 | REGS | REGS_EN | ENABLED | TOUCHED);
	/* added to an enabled site */
	f = step(1 | ENABLED | TOUCHED | REGS, true, MODIFY_CALL,
		 1 | ENABLED | TOUCHED | REGS | REGS_EN);
	f = step(f, true, IGNORE, f);
	/* the regs user leaves: REGS_EN follows */
	f &= ~REGS;
	f = step(f, true, MODIFY_CALL, 1 | ENABLED | TOUCHED);
	step(f, true, IGNORE, f);
}

Test(record, tramp_wanted)
{
	unsigned long f;

	step(1 | TRAMP, true, MAKE_CALL, 1 | TRAMP | TRAMP_EN | ENABLED | TOUCHED);
	f = step(1 | ENABLED | TOUCHED | TRAMP, true, MODIFY_CALL,
		 1 | ENABLED | TOUCHED | TRAMP | TRAMP_EN);
	f = step(f, true, IGNORE, f);
	/* a second user clears TRAMP (3.1): back to the shared caller */
	f = (f + 1) & ~TRAMP;
	f = step(f, true, MODIFY_CALL, 2 | ENABLED | TOUCHED);
	step(f, true, IGNORE, f);
}

Test(record, regs_and_tramp_together)
{
	step(1 | REGS | TRAMP, true, MAKE_CALL,
	     1 | REGS | REGS_EN | TRAMP | TRAMP_EN | ENABLED | TOUCHED);
	/* only the differing bit is mirrored, the other _EN stays */
	step(1 | ENABLED | TOUCHED | REGS | REGS_EN | TRAMP, true, MODIFY_CALL,
	     1 | ENABLED | TOUCHED | REGS | REGS_EN | TRAMP | TRAMP_EN);
}

/* ---- DIRECT: only called directly while the count is 1 ----------------- */

Test(record, direct_count_1_then_2_then_1)
{
	unsigned long f;

	/* the direct ops alone: call the direct trampoline itself */
	f = step(1 | DIRECT, true, MAKE_CALL,
		 1 | DIRECT | DIRECT_EN | ENABLED | TOUCHED | MODIFIED);
	f = step(f, true, IGNORE, f);
	/* a second ops joins: DIRECT_EN cleared, shared caller calls it */
	f = step(f + 1, true, MODIFY_CALL, 2 | DIRECT | ENABLED | TOUCHED | MODIFIED);
	f = step(f, true, IGNORE, f);
	/* three users: still no DIRECT_EN */
	f = step(f + 1, true, IGNORE, 3 | DIRECT | ENABLED | TOUCHED | MODIFIED);
	/* back to the direct ops alone: DIRECT_EN again */
	f = step(f - 2, true, MODIFY_CALL,
		 1 | DIRECT | DIRECT_EN | ENABLED | TOUCHED | MODIFIED);
	/* the direct ops leaves (DIRECT cleared by the dec), one other stays */
	f &= ~DIRECT;
	f = step(f, true, MODIFY_CALL, 1 | ENABLED | TOUCHED | MODIFIED);
	step(f, true, IGNORE, f);
}

Test(record, direct_with_count_2_from_nop)
{
	/* DIRECT wanted with two users from the start: plain call, no DIRECT_EN */
	step(2 | DIRECT, true, MAKE_CALL, 2 | DIRECT | ENABLED | TOUCHED | MODIFIED);
}

Test(record, stale_direct_en_with_count_2)
{
	/* DIRECT_EN left over while the count is 2 (no DIRECT): cleared */
	step(2 | ENABLED | TOUCHED | DIRECT_EN, true, MODIFY_CALL,
	     2 | ENABLED | TOUCHED);
}

/* ---- CALL_OPS: same count rule as DIRECT ------------------------------- */

Test(record, call_ops)
{
	unsigned long f;

	f = step(1 | CALL_OPS, true, MAKE_CALL, 1 | CALL_OPS | CALL_OPS_EN | ENABLED | TOUCHED);
	f = step(f + 1, true, MODIFY_CALL, 2 | CALL_OPS | ENABLED | TOUCHED);
	f = step(f - 1, true, MODIFY_CALL, 1 | CALL_OPS | CALL_OPS_EN | ENABLED | TOUCHED);
	f &= ~CALL_OPS;
	step(f, true, MODIFY_CALL, 1 | ENABLED | TOUCHED);
	/* CALL_OPS never marks MODIFIED */
}

/* ---- turning off --------------------------------------------------------- */

Test(record, count_0_makes_nop_keeping_noclear)
{
	/* last user gone: everything but DISABLED|TOUCHED|MODIFIED is cleared */
	step(ENABLED | TOUCHED, true, MAKE_NOP, TOUCHED);
	step(ENABLED | TOUCHED | MODIFIED | REGS | REGS_EN | TRAMP | TRAMP_EN |
	     DIRECT_EN | CALL_OPS_EN | IPMODIFY, true, MAKE_NOP, TOUCHED | MODIFIED);
	step(ENABLED | TOUCHED | REGS_EN | TRAMP_EN | DIRECT | DIRECT_EN | CALL_OPS |
	     CALL_OPS_EN, false, MAKE_NOP, TOUCHED);
	/* an ENABLED DISABLED record is not skipped; DISABLED survives */
	step(ENABLED | DISABLED | TOUCHED | REGS_EN, true, MAKE_NOP, DISABLED | TOUCHED);
	step(~FTRACE_REF_MAX & 0xffffffffUL, true, MAKE_NOP, NOCLEAR);
}

Test(record, disable_with_count_keeps_count_and_wanted_bits)
{
	unsigned long all_en = ENABLED | REGS_EN | TRAMP_EN | DIRECT_EN | CALL_OPS_EN;
	unsigned long wanted = REGS | TRAMP | DIRECT | CALL_OPS | IPMODIFY;
	unsigned long f;

	/* enable=false (ftrace_shutdown of the last ops, ftrace_enabled=0) */
	f = step(1 | all_en | wanted | TOUCHED | MODIFIED, false, MAKE_NOP,
		 1 | wanted | TOUCHED | MODIFIED);
	/* already off: nothing more */
	f = step(f, false, IGNORE, f);
	/* re-enabled later: everything comes back */
	step(f, true, MAKE_CALL, 1 | all_en | wanted | TOUCHED | MODIFIED);

	step(7 | ENABLED | TOUCHED, false, MAKE_NOP, 7 | TOUCHED);
	step(FTRACE_REF_MAX | ENABLED | REGS | REGS_EN, false, MAKE_NOP,
	     FTRACE_REF_MAX | REGS);
}

/* ---- DISABLED ---------------------------------------------------------- */

Test(record, disabled_not_enabled_is_skipped)
{
	step(DISABLED, true, IGNORE, DISABLED);
	step(DISABLED | 1, true, IGNORE, DISABLED | 1);
	step(DISABLED | 1 | REGS | DIRECT, true, IGNORE, DISABLED | 1 | REGS | DIRECT);
	step(DISABLED | 3 | REGS_EN, false, IGNORE, DISABLED | 3 | REGS_EN);
	/* DISABLED but ENABLED (enabled before it was disabled): handled */
	step(DISABLED | ENABLED | 1, true, IGNORE, DISABLED | ENABLED | 1);
	step(DISABLED | ENABLED | 1, false, MAKE_NOP, DISABLED | 1);
}

/* ---- MODIFIED ---------------------------------------------------------- */

Test(record, modified_marks_direct_or_ipmodify)
{
	unsigned long f;

	step(1 | IPMODIFY | REGS, true, MAKE_CALL,
	     1 | IPMODIFY | REGS | REGS_EN | ENABLED | TOUCHED | MODIFIED);
	step(1 | DIRECT, true, MAKE_CALL,
	     1 | DIRECT | DIRECT_EN | ENABLED | TOUCHED | MODIFIED);
	/* plain, REGS, TRAMP, CALL_OPS users never set it */
	step(1 | REGS | TRAMP | CALL_OPS, true, MAKE_CALL,
	     1 | REGS | REGS_EN | TRAMP | TRAMP_EN | CALL_OPS | CALL_OPS_EN | ENABLED | TOUCHED);
	/* it is sticky: it survives the IPMODIFY user leaving and count 0 */
	f = step(1 | IPMODIFY, true, MAKE_CALL, 1 | IPMODIFY | ENABLED | TOUCHED | MODIFIED);
	f = step(f & ~IPMODIFY & ~FTRACE_REF_MAX, true, MAKE_NOP, TOUCHED | MODIFIED);
	step(f | 1, true, MAKE_CALL, 1 | ENABLED | TOUCHED | MODIFIED);
}

Test(record, bug_type_follows_the_result)
{
	struct dyn_ftrace rec = { .ip = SITE_IP, .flags = 1 };

	cr_assert_eq(ftrace_update_record(&rec, true), MAKE_CALL);
	cr_assert_eq(ftrace_bug_type, FTRACE_BUG_CALL);
	rec.flags |= REGS;
	cr_assert_eq(ftrace_update_record(&rec, true), MODIFY_CALL);
	cr_assert_eq(ftrace_bug_type, FTRACE_BUG_UPDATE);
	cr_assert_eq(ftrace_update_record(&rec, true), IGNORE);
	cr_assert_eq(ftrace_bug_type, FTRACE_BUG_UNKNOWN);
	cr_assert_eq(ftrace_update_record(&rec, false), MAKE_NOP);
	cr_assert_eq(ftrace_bug_type, FTRACE_BUG_NOP);
}

/* ---- exhaustive against a model written from the spec (3.2) ------------ */

/*
 * The spec's five steps, phrased independently of the runtime: which
 * capability bits disagree with their _EN bit, given the count.
 */
static int model(unsigned long *flags, bool enable, bool update)
{
	unsigned long f = *flags, count = f & FTRACE_REF_MAX;
	bool want_on = enable && count > 0, is_on = f & ENABLED;
	bool regs_diff = !(f & REGS) != !(f & REGS_EN);
	bool tramp_diff = !(f & TRAMP) != !(f & TRAMP_EN);
	bool direct_diff = count == 1 ? !(f & DIRECT) != !(f & DIRECT_EN) : !!(f & DIRECT_EN);
	bool ops_diff = count == 1 ? !(f & CALL_OPS) != !(f & CALL_OPS_EN) : !!(f & CALL_OPS_EN);

	if ((f & DISABLED) && !is_on)
		return IGNORE;
	if (want_on) {
		if (is_on && !regs_diff && !tramp_diff && !direct_diff && !ops_diff)
			return IGNORE;
		if (update) {
			f |= ENABLED | TOUCHED;
			f = (f & ~REGS_EN) | ((f & REGS) ? REGS_EN : 0);
			f = (f & ~TRAMP_EN) | ((f & TRAMP) ? TRAMP_EN : 0);
			f = (f & ~DIRECT_EN) | (count == 1 && (f & DIRECT) ? DIRECT_EN : 0);
			f = (f & ~CALL_OPS_EN) | (count == 1 && (f & CALL_OPS) ? CALL_OPS_EN : 0);
			if (f & (DIRECT | IPMODIFY))
				f |= MODIFIED;
			*flags = f;
		}
		return is_on ? MODIFY_CALL : MAKE_CALL;
	}
	if (!is_on)
		return IGNORE;
	if (update) {
		if (!count)
			f &= NOCLEAR;
		else
			f &= ~(ENABLED | REGS_EN | TRAMP_EN | DIRECT_EN | CALL_OPS_EN);
		*flags = f;
	}
	return MAKE_NOP;
}

Test(record_model, exhaustive)
{
	static const unsigned long bits[] = {
		ENABLED, REGS, REGS_EN, TRAMP, TRAMP_EN, IPMODIFY, DISABLED,
		DIRECT, DIRECT_EN, CALL_OPS, CALL_OPS_EN, TOUCHED, MODIFIED,
	};
	static const unsigned long counts[] = { 0, 1, 2, FTRACE_REF_MAX };
	unsigned long n = 0, per_ret[4] = { 0 };

	for (unsigned long combo = 0; combo < (1UL << ARRAY_SIZE(bits)); combo++) {
		unsigned long state = 0;

		for (size_t b = 0; b < ARRAY_SIZE(bits); b++)
			if (combo & (1UL << b))
				state |= bits[b];
		for (size_t c = 0; c < ARRAY_SIZE(counts); c++)
			for (int enable = 0; enable < 2; enable++) {
				unsigned long before = state | counts[c], want = before;
				struct dyn_ftrace rec = { .ip = SITE_IP, .flags = before };
				int ret = model(&want, enable, true), r;

				r = ftrace_test_record(&rec, enable);
				if (r != ret || rec.flags != before)
					cr_assert_fail("test(%#lx, %d) = %s flags %#lx; model %s",
						       before, enable, ret_name(r), rec.flags,
						       ret_name(ret));
				r = ftrace_update_record(&rec, enable);
				if (r != ret || rec.flags != want)
					cr_assert_fail("update(%#lx, %d) = %s flags %#lx; model %s flags %#lx",
						       before, enable, ret_name(r), rec.flags,
						       ret_name(ret), want);
				/* an update converges: asking again changes nothing */
				if (ret != IGNORE) {
					r = ftrace_update_record(&rec, enable);
					if (r != IGNORE || rec.flags != want)
						cr_assert_fail("update(%#lx, %d) twice: %s flags %#lx",
							       before, enable, ret_name(r),
							       rec.flags);
				}
				per_ret[ret]++;
				n++;
			}
	}
	cr_assert_eq(n, 8192 * 4 * 2);
	for (int i = 0; i < 4; i++)
		cr_assert_gt(per_ret[i], 0, "%s never produced", ret_name(i));
}
