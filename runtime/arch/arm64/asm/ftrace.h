/* SPDX-License-Identifier: MIT */
/*
 * arch/arm64/asm/ftrace.h - arm64 constants for the core.
 *
 * Site states (rec->ip is the second patched NOP, the BL slot):
 *   compiled         NOP ; NOP                    (-fpatchable-function-entry=2)
 *   disabled         MOV X9, X30 ; NOP            (the MOV is written once, at load)
 *   enabled          MOV X9, X30 ; BL <target>    caller copy or direct trampoline
 * With -fpatchable-function-entry=4,2 (CALL_OPS) the two NOPs before the
 * function hold an 8-byte aligned ops pointer (the per-site literal) and a
 * BTI C may sit between the symbol and the first patched NOP.
 */
#ifndef USFT_ARM64_ASM_FTRACE_H
#define USFT_ARM64_ASM_FTRACE_H

#define MCOUNT_INSN_SIZE		4
/* BL reach (128 MiB, A64_BRANCH_RANGE) less a page: a whole window within it */
#define ARCH_NEAR_REACH			((128UL << 20) - 4096)
/* DYNAMIC_FTRACE_WITH_CALL_OPS: the core maintains FTRACE_FL_CALL_OPS */
#define USFT_HAVE_CALL_OPS		1

/*
 * GCC on arm64 puts DW_AT_low_pc of a function with a site just past the
 * patchable entry NOPs: +8, or +12 after a BTI C (elf/dwarf.c tries these
 * after the symbol itself).  A function with a site is never that short, so
 * the candidates cannot name a neighbour.
 */
#define ARCH_DWARF_LOWPC_SKEW		{ 0, 8, 12 }

/* struct ftrace_ops offsets used by ftrace_caller_ops (checked in ftrace.c) */
#define USFT_OPS_FUNC			0
#define USFT_OPS_DIRECT_CALL		200

#ifndef __ASSEMBLER__
#include <stdbool.h>
#include <usft/ftrace.h>

/*
 * Function graph frames (core/arch.h): at the site the return address is
 * in x9 and ftrace_caller puts it back into x30 from fregs->lr, so that is
 * the slot the hook replaces (kernel: prepare_ftrace_return(ip,
 * &fregs->lr, fregs->fp)).  The identity is the function's entry sp, which
 * it has again when it returns into return_to_handler (AAPCS64); the
 * kernel uses the caller's frame pointer, which functions built without
 * frame pointers do not keep.
 */
#define ARCH_HAS_FGRAPH_FRAME 1

static inline __attribute__((always_inline)) unsigned long *
arch_fgraph_ret_slot(struct ftrace_regs *fregs)
{
	return &arch_ftrace_regs(fregs)->lr;
}

static inline __attribute__((always_inline)) unsigned long
arch_fgraph_frame_id(struct ftrace_regs *fregs)
{
	return ftrace_regs_get_stack_pointer(fregs);
}

static inline __attribute__((always_inline)) unsigned long
arch_fgraph_return_id(struct ftrace_regs *fregs)
{
	return ftrace_regs_get_stack_pointer(fregs);
}

/*
 * While the function runs its return address is in its frame record
 * (stp x29, x30 in the prologue), the highest record below its entry sp:
 * walk the frame-pointer chain from here.  NULL when the chain does not
 * lead there (code without frame pointers).
 */
static inline __attribute__((always_inline)) unsigned long *arch_fgraph_id_slot(unsigned long id)
{
	unsigned long *rec = __builtin_frame_address(0), *best = NULL;

	for (int n = 0; n < 4096 && rec && (unsigned long)rec < id && !((unsigned long)rec & 7);
	     n++) {
		unsigned long *next = (unsigned long *)rec[0];

		best = rec;
		if (next <= rec)
			break;
		rec = next;
	}
	return best ? &best[1] : NULL;
}

/*
 * An unwinder found a return address at @retp (a frame record's lr): it
 * belongs to the innermost frame whose entry sp is above it.
 */
static inline __attribute__((always_inline)) bool
arch_fgraph_owns_slot(unsigned long id, const unsigned long *retp)
{
	return (unsigned long)retp < id;
}

#endif /* !__ASSEMBLER__ */

#endif
