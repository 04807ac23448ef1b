// SPDX-License-Identifier: MIT
/*
 * libusft_fault.so - LD_PRELOAD fault injection for the runtime: make the
 * Nth malloc/calloc/realloc, mprotect, mmap or membarrier that libusft.so
 * itself makes fail.  Calls from anywhere else are never counted, so the
 * test harness's own allocations cannot consume a fault.
 *   fault_arm(kind, n)   arm: the n-th call (1-based) of that kind fails
 *   fault_fired()        did it fire since the last arm?
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { F_NONE, F_MALLOC, F_MPROTECT, F_MMAP, F_MEMBARRIER };

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static int armed;
static long countdown;
static int fired;
static unsigned long lo, hi;

static int find_usft(struct dl_phdr_info *info, size_t size, void *data)
{
	if (!info->dlpi_name || !strstr(info->dlpi_name, "libusft.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			lo = info->dlpi_addr + ph->p_vaddr;
			hi = lo + ph->p_memsz;
		}
	}
	return 1;
}

static bool from_usft(void *ret)
{
	unsigned long r = (unsigned long)ret;

	if (!hi)
		dl_iterate_phdr(find_usft, NULL);
	return r >= lo && r < hi;
}

static bool should_fail(int kind, void *ret)
{
	if (armed != kind || !from_usft(ret))
		return false;
	if (--countdown)
		return false;
	armed = F_NONE;
	fired = 1;
	return true;
}

void fault_arm(int kind, long n)
{
	fired = 0;
	countdown = n;
	armed = kind;
}

int fault_fired(void)
{
	return fired;
}

void fault_disarm(void)
{
	armed = F_NONE;
}

void *malloc(size_t n)
{
	if (should_fail(F_MALLOC, __builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	if (should_fail(F_MALLOC, __builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	if (should_fail(F_MALLOC, __builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_realloc(p, n);
}

static long nr_mprotect;

/* mprotect() calls libusft.so made so far */
long fault_mprotect_calls(void)
{
	return __atomic_load_n(&nr_mprotect, __ATOMIC_RELAXED);
}

int mprotect(void *addr, size_t len, int prot)
{
	if (from_usft(__builtin_return_address(0)))
		__atomic_add_fetch(&nr_mprotect, 1, __ATOMIC_RELAXED);
	if (should_fail(F_MPROTECT, __builtin_return_address(0))) {
		errno = EACCES;
		return -1;
	}
	return (int)syscall(SYS_mprotect, addr, len, prot);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (should_fail(F_MMAP, __builtin_return_address(0))) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

long syscall(long nr, ...)
{
	va_list ap;
	long a[6];

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_membarrier && should_fail(F_MEMBARRIER, __builtin_return_address(0))) {
		errno = EPERM;
		return -1;
	}
	/* the raw syscall instruction: no recursion into this wrapper */
	{
		register long r10 __asm__("r10") = a[3];
		register long r8 __asm__("r8") = a[4];
		register long r9 __asm__("r9") = a[5];
		long ret;

		__asm__ volatile("syscall"
				 : "=a"(ret)
				 : "a"(nr), "D"(a[0]), "S"(a[1]), "d"(a[2]), "r"(r10), "r"(r8), "r"(r9)
				 : "rcx", "r11", "memory");
		if (ret < 0 && ret > -4096) {
			errno = (int)-ret;
			return -1;
		}
		return ret;
	}
}
