// SPDX-License-Identifier: MIT
/*
 * tracers/trace_print.c - __trace_puts(): a line of text into the trace, the
 * kernel's __trace_puts() in kernel/trace/trace.c (the TRACE_PRINT entry
 * that trace_printk() and trace_puts() write into the ring buffer).
 *
 * The line goes where a trace is being kept:
 *  - into the recording (a session of `usft record`, or of a program linked
 *    with -lusft), as an EV_PRINT event in the calling thread's ring, after
 *    the function events it follows (function_graph's kept-back entry is
 *    written first), so a report shows it where it happened: the kernel's
 *    `func: text` line under the function tracer, its `/\* text *\/` comment
 *    under function_graph;
 *  - into the top level of a tracefs (`usft mount`): a print entry there,
 *    when its tracing_on and options/trace_printk are set, as the kernel's
 *    global_trace takes trace_printk() text.
 * libusft's __trace_puts() (core/probe.c) reaches this through the
 * usft_trace_array_ops the shim installs (trace_record.c): the text is
 * already one line without its newline, cut to USFT_TRACE_PUTS_MAX.
 * Return: whether a buffer took it (0 from __trace_puts() otherwise, as the
 * kernel's; libusft-kernel's trace_printk() then prints to stderr).
 *
 * Any thread may call it, in a signal handler too: no lock, no allocation;
 * the ring's nesting orders a handler's line after what it interrupted.
 * What it calls is usft's own, never traced code.
 */
#include <string.h>
#include <usft/ftrace.h>
#include "trace_array.h"
#include "tracer.h"

static bool record_puts(unsigned long ip, const char *str, size_t len)
{
	uint64_t w[2 + EV_PRINT_MAX_WORDS];
	unsigned int nw = (unsigned int)(len / 8 + 1);	/* the NUL, and the padding */

	_Static_assert(USFT_TRACE_PUTS_MAX / 8 + 1 <= EV_PRINT_MAX_WORDS, "a text fits an event");
	struct usft_tbuf *b;
	bool ok;

	if (!__atomic_load_n(&usft_tracing_on, __ATOMIC_RELAXED) || !usft_tracer_active())
		return false;
	b = usft_tbuf_get();
	if (!b)
		return false;
	w[2 + nw - 1] = 0;
	memcpy(&w[2], str, len);
	w[0] = usft_ev_w0(usft_trace_clock() - usft_trace_base, usft_tbuf_cpu(b));
	w[1] = usft_ev_w1(ip, nw, EV_PRINT);
	usft_tbuf_begin(b);
	if (b->nest == 1 && b->pend_w1) {
		/* the entry function_graph kept back is the text's caller: first */
		usft_tbuf_reserve(b, b->pend_w0, b->pend_w1, 0, 0, 2);
		b->pend_w1 = 0;
	}
	ok = usft_tbuf_reserve_n(b, w, 2 + nw);
	usft_tbuf_end(b);
	return ok;
}

bool usft_tracer_puts(struct trace_array *tr, unsigned long ip, const char *str, size_t len)
{
	bool done;

	if (tr)
		return usft_trace_array_puts(tr, ip, str, len);
	/* the top levels: the recording's and the tracefs's */
	done = record_puts(ip, str, len);
	done |= usft_trace_array_puts(NULL, ip, str, len);
	return done;
}
