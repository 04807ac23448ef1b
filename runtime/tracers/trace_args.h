/* SPDX-License-Identifier: MIT */
/*
 * tracers/trace_args.h - argument and return values in the trace file
 * (`usft record -A/-R`, --funcgraph-retval): the payload of an EV_DATA
 * event, shared by the recorder (trace_args.c) and the reader
 * (trace_argfmt.c).  The payload describes itself, so a reader needs no
 * DWARF:
 *
 *   word 0: number of values [7:0] | value i's code at bits [8+4i, 12+4i)
 *   then per value one word (the register, sign- or zero-extended, a
 *   double's bits, a float's bits in the low half); a USFT_VAL_STR value
 *   adds a word len [31:0] | flags [39:32] (USFT_STR_*) and the bytes in
 *   (len + 7) / 8 words.
 */
#ifndef USFT_TRACE_ARGS_H
#define USFT_TRACE_ARGS_H

#include <stddef.h>
#include <stdint.h>

enum usft_data_kind {
	USFT_DATA_ARGS = 1,		/* after an entry: its arguments */
	USFT_DATA_RETVAL = 2,		/* after a return: its value, -R: `} = 42;` */
	USFT_DATA_RETVAL_RAW = 3,	/* funcgraph-retval: the register, in the kernel's comment form */
};

/* value codes: the first ones are enum usft_arg_kind's (<usft/usft.h>) */
enum usft_val_code {
	USFT_VAL_SINT = 1,
	USFT_VAL_UINT = 2,
	USFT_VAL_PTR = 3,
	USFT_VAL_STR = 4,
	USFT_VAL_FLOAT = 5,
	USFT_VAL_DOUBLE = 6,
	USFT_VAL_CHAR = 7,
	USFT_VAL_BOOL = 8,
	USFT_VAL_UNSUPP = 9,		/* passed in memory: shown as "?" */
	USFT_VAL_HEX = 10,		/* /x */
	USFT_VAL_ERRNO = 11,		/* kernel print_graph_retval(): -4095..-1 decimal, else hex */
};

#define USFT_MAX_VALS		14	/* values in one payload */
#define USFT_STR_MAX		64	/* string bytes recorded */

enum {
	USFT_STR_NULL = 1,		/* the pointer was NULL */
	USFT_STR_BAD = 2,		/* not readable: the pointer is shown */
	USFT_STR_CUT = 4,		/* longer than USFT_STR_MAX (or ran into unreadable memory) */
};

static inline unsigned int usft_val_code(uint64_t hdr, unsigned int i)
{
	return (unsigned int)((hdr >> (8 + 4 * i)) & 0xf);
}

/*
 * usft_format_values() - the payload @w (@n words) as text: "1, 0x7ffd1234,
 * \"abc\"" into @buf (always NUL-terminated).  Return: the words it used,
 * 0 when the payload is malformed (then @buf holds what could be read).
 */
size_t usft_format_values(const uint64_t *w, size_t n, char *buf, size_t len);

#endif /* USFT_TRACE_ARGS_H */
