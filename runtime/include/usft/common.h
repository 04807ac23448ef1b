/* SPDX-License-Identifier: MIT */
/*
 * usft/common.h - visibility and attribute helpers shared by every public header.
 */
#ifndef USFT_COMMON_H
#define USFT_COMMON_H

#if defined(USFT_BUILDING_LIBRARY)
#define USFT_API __attribute__((visibility("default")))
#else
#define USFT_API
#endif

/*
 * notrace - keep a function out of the site table even when its translation
 * unit is built with -fpatchable-function-entry (kernel: notrace).
 */
#ifndef notrace
#define notrace __attribute__((patchable_function_entry(0, 0)))
#endif

#ifdef __cplusplus
#define USFT_BEGIN_DECLS extern "C" {
#define USFT_END_DECLS }
#else
#define USFT_BEGIN_DECLS
#define USFT_END_DECLS
#endif

#endif /* USFT_COMMON_H */
