// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_glob.c - usft_glob_match(), the kernel glob_match() used for
 * full-glob filters (kernel: lib/glob.c): '*', '?', classes, ranges,
 * negation, escapes, backtracking; the globs of the kernel selftest
 * func-filter-glob.tc checked against their regex, as that test does;
 * and agreement with fnmatch(3) on generated patterns.
 */
#include <fnmatch.h>
#include <locale.h>
#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/internal.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct gcase {
	const char *pat;
	const char *str;
	bool match;
};

static void run_cases(const struct gcase *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(usft_glob_match(c[i].pat, c[i].str), c[i].match,
			     "glob \"%s\" vs \"%s\": want %s", c[i].pat, c[i].str,
			     c[i].match ? "match" : "no match");
}

#define RUN(cases) run_cases(cases, ARRAY_SIZE(cases))

/* ---- syntax ----------------------------------------------------------- */

Test(glob, literal_and_empty)
{
	static const struct gcase c[] = {
		{ "", "", true },
		{ "", "a", false },
		{ "a", "", false },
		{ "schedule", "schedule", true },
		{ "schedule", "schedul", false },
		{ "schedule", "schedulee", false },
		{ "schedule", "Schedule", false },	/* case sensitive */
		{ "a", "a", true },
		{ "ab", "ba", false },
	};
	RUN(c);
}

Test(glob, star)
{
	static const struct gcase c[] = {
		{ "*", "", true },
		{ "*", "anything", true },
		{ "**", "", true },
		{ "***", "abc", true },
		{ "a*", "a", true },
		{ "a*", "abc", true },
		{ "a*", "ba", false },
		{ "*a", "a", true },
		{ "*a", "bca", true },
		{ "*a", "ab", false },
		{ "*b*", "abc", true },
		{ "*b*", "b", true },
		{ "*b*", "ac", false },
		{ "a*c", "ac", true },
		{ "a*c", "abbbc", true },
		{ "a*c", "abcd", false },
		{ "a*", "", false },
		{ "*a*", "", false },
	};
	RUN(c);
}

Test(glob, question)
{
	static const struct gcase c[] = {
		{ "?", "a", true },
		{ "?", "", false },
		{ "?", "ab", false },
		{ "??", "ab", true },
		{ "a?c", "abc", true },
		{ "a?c", "ac", false },
		{ "a?c", "abbc", false },
		{ "?*", "", false },
		{ "?*", "x", true },
		{ "*?", "", false },
		{ "*?", "xyz", true },
		{ "*??*", "x", false },
		{ "*??*", "xy", true },
	};
	RUN(c);
}

Test(glob, classes_and_ranges)
{
	static const struct gcase c[] = {
		{ "[abc]", "a", true },
		{ "[abc]", "c", true },
		{ "[abc]", "d", false },
		{ "[abc]", "", false },
		{ "[abc]", "ab", false },
		{ "x[abc]y", "xby", true },
		{ "[a-z]", "a", true },
		{ "[a-z]", "m", true },
		{ "[a-z]", "z", true },
		{ "[a-z]", "A", false },
		{ "[a-z]", "`", false },		/* 'a' - 1 */
		{ "[a-z]", "{", false },		/* 'z' + 1 */
		{ "[a-cx-z]", "b", true },
		{ "[a-cx-z]", "y", true },
		{ "[a-cx-z]", "m", false },
		{ "[0-9_]", "_", true },
		{ "[0-9_]", "7", true },
		{ "[z-a]", "m", false },		/* reversed range is empty */
		{ "[z-a]", "z", false },
		{ "[a-]", "-", true },			/* trailing '-' is literal */
		{ "[a-]", "a", true },
		{ "[a-]", "b", false },
		{ "[-a]", "-", true },			/* leading '-' is literal */
		{ "[[]", "[", true },			/* '[' inside a class is plain */
		{ "[*?]", "*", true },			/* so are '*' and '?' */
		{ "[*?]", "?", true },
		{ "[*?]", "a", false },
	};
	RUN(c);
}

