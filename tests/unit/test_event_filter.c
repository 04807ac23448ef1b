// SPDX-License-Identifier: MIT
/*
 * The event filter language (tracers/trace_events_filter.c): what each
 * filter matches, and for each bad one the kernel's message and caret
 * position (kernel/trace/trace_events_filter.c's parse_error() calls).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace_events_filter.h"

/* signal:signal_generate, as the tracefs lays it out: an 8-byte header, then the fields */
struct rec {
	unsigned short common_type;
	unsigned char common_flags, common_preempt_count;
	int common_pid;
	int sig, err, code;
	char comm[16];
	int pid;
	long long big;
	unsigned int flags;
};

#define F(t, n, s, sg) { t, #n, offsetof(struct rec, n), sizeof(((struct rec *)0)->n), 0, sg, \
			 USFT_FILTER_NUMBER, NULL }
static const struct usft_event_field fields[] = {
	F("int", sig, 4, 1),
	{ "int", "errno", offsetof(struct rec, err), 4, 0, 1, USFT_FILTER_NUMBER, NULL },
	F("int", code, 4, 1),
	{ "char", "comm", offsetof(struct rec, comm), 16, 16, 1, USFT_FILTER_STRING, NULL },
	F("int", pid, 4, 1),
	F("long long", big, 8, 1),
	F("unsigned int", flags, 4, 0),
	F("int", common_pid, 4, 1),
	{ "int", "cpu", 0, 4, 0, 1, USFT_FILTER_CPU, NULL },
};
#define NF (sizeof(fields) / sizeof(fields[0]))

static struct rec r(int sig, const char *comm, int pid)
{
	struct rec x = { .sig = sig, .pid = pid, .big = -5, .flags = 0x82 };

	memcpy(x.comm, comm, strnlen(comm, sizeof(x.comm)));
	return x;
}

static bool matches(const char *flt, struct rec x)
{
	struct usft_filter *f = NULL;
	struct usft_filter_error pe;
	int ret = usft_filter_parse(flt, fields, NF, &f, &pe);
	bool m;

	cr_assert_eq(ret, 0, "'%s': %d (error %d at %d)", flt, ret, pe.code, pe.pos);
	m = usft_filter_match(f, &x, sizeof(x), 1);
	usft_filter_free(f);
	return m;
}

static void bad(const char *flt, int code, int pos)
{
	struct usft_filter *f = NULL;
	struct usft_filter_error pe;

	cr_assert_eq(usft_filter_parse(flt, fields, NF, &f, &pe), -EINVAL, "'%s' accepted", flt);
	cr_assert_null(f);
	cr_expect_eq(pe.code, code, "'%s': error %d (%s), want %d (%s)", flt, pe.code,
		     usft_filter_err_text[pe.code], code, usft_filter_err_text[code]);
	cr_expect_eq(pe.pos, pos, "'%s': position %d, want %d", flt, pe.pos, pos);
}

Test(event_filter, numbers)
{
	cr_assert(matches("sig == 17", r(17, "init", 1)));
	cr_assert_not(matches("sig != 17", r(17, "init", 1)));
	cr_assert(matches("sig >= 10 && sig < 18", r(17, "init", 1)));
	cr_assert_not(matches("sig > 17", r(17, "init", 1)));
	cr_assert(matches("sig <= 17", r(17, "init", 1)));
	cr_assert(matches("pid == 0x10", r(1, "x", 16)));
	cr_assert(matches("big < 0", r(1, "x", 1)), "signed 64-bit");
	cr_assert(matches("big == -5", r(1, "x", 1)));
	cr_assert(matches("flags & 0x80", r(1, "x", 1)), "bit test");
	cr_assert_not(matches("flags & 1", r(1, "x", 1)));
	cr_assert(matches("cpu == 1", r(1, "x", 1)), "the CPU pseudo field");
	cr_assert(matches("errno == 0", r(1, "x", 1)));
}

Test(event_filter, strings)
{
	cr_assert(matches("comm == \"init\"", r(1, "init", 1)));
	cr_assert(matches("comm == 'init'", r(1, "init", 1)));
	cr_assert_not(matches("comm == \"ini\"", r(1, "init", 1)), "== is not a prefix match");
	cr_assert(matches("comm != \"bash\"", r(1, "init", 1)));
	cr_assert(matches("comm ~ \"in*\"", r(1, "init", 1)));
	cr_assert(matches("comm ~ \"*it\"", r(1, "init", 1)));
	cr_assert(matches("comm ~ \"*n*\"", r(1, "init", 1)));
	cr_assert(matches("comm ~ \"i?i[st]\"", r(1, "init", 1)));
	cr_assert_not(matches("comm ~ \"i?i[!t]\"", r(1, "init", 1)));
	cr_assert(matches("comm ~ \"!bash*\"", r(1, "init", 1)), "a leading ! negates the glob");
	cr_assert(matches("comm == \"abcdefghijklmnop\"", r(1, "abcdefghijklmnop", 1)),
		  "a full 16-byte comm has no NUL");
}

