/* SPDX-License-Identifier: MIT */
/*
 * samples/tracee/tracee.h - what the e2e tracees share.  They are built
 * with the patch flags and NOT linked with libusft: `usft record` traces
 * them through the preload shim.  TRACEE keeps a function out of line and
 * out of interprocedural tricks so the call trees stay what the source says.
 */
#ifndef USFT_TRACEE_H
#define USFT_TRACEE_H

#if defined(__clang__)
#define TRACEE __attribute__((noinline, used))
#else
#define TRACEE __attribute__((noinline, noipa, used))
#endif
/* a compiler barrier that keeps calls from becoming tail jumps */
#define KEEP() __asm__ __volatile__("" ::: "memory")

#endif
