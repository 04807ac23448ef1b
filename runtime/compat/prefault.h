/* SPDX-License-Identifier: MIT */
/*
 * compat/prefault.h - memory about to be written whole gets its page faults
 * in one system call (MADV_POPULATE_WRITE, Linux 5.14): a fresh page, the
 * copy of a file page, or the write bit an mprotect() took away, each
 * made in the kernel's own loop instead of one exception a page.  In a
 * VM an exception is an exit as well: a fresh page the kernel populated
 * costs half what one a store faults in does (measured in
 * docs/benchmarks.md, bench/scale.sh).
 */
#ifndef USFT_COMPAT_PREFAULT_H
#define USFT_COMPAT_PREFAULT_H

#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/*
 * The whole pages inside [@p, @p + @len), which the caller owns and is
 * about to write.  Best effort: an older kernel's refusal (EINVAL) or a
 * partial failure changes nothing but the cost; errno is kept.
 */
static inline void usft_prefault_write(void *p, size_t len)
{
	unsigned long page = (unsigned long)sysconf(_SC_PAGESIZE);
	unsigned long lo = ((unsigned long)p + page - 1) & ~(page - 1);
	unsigned long hi = ((unsigned long)p + len) & ~(page - 1);
	int saved = errno;

	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
	errno = saved;
}

#endif /* USFT_COMPAT_PREFAULT_H */
