// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the event filter parser (tracers/trace_events_filter.c) on
 * arbitrary text, and each filter it accepts matched against records made
 * of the same bytes.  A rejected filter must say where (a position inside
 * the text) and leave nothing allocated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "trace_events_filter.h"

struct rec {
	unsigned short common_type;
	unsigned char common_flags, common_preempt_count;
	int common_pid;
	char comm[16];
	int pid;
	long long big;
	unsigned char b;
	short s;
};

static const struct usft_event_field fields[] = {
	{ "char", "comm", 8, 16, 16, 1, USFT_FILTER_STRING, NULL },
	{ "int", "pid", 24, 4, 0, 1, USFT_FILTER_NUMBER, NULL },
	{ "long long", "big", 32, 8, 0, 1, USFT_FILTER_NUMBER, NULL },
	{ "unsigned char", "b", 40, 1, 0, 0, USFT_FILTER_NUMBER, NULL },
	{ "short", "s", 42, 2, 0, 1, USFT_FILTER_NUMBER, NULL },
	{ "int", "common_pid", 4, 4, 0, 1, USFT_FILTER_NUMBER, NULL },
	{ "int", "CPU", 0, 4, 0, 1, USFT_FILTER_CPU, NULL },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct usft_filter *f = NULL;
	struct usft_filter_error pe;
	struct rec r;
	int ret;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	ret = usft_filter_parse(s, fields, sizeof(fields) / sizeof(fields[0]), &f, &pe);
	if (ret) {
		if (f || pe.pos < 0 || (size_t)pe.pos > strlen(s) + 1 || pe.code < 0 ||
		    pe.code >= FILT_ERR_NR)
			abort();
	} else {
		memset(&r, 0, sizeof(r));
		memcpy(&r, data, size < sizeof(r) ? size : sizeof(r));
		(void)usft_filter_match(f, &r, sizeof(r), (unsigned int)size);
		(void)usft_filter_match(f, &r, 8, 0);	/* a record too short for its fields */
		usft_filter_free(f);
	}
	free(s);
	return 0;
}
