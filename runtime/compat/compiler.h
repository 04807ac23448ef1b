/* SPDX-License-Identifier: MIT */
/*
 * compat/compiler.h - the kernel idioms the core is written in, on top of
 * the compiler's __atomic builtins.
 */
#ifndef USFT_COMPAT_COMPILER_H
#define USFT_COMPAT_COMPILER_H

#include <stddef.h>

#define barrier()		__asm__ __volatile__("" ::: "memory")
#define READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define smp_load_acquire(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define smp_store_release(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define smp_mb()		__atomic_thread_fence(__ATOMIC_SEQ_CST)
#define smp_wmb()		__atomic_thread_fence(__ATOMIC_RELEASE)
#define smp_rmb()		__atomic_thread_fence(__ATOMIC_ACQUIRE)

#define likely(x)		__builtin_expect(!!(x), 1)
#define unlikely(x)		__builtin_expect(!!(x), 0)

#define BIT(n)			(1UL << (n))
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define offsetofend(type, member) \
	(offsetof(type, member) + sizeof(((type *)0)->member))

#ifndef __always_inline
#define __always_inline		inline __attribute__((always_inline))
#endif
#define __maybe_unused		__attribute__((unused))
#define __hidden		__attribute__((visibility("hidden")))
/*
 * __no_tsan - not instrumented by ThreadSanitizer: code that TSan's own
 * runtime reaches (its REAL(sigaction) is usft's interposer, called before
 * TSan is initialised), that runs in a signal handler TSan does not know
 * (claimed signals are installed past TSan's interceptor), or that writes
 * program text (TSan's shadow is not meant for code bytes).
 */
#define __no_tsan		__attribute__((no_sanitize("thread")))

static inline int fls_long(unsigned long x)
{
	return x ? 64 - __builtin_clzl(x) : 0;
}

#endif /* USFT_COMPAT_COMPILER_H */
