/* SPDX-License-Identifier: MIT */
/*
 * usft/asm/module.h - the architecture part of usft/module.h: the kernel's
 * CONFIG_<ARCH> symbol and the assembler macros a sample's trampoline uses
 * (ASM_ENDBR, ASM_RET, CALL_DEPTH_ACCOUNT).  Inside the arch boundary, like
 * usft/asm/arch.h.
 */
#ifndef USFT_ASM_MODULE_H
#define USFT_ASM_MODULE_H

#if defined(__x86_64__)
#include <usft/asm/module-x86_64.h>
#elif defined(__aarch64__)
#include <usft/asm/module-arm64.h>
#else
#error "usft supports x86-64 and arm64 only"
#endif

#endif /* USFT_ASM_MODULE_H */
