/* SPDX-License-Identifier: MIT */
/*
 * usft/asm/arm64.h - the register frame built by ftrace_caller on arm64
 * (DYNAMIC_FTRACE_WITH_ARGS, arch/arm64/include/asm/ftrace.h) and the
 * ftrace_regs accessors over it.
 *
 * The frame is ABI: direct trampolines written in assembly and the JIT rely
 * on these offsets.  The first 112 bytes are the kernel's
 * struct __arch_ftrace_regs (x0-x8, direct_tramp, fp, lr, sp, pc); usft adds
 * q0-q7 because userspace callbacks are ordinary C that may use the SIMD
 * argument registers.
 *
 * Entry convention of everything a site branches to (kernel): x9 = the
 * traced function's return address (the site's first instruction is
 * MOV X9, X30), x30 = the address after the site's BL (the function body).
 */
#ifndef USFT_ASM_ARM64_H
#define USFT_ASM_ARM64_H

#ifndef __ASSEMBLER__
#include <stddef.h>

struct ftrace_regs;

/*
 * Accessors are called from callbacks: never out of line (even at -O0) and
 * never with a patch site of their own (kernel: __always_inline notrace).
 */
#define __usft_regs_inline \
	static inline __attribute__((__always_inline__, __patchable_function_entry__(0, 0)))

/*
 * struct pt_regs - the kernel's arm64 user_pt_regs layout.  ftrace never
 * provides one on arm64 (WITH_ARGS only, no WITH_REGS): ftrace_get_regs()
 * returns NULL.  The type exists so that portable callbacks compile.
 */
struct pt_regs {
	unsigned long regs[31];
	unsigned long sp;
	unsigned long pc;
	unsigned long pstate;
};

struct __arch_ftrace_regs {
	/* x0 - x8 */
	unsigned long regs[9];
	/* set by call_direct_funcs(): ftrace_caller continues there */
	unsigned long direct_tramp;
	unsigned long fp;
	unsigned long lr;	/* the traced function's return address (x9) */
	unsigned long sp;	/* sp at the site (the traced function's entry sp) */
	unsigned long pc;	/* where ftrace_caller returns: site + 4 */
	/* usft: q0-q7 (the floating-point/SIMD argument registers) */
	unsigned long fpr[8][2];
};

#define arch_ftrace_regs(fregs) ((struct __arch_ftrace_regs *)(fregs))

/* Always NULL on arm64: the kernel's arch_ftrace_get_regs() (no full pt_regs). */
__usft_regs_inline struct pt_regs *ftrace_get_regs(struct ftrace_regs *fregs)
{
	(void)fregs;
	return NULL;
}

__usft_regs_inline unsigned long
ftrace_regs_get_instruction_pointer(const struct ftrace_regs *fregs)
{
	return ((const struct __arch_ftrace_regs *)fregs)->pc;
}

__usft_regs_inline void
ftrace_regs_set_instruction_pointer(struct ftrace_regs *fregs, unsigned long pc)
{
	arch_ftrace_regs(fregs)->pc = pc;
}

/* Integer argument n (0-based) of the traced function, AAPCS64 order (x0-x7). */
__usft_regs_inline unsigned long
ftrace_regs_get_argument(struct ftrace_regs *fregs, unsigned int n)
{
	return n < 8 ? arch_ftrace_regs(fregs)->regs[n] : 0;
}

/* Floating-point argument n (0-7) as the raw low 64 bits of q<n> (usft extension). */
__usft_regs_inline unsigned long
usft_ftrace_regs_get_fp_argument(struct ftrace_regs *fregs, unsigned int n)
{
	return n < 8 ? arch_ftrace_regs(fregs)->fpr[n][0] : 0;
}

__usft_regs_inline unsigned long
ftrace_regs_get_stack_pointer(struct ftrace_regs *fregs)
{
	return arch_ftrace_regs(fregs)->sp;
}

__usft_regs_inline unsigned long
ftrace_regs_get_frame_pointer(struct ftrace_regs *fregs)
{
	return arch_ftrace_regs(fregs)->fp;
}

__usft_regs_inline unsigned long
ftrace_regs_get_return_address(struct ftrace_regs *fregs)
{
	return arch_ftrace_regs(fregs)->lr;
}

__usft_regs_inline unsigned long
ftrace_regs_get_return_value(struct ftrace_regs *fregs)
{
	return arch_ftrace_regs(fregs)->regs[0];
}

__usft_regs_inline void
ftrace_regs_set_return_value(struct ftrace_regs *fregs, unsigned long ret)
{
	arch_ftrace_regs(fregs)->regs[0] = ret;
}

/*
 * ftrace_override_function_with_return() - make the traced function return
 * to its caller at once: ftrace_caller "returns" (ret x9) to the caller's
 * return address with x30 = that same address (kernel: pc = lr).
 */
__usft_regs_inline void ftrace_override_function_with_return(struct ftrace_regs *fregs)
{
	arch_ftrace_regs(fregs)->pc = arch_ftrace_regs(fregs)->lr;
}

#endif /* !__ASSEMBLER__ */

/* Frame offsets, usable from assembly. */
#define USFT_FREGS_X0		0
#define USFT_FREGS_X2		16
#define USFT_FREGS_X4		32
#define USFT_FREGS_X6		48
#define USFT_FREGS_X8		64
#define USFT_FREGS_DIRECT_TRAMP	72
#define USFT_FREGS_FP		80
#define USFT_FREGS_LR		88
#define USFT_FREGS_SP		96
#define USFT_FREGS_PC		104
#define USFT_FREGS_Q0		112
#define USFT_FREGS_SIZE		240

#endif /* USFT_ASM_ARM64_H */