Test(event_filter, logic)
{
	struct rec x = r(17, "init", 1);

	cr_assert(matches("sig == 1 || sig == 17", x));
	cr_assert(matches("sig == 1 || sig == 17 && pid == 1", x));
	cr_assert_not(matches("(sig == 1 || sig == 17) && pid == 2", x));
	cr_assert(matches("sig == 17 || sig == 1 && pid == 2", x), "&& binds tighter than ||");
	cr_assert(matches("!sig == 1", x));
	cr_assert_not(matches("!(sig == 17 && pid == 1)", x));
	cr_assert(matches("!(sig == 17 && pid == 2)", x));
	cr_assert(matches("!!(sig == 17)", x));
	cr_assert(matches("((sig >= 10 && sig < 18) || errno == 17) && comm != \"bash\"", x));
}

/* the case tracing-error-log.tc checks, and each kernel message with its position */
Test(event_filter, errors_at_the_kernels_positions)
{
	bad("((sig >= 10 && sig < 15) || dsig == 17) && comm != bash", FILT_ERR_FIELD_NOT_FOUND, 33);
	bad("sig ^ 1", FILT_ERR_INVALID_OP, 5);
	bad("comm == 'abc", FILT_ERR_MISSING_QUOTE, 8);
	bad("(sig == 1", FILT_ERR_TOO_MANY_OPEN, 0);
	bad("sig == 1 && (pid == 1 || (sig == 2)", FILT_ERR_TOO_MANY_OPEN, 12);
	bad("sig == 1)", FILT_ERR_TOO_MANY_CLOSE, 8);
	bad("comm == 1", FILT_ERR_EXPECT_STRING, 9);
	bad("sig == 'a'", FILT_ERR_EXPECT_DIGIT, 8);
	bad("comm < 'a'", FILT_ERR_ILLEGAL_FIELD_OP, 8);
	bad("sig ~ 1", FILT_ERR_ILLEGAL_FIELD_OP, 7);
	bad("sig == 12z", FILT_ERR_ILLEGAL_INTVAL, 8);
	bad("comm != bash", FILT_ERR_INVALID_VALUE, 9);
	bad("sig == 1 sig == 2", FILT_ERR_TOO_MANY_PREDS, 9);
	bad("sig == 1 & pid == 2", FILT_ERR_TOO_MANY_PREDS, 9);
}

Test(event_filter, empty_and_operand_only)
{
	struct usft_filter *f = NULL;
	struct usft_filter_error pe;

	/* the kernel gives no parse error for these: only -EINVAL ("Error" in error_log) */
	cr_assert_eq(usft_filter_parse("", fields, NF, &f, &pe), -EINVAL);
	cr_assert_eq(pe.code, 0);
	cr_assert_eq(usft_filter_parse("sig == 1 && ", fields, NF, &f, &pe), -EINVAL);
	cr_assert_eq(usft_filter_parse("sig == 1 && ()", fields, NF, &f, &pe), -EINVAL);
	cr_assert_eq(usft_filter_parse("!= 1", fields, NF, &f, &pe), -EINVAL);
	cr_assert_null(f);
}

Test(event_filter, long_operand)
{
	char buf[400];

	snprintf(buf, sizeof(buf), "comm == \"%0300d\"", 0);
	bad(buf, FILT_ERR_OPERAND_TOO_LONG, 310);
	bad("sig == 0x111111111111111111111111", FILT_ERR_OPERAND_TOO_LONG, 34);
}

/* a filter of thousands of terms: parsing and matching stay off deep recursion */
Test(event_filter, long_chains)
{
	size_t n = 20000, len = n * 16 + 1;
	char *s = malloc(len), *p = s;
	struct usft_filter *f = NULL;
	struct usft_filter_error pe;
	struct rec x = r(3, "x", 1);

	cr_assert_not_null(s);
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%ssig != %zu", i ? " && " : "", i + 10);
	cr_assert_eq(usft_filter_parse(s, fields, NF, &f, &pe), 0);
	cr_assert(usft_filter_match(f, &x, sizeof(x), 0));
	usft_filter_free(f);
	memset(s, '!', len - 16);
	strcpy(s + len - 16, "sig == 3");
	cr_assert_eq(usft_filter_parse(s, fields, NF, &f, &pe), 0);
	usft_filter_free(f);
	free(s);
}

Test(event_filter, nesting_bound)
{
	char s[300];
	int n = 0;

	for (int i = 0; i < 100; i++)
		s[n++] = '(';
	n += sprintf(s + n, "sig == 1");
	for (int i = 0; i < 100; i++)
		s[n++] = ')';
	s[n] = 0;
	bad(s, FILT_ERR_TOO_MANY_OPEN, 64);
}
