/* SPDX-License-Identifier: MIT */
/*
 * usft/asm/module-arm64.h - CONFIG_ARM64 and the assembler strings kernel
 * samples use on arm64 (their trampolines write "bti c" and "ret x9"
 * themselves).
 */
#ifndef USFT_ASM_MODULE_ARM64_H
#define USFT_ASM_MODULE_ARM64_H

#define CONFIG_ARM64 1
#define CONFIG_64BIT 1
#define CONFIG_DYNAMIC_FTRACE 1
#define CONFIG_DYNAMIC_FTRACE_WITH_ARGS 1
#define CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS 1
#define CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS 1
#define CONFIG_FPROBE 1

#define ASM_ENDBR ""
#define ASM_RET "\tret\n"
#define CALL_DEPTH_ACCOUNT ""

#endif /* USFT_ASM_MODULE_ARM64_H */
