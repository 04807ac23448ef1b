/* SPDX-License-Identifier: MIT */
/*
 * usft/asm/module-x86_64.h - CONFIG_X86_64 and the assembler strings of the
 * kernel's <asm/ibt.h> and <asm/nospec-branch.h> that direct trampolines in
 * samples use.
 *
 * ASM_RET is "ret; int3", the kernel's with straight-line-speculation
 * mitigation (CONFIG_MITIGATION_SLS), and not a bare "ret": two bytes keep
 * the next trampoline of an asm() block at an even address.  With a bare
 * one-byte ret, a trampoline that follows starts at an odd address, and bit
 * 0 of a direct address is the jmp bit (ftrace_jmp_set()): the site would
 * jump to the byte before it.  register_ftrace_direct() and
 * modify_ftrace_direct() refuse an odd address that is exactly the start of
 * a function symbol with -EINVAL (docs/kernel-samples.md).
 */
#ifndef USFT_ASM_MODULE_X86_64_H
#define USFT_ASM_MODULE_X86_64_H

#define CONFIG_X86 1
#define CONFIG_X86_64 1
#define CONFIG_64BIT 1
#define CONFIG_DYNAMIC_FTRACE 1
#define CONFIG_DYNAMIC_FTRACE_WITH_REGS 1
#define CONFIG_DYNAMIC_FTRACE_WITH_ARGS 1
#define CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS 1
#define CONFIG_HAVE_DYNAMIC_FTRACE_WITH_JMP 1
#define CONFIG_FPROBE 1

/* endbr64 is a NOP without IBT, as the kernel's ASM_ENDBR */
#define ASM_ENDBR "\tendbr64\n"
#define ASM_RET "\tret\n\tint3\n"
/* call depth tracking (retbleed) is not done in userspace */
#define CALL_DEPTH_ACCOUNT ""

#endif /* USFT_ASM_MODULE_X86_64_H */
