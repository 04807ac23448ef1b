/* SPDX-License-Identifier: MIT */
/*
 * usft/asm/arch.h - the register frame and ftrace_regs accessors of the
 * architecture being compiled for (usft/asm/<arch>.h).  The one place a
 * public header chooses by architecture; usft/ftrace_regs.h includes it.
 */
#ifndef USFT_ASM_ARCH_H
#define USFT_ASM_ARCH_H

#if defined(__x86_64__)
#include <usft/asm/x86_64.h>
#elif defined(__aarch64__)
#include <usft/asm/arm64.h>
#else
#error "usft supports x86-64 and arm64 only"
#endif

#endif /* USFT_ASM_ARCH_H */
