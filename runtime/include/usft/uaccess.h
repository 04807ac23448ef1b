/* SPDX-License-Identifier: MIT */
/*
 * usft/uaccess.h - reading memory through a pointer that may be bad, from
 * a callback (the kernel's mm/maccess.c, as bpf_probe_read_user_str()
 * uses it).
 */
#ifndef USFT_UACCESS_H
#define USFT_UACCESS_H

#include <usft/common.h>

USFT_BEGIN_DECLS

/**
 * strncpy_from_user_nofault() - copy the NUL-terminated string at
 * @unsafe_addr into @dst (room for @count bytes), never faulting.
 * Return: the length of the string including the NUL; @count when the
 * string is longer (@count - 1 bytes copied and a NUL at dst[count - 1]);
 * 0 when @count <= 0; -EFAULT when a byte could not be read (what was read
 * before it is in @dst, NUL-terminated: usft's addition).
 * No system call, lock or allocation (docs/design.md says when it falls
 * back to one system call); errno is kept.  Safe in any thread, signal
 * handler and callback.
 */
USFT_API long strncpy_from_user_nofault(char *dst, const void *unsafe_addr, long count);

USFT_END_DECLS

#endif /* USFT_UACCESS_H */