Test(glob, negation)
{
	static const struct gcase c[] = {
		{ "[!x]", "y", true },
		{ "[!x]", "x", false },
		{ "[!x]", "", false },			/* still needs one char */
		/* kernel glob_match(): only '!' inverts; '[^x]' is the class {^, x} */
		{ "[^x]", "y", false },
		{ "[^x]", "x", true },
		{ "[^x]", "^", true },
		{ "[^x]", "", false },
		{ "[!a-c]", "d", true },
		{ "[!a-c]", "b", false },
		{ "[^a-c]", "d", false },
		{ "[^a-c]", "a", true },
		{ "[!!]", "!", false },
		{ "[!!]", "a", true },
		{ "[x!]", "!", true },			/* '!' not first: literal */
		{ "[x^]", "^", true },
		{ "a[!b]c", "abc", false },
		{ "a[!b]c", "axc", true },
	};
	RUN(c);
}

Test(glob, bracket_first_in_class_is_literal)
{
	static const struct gcase c[] = {
		{ "[]]", "]", true },
		{ "[]]", "a", false },
		{ "[]a]", "a", true },
		{ "[]a]", "]", true },
		{ "[]a]", "b", false },
		{ "[!]]", "]", false },
		{ "[!]]", "a", true },
		{ "[^]]", "^]", true },		/* '[^]' then ']' */
		{ "[^]]", "a", false },
		{ "[]-a]", "^", true },		/* range ']'..'a' (0x5d..0x61) */
		{ "[]-a]", "b", false },
		{ "x[]]y", "x]y", true },
	};
	RUN(c);
}

Test(glob, unterminated_bracket_is_literal)
{
	static const struct gcase c[] = {
		{ "[", "[", true },
		{ "[", "a", false },
		{ "[", "", false },
		{ "[a", "[a", true },
		{ "[a", "a", false },
		{ "a[", "a[", true },
		{ "[ab", "[ab", true },
		{ "[a-", "[a-", true },
		{ "[a-", "a", false },
		{ "[!", "[!", true },
		{ "[]", "[]", true },		/* ']' first is a member: still open */
		{ "[]", "]", false },
		{ "[!]", "[!]", true },
		{ "*[", "abc[", true },
		{ "*[a", "x[a", true },
		{ "[*", "[", true },		/* '[' literal, then '*' */
		{ "[*", "[xyz", true },
		{ "[?", "[x", true },
	};
	RUN(c);
}

Test(glob, escapes)
{
	static const struct gcase c[] = {
		{ "a\\*b", "a*b", true },
		{ "a\\*b", "axb", false },
		{ "a\\*b", "ab", false },
		{ "a\\*b", "axxb", false },
		{ "a\\?b", "a?b", true },
		{ "a\\?b", "axb", false },
		{ "\\[a]", "[a]", true },
		{ "\\[a]", "a", false },
		{ "\\\\", "\\", true },
		{ "\\\\", "\\\\", false },
		{ "\\a", "a", true },		/* escaping a plain char: itself */
		{ "\\a", "\\a", false },
		{ "*\\*", "abc*", true },
		{ "*\\*", "abc", false },
		{ "\\**", "*abc", true },
		{ "\\**", "abc", false },
		/* a lone trailing backslash matches itself (kernel reads past
		 * the NUL here; usft treats it as a literal) */
		{ "a\\", "a\\", true },
		{ "a\\", "a", false },
		{ "\\", "\\", true },
		/* no escapes inside a class: '\\' is a member */
		{ "[\\]", "\\", true },
		{ "[\\]]", "\\]", true },
		{ "[\\]]", "]", false },
	};
	RUN(c);
}

