/* SPDX-License-Identifier: MIT */
/*
 * tracers/trace_events_filter.h - the event filter language (kernel
 * kernel/trace/trace_events_filter.c): `field op value` predicates joined
 * by && and ||, grouped with ( ), negated with !; numbers compare with
 * == != < <= > >= & (bit test), strings with == != and ~ (glob).
 *
 * The parser runs on the control thread; a parsed filter is immutable and
 * usft_filter_match() may run in any thread under the hot-path rules (no
 * allocation, lock, syscall; bounded recursion).
 */
#ifndef USFT_TRACE_EVENTS_FILTER_H
#define USFT_TRACE_EVENTS_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <usft/trace_events.h>

/* the kernel's FILT_ERR_* numbers and texts (err_text[] of trace_events_filter.c) */
enum {
	FILT_ERR_NONE, FILT_ERR_INVALID_OP, FILT_ERR_TOO_MANY_OPEN, FILT_ERR_TOO_MANY_CLOSE,
	FILT_ERR_MISSING_QUOTE, FILT_ERR_OPERAND_TOO_LONG, FILT_ERR_EXPECT_STRING,
	FILT_ERR_EXPECT_DIGIT, FILT_ERR_ILLEGAL_FIELD_OP, FILT_ERR_FIELD_NOT_FOUND,
	FILT_ERR_ILLEGAL_INTVAL, FILT_ERR_BAD_SUBSYS_FILTER, FILT_ERR_TOO_MANY_PREDS,
	FILT_ERR_INVALID_FILTER, FILT_ERR_IP_FIELD_ONLY, FILT_ERR_INVALID_VALUE, FILT_ERR_ERRNO,
	FILT_ERR_NO_FILTER, FILT_ERR_NR
};
extern const char *const usft_filter_err_text[FILT_ERR_NR];

/* a field the filter can name: the event's, the common_* ones, CPU */
#define USFT_FILTER_CPU	2	/* filter_type of the CPU/cpu pseudo field */

struct usft_filter;

/* where parsing stopped: @code a FILT_ERR_* (0: none said, as the kernel's), @pos in the text */
struct usft_filter_error {
	int code;
	int pos;
};

/**
 * usft_filter_parse() - compile @str against @fields (offsets in the whole
 * record).  Return: 0 and *@out; -EINVAL with *@pe set (code 0 when the
 * kernel sets none either, e.g. an empty operand); -ENOMEM.
 */
int usft_filter_parse(const char *str, const struct usft_event_field *fields, unsigned int nr,
		      struct usft_filter **out, struct usft_filter_error *pe);
/* whether the record @rec (@len bytes) passes; @cpu for the CPU field */
bool usft_filter_match(const struct usft_filter *f, const void *rec, size_t len, unsigned int cpu);
void usft_filter_free(struct usft_filter *f);
/* the numeric field @fl of @rec: Return: its value signed (by the field's sign), *@u unsigned */
int64_t usft_event_field_value(const struct usft_event_field *fl, const void *rec, uint64_t *u);
/* glob of the kernel's glob_match(): * ? [a-z] [!x] \c; the whole string */
bool usft_filter_glob(const char *pat, const char *s, size_t slen);

#endif /* USFT_TRACE_EVENTS_FILTER_H */
