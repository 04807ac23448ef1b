// SPDX-License-Identifier: MIT
/*
 * usft with an empty callback on work(), through the ops' own trampoline
 * (x86-64; CALL_OPS on arm64): the peers table's usft_ops_tramp, the same
 * job as xray_noop's no-op handler.  Built without the patch flags.
 */
#include <stdio.h>
#include <stdlib.h>
#include <usft/ftrace.h>

static void noop(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
		 struct ftrace_regs *fregs)
{
}

static struct ftrace_ops ops = { .func = noop };

void peer_setup(void)
{
	if (ftrace_set_filter(&ops, (unsigned char *)"work", 4, 1) ||
	    register_ftrace_function(&ops)) {
		fprintf(stderr, "usft_ops_tramp: cannot trace work()\n");
		exit(1);
	}
}