Test(glob, backtracking)
{
	static const struct gcase c[] = {
		{ "*a*b*c", "abc", true },
		{ "*a*b*c", "xaxbxc", true },
		{ "*a*b*c", "cba", false },
		{ "*a*b*c", "aabbcc", true },
		{ "*a*b*c", "abcabd", false },
		{ "*a*b*c", "abcabc", true },
		{ "*a*b*c*", "zzazzbzzczz", true },
		{ "a*a*a*a", "aaaa", true },
		{ "a*a*a*a", "aaa", false },
		{ "*ab", "aab", true },
		{ "*ab", "abab", true },
		{ "*ab", "abac", false },
		{ "*aab", "aaaab", true },
		{ "*abc*", "ababcab", true },
		{ "*?c", "ac", true },
		{ "*?c", "c", false },
		{ "*[bc]d", "abbd", true },
		{ "*[!a]b", "aab", false },
		{ "*[!a]b", "acb", true },
		{ "a*b?c", "aXbYbZc", true },
		{ "a*b?c", "abbc", true },
		{ "a*b?c", "abc", false },
		{ "*.c", "foo.c.c", true },
		{ "*x", "xxxxxxxxxxxxxxxxxxxxy", false },
		/* long subject: the single-backtrack-point algorithm stays linear */
		{ "*a*a*a*a*a*a*a*a*b",
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false },
	};
	RUN(c);
}

/* ---- kernel selftest: func-filter-glob.tc ---------------------------- */

static const char *const names[] = {
	"schedule", "__schedule", "preempt_schedule", "preempt_schedule_irq",
	"schedule_timeout", "schedule_timeout_uninterruptible", "io_schedule",
	"schedule_hrtimeout_range", "yield_to_schedule", "scheduler_tick",
	"sched_clock", "schdule", "sch_dule", "schxdule", "schedule_",
	"_raw_spin_lock", "_raw_spin_unlock", "_raw_spin_lock_irqsave",
	"spin_lock", "pin_user_pages", "pin_lock", "unpin_lock_page", "pinlock",
	"mutex_trylock", "mutex_lock", "mutex_try", "mutex_lock_try",
	"mutex_unlock", "ww_mutex_trylock", "mutextry",
	"sys_read", "SyS_read", "SYS_read", "Sys_read", "sYs_read", "syS_write",
	"sys_", "sys", "__x64_sys_read", "SySread",
	"do_sys_open", "vfs_read", "ksys_read",
};

/* One glob / regex pair from the selftest; the regex is grep's BRE. */
static void selftest_check(const char *glob, const char *bre)
{
	regex_t re;
	size_t hits = 0;

	cr_assert_eq(regcomp(&re, bre, REG_NOSUB), 0, "regcomp %s", bre);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		bool want = regexec(&re, names[i], 0, NULL, 0) == 0;

		hits += want;
		cr_expect_eq(usft_glob_match(glob, names[i]), want,
			     "glob \"%s\" vs \"%s\": regex %s says %d", glob,
			     names[i], bre, want);
	}
	regfree(&re);
	cr_expect_gt(hits, 0, "%s: the name list exercises no match", glob);
	cr_expect_lt(hits, ARRAY_SIZE(names), "%s: everything matches", glob);
}

Test(glob_selftest, func_filter_glob)
{
	/* simple types (prefix / suffix / substring), matched as full globs */
	selftest_check("*schedule", "^.*schedule$");
	selftest_check("*schedule*", "^.*schedule.*$");
	selftest_check("schedule*", "^schedule.*$");
	selftest_check("*pin*lock", "^.*pin.*lock$");
	selftest_check("mutex*try*", "^mutex.*try.*$");
	/* full glob */
	selftest_check("sch*ule", "^sch.*ule$");
	selftest_check("[Ss]y[Ss]_*", "^[Ss]y[Ss]_.*$");
	selftest_check("sch?dule", "^sch.dule$");
}

Test(glob_selftest, spot_checks)
{
	static const struct gcase c[] = {
		{ "sch*ule", "schedule", true },
		{ "sch*ule", "schdule", true },
		{ "sch*ule", "schedule_timeout", false },
		{ "[Ss]y[Ss]_*", "SyS_read", true },
		{ "[Ss]y[Ss]_*", "sys_read", true },
		{ "[Ss]y[Ss]_*", "SYS_read", false },
		{ "[Ss]y[Ss]_*", "sys_", true },
		{ "[Ss]y[Ss]_*", "__x64_sys_read", false },
		{ "sch?dule", "schedule", true },
		{ "sch?dule", "schdule", false },
		{ "*pin*lock", "_raw_spin_lock", true },
		{ "*pin*lock", "_raw_spin_unlock", true },
		{ "*pin*lock", "_raw_spin_lock_irqsave", false },
	};
	RUN(c);
}

