/* SPDX-License-Identifier: MIT */
/*
 * usft/ftrace_regs.h - struct ftrace_regs (opaque, as in the kernel) and its
 * accessors.  The layout behind it is per architecture (usft/asm/<arch>.h).
 */
#ifndef USFT_FTRACE_REGS_H
#define USFT_FTRACE_REGS_H

/* Opaque: only ever handled through a pointer and the accessors below. */
struct ftrace_regs;

#if defined(__x86_64__)
#include <usft/asm/x86_64.h>
#elif defined(__aarch64__)
#include <usft/asm/arm64.h>
#else
#error "usft supports x86-64 and arm64 only"
#endif

#endif /* USFT_FTRACE_REGS_H */
