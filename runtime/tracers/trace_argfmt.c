// SPDX-License-Identifier: MIT
/*
 * tracers/trace_argfmt.c - argument and return values of a trace file as
 * text (`usft report`): the EV_DATA payload of trace_args.h, which comes
 * from a file a user hands over, so every length is checked.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "trace_args.h"

struct sbuf {
	char *p;
	size_t len, at;
};

static void put(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->at + 1 >= b->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->at, b->len - b->at, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->at = b->at + (size_t)n < b->len ? b->at + (size_t)n : b->len - 1;
}

/* a C string literal: printable ASCII as is, the rest escaped */
static void put_str(struct sbuf *b, const unsigned char *s, size_t n, unsigned int flags)
{
	put(b, "\"");
	for (size_t i = 0; i < n && s[i]; i++) {
		unsigned char c = s[i];

		switch (c) {
		case '\n': put(b, "\\n"); break;
		case '\t': put(b, "\\t"); break;
		case '\r': put(b, "\\r"); break;
		case '"': put(b, "\\\""); break;
		case '\\': put(b, "\\\\"); break;
		default:
			if (c < 0x20 || c >= 0x7f)
				put(b, "\\x%02x", c);
			else
				put(b, "%c", c);
		}
	}
	put(b, "\"%s", flags & USFT_STR_CUT ? "..." : "");
}

/* 0x2a; 0 as "0x0" (printf's %#x gives "0") */
static void put_hex(struct sbuf *b, uint64_t v)
{
	put(b, "0x%" PRIx64, v);
}

static void put_char(struct sbuf *b, unsigned char c)
{
	if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\')
		put(b, "'%c'", c);
	else
		put(b, "'\\x%02x'", c);
}

size_t usft_format_values(const uint64_t *w, size_t n, char *buf, size_t len)
{
	struct sbuf b = { buf, len, 0 };
	unsigned int nv;
	size_t at = 1;

	if (!len)
		return 0;
	buf[0] = 0;
	if (!n)
		return 0;
	nv = (unsigned int)(w[0] & 0xff);
	if (nv > USFT_MAX_VALS)
		return 0;
	for (unsigned int i = 0; i < nv; i++) {
		unsigned int code = usft_val_code(w[0], i);
		uint64_t v;
		double d;
		float f;

		if (at >= n)
			return 0;
		v = w[at++];
		if (i)
			put(&b, ", ");
		switch (code) {
		case USFT_VAL_SINT:
			put(&b, "%" PRId64, (int64_t)v);
			break;
		case USFT_VAL_UINT:
			put(&b, "%" PRIu64, v);
			break;
		case USFT_VAL_PTR:
		case USFT_VAL_HEX:
			put_hex(&b, v);
			break;
		case USFT_VAL_ERRNO: {
			/* an int's -EINVAL arrives as 0xffffffea: sign-extended first */
			int64_t err = (v & (1ULL << 31)) && !(v >> 32) ? (int64_t)(int32_t)v :
									 (int64_t)v;

			if (err < 0 && err >= -4095)
				put(&b, "%" PRId64, err);
			else
				put_hex(&b, v);
			break;
		}
		case USFT_VAL_FLOAT: {
			uint32_t lo = (uint32_t)v;

			memcpy(&f, &lo, sizeof(f));
			put(&b, "%g", (double)f);
			break;
		}
		case USFT_VAL_DOUBLE:
			memcpy(&d, &v, sizeof(d));
			put(&b, "%g", d);
			break;
		case USFT_VAL_CHAR:
			put_char(&b, (unsigned char)v);
			break;
		case USFT_VAL_BOOL:
			put(&b, "%s", v ? "true" : "false");
			break;
		case USFT_VAL_STR: {
			uint64_t meta, slen, words;
			unsigned int flags;

			if (at >= n)
				return 0;
			meta = w[at++];
			slen = meta & 0xffffffffULL;
			flags = (unsigned int)((meta >> 32) & 0xff);
			words = (slen + 7) / 8;
			if (slen > USFT_STR_MAX || words > n - at)
				return 0;
			if (flags & USFT_STR_NULL)
				put(&b, "NULL");
			else if (flags & USFT_STR_BAD)
				put_hex(&b, v);
			else
				put_str(&b, (const unsigned char *)&w[at], (size_t)slen, flags);
			at += (size_t)words;
			break;
		}
		default:
			put(&b, "?");
		}
	}
	return at;
}
