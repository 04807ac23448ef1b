/* SPDX-License-Identifier: MIT */
/*
 * usft/asm/x86_64.h - the register frame built by ftrace_caller /
 * ftrace_regs_caller on x86-64 and the ftrace_regs accessors over it.
 *
 * The frame is ABI: trampolines written in assembly (direct samples) and the
 * JIT rely on these offsets.  struct pt_regs keeps the kernel's field order
 * (arch/x86/include/asm/ptrace.h) so kernel code reading regs ports as is.
 */
#ifndef USFT_ASM_X86_64_H
#define USFT_ASM_X86_64_H

#ifndef __ASSEMBLER__
#include <stddef.h>

struct ftrace_regs;

/* Stack slots the accessors read at most; usft/ftrace_regs.h says why. */
#ifndef USFT_STACK_NTH_MAX
#define USFT_STACK_NTH_MAX	512U
#endif

/*
 * Accessors are called from callbacks: never out of line (even at -O0) and
 * never with a patch site of their own (kernel: __always_inline notrace).
 */
#define __usft_regs_inline \
	static inline __attribute__((__always_inline__, __patchable_function_entry__(0, 0)))

struct pt_regs {
	unsigned long r15;
	unsigned long r14;
	unsigned long r13;
	unsigned long r12;
	unsigned long bp;
	unsigned long bx;
	unsigned long r11;
	unsigned long r10;
	unsigned long r9;
	unsigned long r8;
	unsigned long ax;
	unsigned long cx;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
	unsigned long orig_ax;
	unsigned long ip;
	unsigned long cs;
	unsigned long flags;
	unsigned long sp;
	unsigned long ss;
};

/*
 * What ftrace_caller saves.  Unlike the kernel, userspace callbacks are
 * ordinary C and may use SSE registers, so the caller also saves xmm0-7 (the
 * floating-point argument registers) and the callback may read them.
 */
struct __arch_ftrace_regs {
	struct pt_regs regs;
	unsigned long __pad;
	unsigned long xmm[8][2];
};

#define arch_ftrace_regs(fregs) ((struct __arch_ftrace_regs *)(fregs))

/*
 * ftrace_get_regs() - full pt_regs, or NULL when the callback was reached
 * through ftrace_caller (which leaves regs.cs zero) rather than
 * ftrace_regs_caller (SAVE_REGS ops).
 */
__usft_regs_inline struct pt_regs *ftrace_get_regs(struct ftrace_regs *fregs)
{
	struct __arch_ftrace_regs *a = arch_ftrace_regs(fregs);

	if (!fregs || !a->regs.cs)
		return NULL;
	return &a->regs;
}

__usft_regs_inline unsigned long
ftrace_regs_get_instruction_pointer(const struct ftrace_regs *fregs)
{
	return ((const struct __arch_ftrace_regs *)fregs)->regs.ip;
}

__usft_regs_inline void
ftrace_regs_set_instruction_pointer(struct ftrace_regs *fregs, unsigned long ip)
{
	arch_ftrace_regs(fregs)->regs.ip = ip;
}

/*
 * Integer argument n (0-based) of the traced function, SysV order; from
 * n = 6 on the stack argument slots above the return address, as the
 * kernel's regs_get_kernel_argument() (ftrace_regs_get_kernel_stack_nth(
 * fregs, n - 5)).  The function must really take that many arguments.
 */
__usft_regs_inline unsigned long
ftrace_regs_get_argument(struct ftrace_regs *fregs, unsigned int n)
{
	struct pt_regs *r = &arch_ftrace_regs(fregs)->regs;

	switch (n) {
	case 0: return r->di;
	case 1: return r->si;
	case 2: return r->dx;
	case 3: return r->cx;
	case 4: return r->r8;
	case 5: return r->r9;
	default:
		if (n - 5 >= USFT_STACK_NTH_MAX)
			return 0;
		return ((const unsigned long *)r->sp)[n - 5];
	}
}

/*
 * Floating-point argument n (0-7) as raw low 64 bits of xmm<n> (usft
 * extension).  Unspecified for a function that takes no floating-point or
 * vector argument: its per-ops trampoline may not save xmm0-7 (option
 * novec_tramp, docs/design.md).
 */
__usft_regs_inline unsigned long
usft_ftrace_regs_get_fp_argument(struct ftrace_regs *fregs, unsigned int n)
{
	return n < 8 ? arch_ftrace_regs(fregs)->xmm[n][0] : 0;
}

__usft_regs_inline unsigned long
ftrace_regs_get_stack_pointer(struct ftrace_regs *fregs)
{
	return arch_ftrace_regs(fregs)->regs.sp;
}

__usft_regs_inline unsigned long
ftrace_regs_get_frame_pointer(struct ftrace_regs *fregs)
{
	return arch_ftrace_regs(fregs)->regs.bp;
}

__usft_regs_inline unsigned long
ftrace_regs_get_return_value(struct ftrace_regs *fregs)
{
	return arch_ftrace_regs(fregs)->regs.ax;
}

__usft_regs_inline void
ftrace_regs_set_return_value(struct ftrace_regs *fregs, unsigned long ret)
{
	arch_ftrace_regs(fregs)->regs.ax = ret;
}

/*
 * ftrace_override_function_with_return() - make the traced function return
 * to its caller at once: the caller "returns" into a lone `ret`, which pops
 * the traced function's own return address.
 */
/* a lone `ret` in libusft (kernel: just_return_func / the return thunk) */
extern void usft_just_return(void);

__usft_regs_inline void ftrace_override_function_with_return(struct ftrace_regs *fregs)
{
	arch_ftrace_regs(fregs)->regs.ip = (unsigned long)usft_just_return;
}

#endif /* !__ASSEMBLER__ */

/* Frame offsets, usable from assembly. */
#define USFT_PTREGS_R15		0
#define USFT_PTREGS_R14		8
#define USFT_PTREGS_R13		16
#define USFT_PTREGS_R12		24
#define USFT_PTREGS_BP		32
#define USFT_PTREGS_BX		40
#define USFT_PTREGS_R11		48
#define USFT_PTREGS_R10		56
#define USFT_PTREGS_R9		64
#define USFT_PTREGS_R8		72
#define USFT_PTREGS_AX		80
#define USFT_PTREGS_CX		88
#define USFT_PTREGS_DX		96
#define USFT_PTREGS_SI		104
#define USFT_PTREGS_DI		112
#define USFT_PTREGS_ORIG_AX	120
#define USFT_PTREGS_IP		128
#define USFT_PTREGS_CS		136
#define USFT_PTREGS_FLAGS	144
#define USFT_PTREGS_SP		152
#define USFT_PTREGS_SS		160
#define USFT_FREGS_XMM		176
#define USFT_FREGS_SIZE		304

#endif /* USFT_ASM_X86_64_H */
