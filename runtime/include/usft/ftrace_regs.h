/* SPDX-License-Identifier: MIT */
/*
 * usft/ftrace_regs.h - struct ftrace_regs (opaque, as in the kernel) and its
 * accessors.  The layout behind it is per architecture (usft/asm/<arch>.h).
 */
#ifndef USFT_FTRACE_REGS_H
#define USFT_FTRACE_REGS_H

/* Opaque: only ever handled through a pointer and the accessors below. */
struct ftrace_regs;

/*
 * Stack slots ftrace_regs_get_kernel_stack_nth() reads at most (4 KiB
 * above the stack pointer); further ones read as 0.  The kernel instead
 * refuses slots outside the task's THREAD_SIZE-aligned stack, which a
 * userspace thread does not have.
 */
#ifndef USFT_STACK_NTH_MAX
#define USFT_STACK_NTH_MAX	512U
#endif

#include <usft/asm/arch.h>

#ifndef __ASSEMBLER__
#include <stdbool.h>

/*
 * ftrace_regs_has_args() - whether @fregs holds the argument registers:
 * always (DYNAMIC_FTRACE_WITH_ARGS on both architectures), as in the kernel.
 */
__usft_regs_inline bool ftrace_regs_has_args(struct ftrace_regs *fregs)
{
	(void)fregs;
	return true;
}

/*
 * ftrace_regs_get_kernel_stack_nth() - word @nth of the stack at the
 * traced function's entry: ((unsigned long *)ftrace_regs_get_stack_pointer())
 * [@nth].  x86-64: slot 0 is the return address, stack arguments start at
 * slot 1 (argument 6 of the SysV ABI).  arm64: stack arguments start at
 * slot 0 (argument 8 of AAPCS64).  0 from slot USFT_STACK_NTH_MAX on.
 * The slots read must exist: a function's stack arguments always do.
 */
__usft_regs_inline unsigned long
ftrace_regs_get_kernel_stack_nth(struct ftrace_regs *fregs, unsigned int nth)
{
	const unsigned long *stackp =
		(const unsigned long *)ftrace_regs_get_stack_pointer(fregs);

	return nth < USFT_STACK_NTH_MAX ? stackp[nth] : 0;
}
#endif

#endif /* USFT_FTRACE_REGS_H */
