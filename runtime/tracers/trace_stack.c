// SPDX-License-Identifier: MIT
/*
 * tracers/trace_stack.c - stack traces: the stacktrace command's EV_STACK
 * event in the recording (kernel __trace_stack() into the top-level
 * buffer), and the stack tracer (kernel kernel/trace/trace_stack.c).
 */
#include <stdint.h>
#include <usft/stacktrace.h>
#include <usft/usft.h>
#include "trace_stack.h"
#include "tracer.h"

/*
 * Called in a traced thread from the stacktrace probe (hot-path rules): the
 * walk starts at the probed function (stack_trace_save() inside a probe),
 * and the frames go into the thread's ring after the stack's header.
 */
void usft_record_stack(unsigned long ip)
{
	uint64_t w[2 + USFT_STACK_ENTRIES];
	struct usft_tbuf *b;
	unsigned int n;

	if (unlikely(!__atomic_load_n(&usft_tracing_on, __ATOMIC_RELAXED)))
		return;
	b = usft_tbuf_get();
	if (unlikely(!b))
		return;
	n = stack_trace_save((unsigned long *)&w[2], USFT_STACK_ENTRIES, 0);
	w[0] = usft_ev_w0(usft_trace_clock() - usft_trace_base, usft_tbuf_cpu(b));
	w[1] = usft_ev_w1(ip, n, EV_STACK);
	usft_tbuf_begin(b);
	usft_tbuf_reserve_n(b, w, 2 + n);
	usft_tbuf_end(b);
}