/* ---- agreement with fnmatch(3) ---------------------------------------- */

/*
 * Patterns are generated from: literals over "abc", '*', '?', escapes of
 * one of "abc*?[\\", and well-formed classes ('!' negation, ']' as
 * first member, ranges a-b / b-c, members '*', '?' and '[').  Subjects are
 * instances of the pattern, possibly mutated, so both outcomes occur.
 *
 * Excluded, because fnmatch(3) defines them differently from the kernel's
 * glob_match() (verified on glibc):
 *  - '\\' inside a class: fnmatch escapes ("[\\]]" is the class {]}),
 *    glob_match takes it literally ("[\\]]" is {\\} followed by ']');
 *  - a trailing lone '\\': fnmatch never matches, usft matches a '\\';
 *  - POSIX classes, equivalence classes and collating symbols ("[[:alpha:]]",
 *    "[[=a=]]", "[[.a.]]"): glob_match has none of them;
 *  - unterminated '[' mid-pattern: then the class may close at a later ']'
 *    in either implementation, which is covered by the hand cases above,
 *    not generated (fixed-text cases agree, see unterminated_bracket_*).
 * fnmatch runs with flags 0 in the "C" locale: '/' and leading '.' are
 * ordinary and ranges compare bytes, as in glob_match.
 */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	/* xorshift64*, fixed seed: the same pairs on every run */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dULL) >> 32) % n;
}

enum tok_kind { T_LIT, T_STAR, T_QUEST, T_ESC, T_CLASS };

struct tok {
	enum tok_kind kind;
	char c;			/* T_LIT, T_ESC */
	char set[8];		/* T_CLASS: member bytes (ranges expanded) */
	bool neg;
};

#define MAX_TOKS	8
#define ALPHA		"abc"
#define SUBJ_ALPHA	"abc*?[]\\-"

/* Append one class to @pat and record its members. */
static void gen_class(char *pat, struct tok *t)
{
	static const char *const items[] = { "a", "b", "c", "a-b", "b-c", "*", "?", "[" };
	size_t n = 0;

	t->kind = T_CLASS;
	t->neg = false;
	strcat(pat, "[");
	/* '!' only: glibc's fnmatch() also inverts with '^', the kernel does not */
	if (rnd(2) == 0) {
		strcat(pat, "!");
		t->neg = true;
	}
	if (rnd(6) == 0) {
		strcat(pat, "]");
		t->set[n++] = ']';
	}
	for (uint32_t k = 1 + rnd(2); k; k--) {
		const char *it = items[rnd(ARRAY_SIZE(items))];

		strcat(pat, it);
		if (it[1] == '-') {
			for (char ch = it[0]; ch <= it[2]; ch++)
				t->set[n++] = ch;
		} else {
			t->set[n++] = it[0];
		}
	}
	t->set[n] = 0;
	strcat(pat, "]");
}

static size_t gen_pattern(char *pat, struct tok *toks)
{
	size_t n = 1 + rnd(MAX_TOKS);

	pat[0] = 0;
	for (size_t i = 0; i < n; i++) {
		struct tok *t = &toks[i];
		uint32_t r = rnd(10);
		char s[3] = { 0 };

		if (r < 4) {
			t->kind = T_LIT;
			t->c = ALPHA[rnd(3)];
			s[0] = t->c;
		} else if (r < 6) {
			t->kind = T_STAR;
			s[0] = '*';
		} else if (r < 7) {
			t->kind = T_QUEST;
			s[0] = '?';
		} else if (r < 8) {
			t->kind = T_ESC;
			t->c = "abc*?[\\"[rnd(7)];
			s[0] = '\\';
			s[1] = t->c;
		} else {
			gen_class(pat, t);
			continue;
		}
		strcat(pat, s);
	}
	return n;
}

/* A subject the pattern matches (before the optional mutation). */
static void gen_subject(char *str, const struct tok *toks, size_t n)
{
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		const struct tok *t = &toks[i];

		switch (t->kind) {
		case T_LIT:
		case T_ESC:
			str[len++] = t->c;
			break;
		case T_STAR:
			for (uint32_t k = rnd(4); k; k--)
				str[len++] = SUBJ_ALPHA[rnd(sizeof(SUBJ_ALPHA) - 1)];
			break;
		case T_QUEST:
			str[len++] = SUBJ_ALPHA[rnd(sizeof(SUBJ_ALPHA) - 1)];
			break;
		case T_CLASS:
			if (!t->neg) {
				str[len++] = t->set[rnd(strlen(t->set))];
			} else {
				char ch;

				do
					ch = SUBJ_ALPHA[rnd(sizeof(SUBJ_ALPHA) - 1)];
				while (strchr(t->set, ch));
				str[len++] = ch;
			}
			break;
		}
	}
	str[len] = 0;
	/* mutate: replace, delete or insert one byte */
	if (rnd(2)) {
		size_t at = len ? rnd(len) : 0;
		char ch = SUBJ_ALPHA[rnd(sizeof(SUBJ_ALPHA) - 1)];

		switch (rnd(3)) {
		case 0:
			if (len)
				str[at] = ch;
			break;
		case 1:
			if (len)
				memmove(str + at, str + at + 1, len - at);
			break;
		case 2:
			memmove(str + at + 1, str + at, len - at + 1);
			str[at] = ch;
			break;
		}
	}
}

#define NR_PAIRS	2000

Test(glob_fnmatch, generated_pairs_agree)
{
	unsigned int matches = 0, total = 0;

	cr_assert_not_null(setlocale(LC_ALL, "C"));
	rng_state = 0x5eed0f7ace5eedULL;
	for (unsigned int i = 0; i < NR_PAIRS; i++) {
		/* <= 8 tokens of <= 10 bytes; subjects <= 8 * 4 + 1 bytes */
		char pat[128], str[128];
		struct tok toks[MAX_TOKS];
		size_t n = gen_pattern(pat, toks);
		bool want, got;

		gen_subject(str, toks, n);
		want = fnmatch(pat, str, 0) == 0;
		got = usft_glob_match(pat, str);
		cr_expect_eq(got, want, "pair %u: \"%s\" vs \"%s\": usft %d, fnmatch %d",
			     i, pat, str, got, want);
		matches += want;
		total++;
	}
	/* both outcomes well represented, or the comparison proves little */
	cr_assert_gt(matches, total / 5, "%u/%u matched", matches, total);
	cr_assert_lt(matches, total - total / 5, "%u/%u matched", matches, total);
}

/* Fixed pairs of the generated shape (cheap to read when the above fails). */
Test(glob_fnmatch, fixed_pairs_agree)
{
	static const char *const pats[] = {
		"*", "a*", "*a", "a?c", "[ab]*", "[!a]?", "[!a]*c", "*[]a]",
		"\\**", "*\\?", "a*b*c", "*[a-b]*[!c]", "[*?[]", "??*",
	};
	static const char *const strs[] = {
		"", "a", "b", "c", "ab", "abc", "aXc", "]", "*", "?", "*x", "x?",
		"[", "cab", "bca", "aabbcc", "a*b",
	};

	cr_assert_not_null(setlocale(LC_ALL, "C"));
	for (size_t p = 0; p < ARRAY_SIZE(pats); p++)
		for (size_t s = 0; s < ARRAY_SIZE(strs); s++)
			cr_expect_eq(usft_glob_match(pats[p], strs[s]),
				     fnmatch(pats[p], strs[s], 0) == 0,
				     "\"%s\" vs \"%s\"", pats[p], strs[s]);
}
