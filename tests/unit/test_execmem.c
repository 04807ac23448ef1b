// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_execmem.c - runtime/mem/execmem: a trampoline window's
 * pages are filled with the arch's trapping instructions as allocations
 * reach them, every byte of a reached page, and the pages no allocation
 * reached are neither filled nor resident (a window is 1 MiB; a program's
 * trampolines use a few pages of it); and compat/prefault.h's helper.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "compat/prefault.h"
#include "mem/execmem.h"

#define WINDOW	(1UL << 20)

/*
 * mprotect() for this program and the runtime linked into it: the real one,
 * except that while @refuse_exec is set a request for PROT_READ|PROT_EXEC
 * fails (a policy that lets a page become writable, then not executable).
 */
static bool refuse_exec;

int mprotect(void *addr, size_t len, int prot)
{
	if (refuse_exec && prot == (PROT_READ | PROT_EXEC)) {
		errno = EACCES;
		return -1;
	}
	return (int)syscall(SYS_mprotect, addr, len, prot);
}

/* resident pages of [@addr, @addr + @len) */
static size_t resident(unsigned long addr, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = len / page, r = 0;
	unsigned char *v = malloc(n);

	cr_assert_not_null(v);
	cr_assert_eq(mincore((void *)addr, len, v), 0);
	for (size_t i = 0; i < n; i++)
		r += v[i] & 1;
	free(v);
	return r;
}

/* every byte of [@p, @p + @len) is what the arch's fill writes */
static bool trapping(const unsigned char *p, size_t len)
{
	unsigned char *want = malloc(len);
	bool ok;

	cr_assert_not_null(want);
	memset(want, 0, len);
	execmem_fill_trapping_insns(want, len);
	ok = !memcmp(p, want, len);
	free(want);
	return ok;
}

Test(usft_execmem, pages_are_filled_as_allocations_reach_them)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct usft_window *w = usft_window_far();
	unsigned long a, b, base;

	cr_assert_not_null(w);
	a = usft_execmem_alloc(w, 256);
	cr_assert_neq(a, 0);
	base = a & ~(page - 1);
	cr_assert(usft_window_contains(w, base));
	/* the first allocation's page: filled whole, and only it is there */
	cr_assert(trapping((const unsigned char *)base, page), "the first page is not filled");
	cr_assert_eq(resident(base, WINDOW), 1, "%zu pages of the window resident, not 1",
		     resident(base, WINDOW));
	/* an allocation across a page boundary fills the page it ends in */
	b = usft_execmem_alloc(w, page);
	cr_assert_eq(b, a + 256);
	cr_assert(trapping((const unsigned char *)base, 2 * page), "the second page is not filled");
	cr_assert_eq(resident(base, WINDOW), 2);
	/* the window is still executable, never writable */
	{
		FILE *f = fopen("/proc/self/maps", "r");
		char line[512];
		bool seen = false;

		cr_assert_not_null(f);
		while (fgets(line, sizeof(line), f)) {
			unsigned long lo, hi;
			char perm[5];

			if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perm) != 3 || base < lo || base >= hi)
				continue;
			seen = true;
			cr_assert_str_eq(perm, "r-xp", "window mapped %s", perm);
		}
		fclose(f);
		cr_assert(seen);
	}
}

/* does the kernel below populate on MADV_POPULATE_WRITE?  (qemu-user takes it as a hint) */
static bool kernel_populates(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char v = 0;
	bool yes;

	cr_assert_neq(p, MAP_FAILED);
	yes = !madvise(p, page, MADV_POPULATE_WRITE) && !mincore(p, page, &v) && (v & 1);
	munmap(p, page);
	return yes;
}

/*
 * usft_prefault_write() (compat/prefault.h): the whole pages inside the
 * range are there after it, written by nobody, the partial pages at its
 * ends are left alone, and errno is what it was.  Where the kernel below
 * does not populate (qemu-user), only errno and the bytes are checked.
 */
Test(usft_prefault, whole_pages_inside_the_range_only)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *m = mmap(NULL, 8 * page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool populates = kernel_populates();
	unsigned char v[8];

	cr_assert_neq(m, MAP_FAILED);
	cr_assert_eq(mincore(m, 8 * page, v), 0);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(v[i] & 1, 0, "page %d resident before", i);
	errno = 1234;
	usft_prefault_write(m + page / 2, 5 * page);	/* pages 1..4 whole, 0 and 5 in part */
	cr_assert_eq(errno, 1234);
	cr_assert_eq(mincore(m, 8 * page, v), 0);
	if (!populates)
		cr_log_info("MADV_POPULATE_WRITE populates nothing here (qemu-user?): residency not checked\n");
	for (int i = 0; populates && i < 8; i++)
		cr_assert_eq(v[i] & 1, i >= 1 && i <= 4, "page %d: resident %d", i, v[i] & 1);
	for (size_t i = 0; i < 8 * page; i++)
		cr_assert_eq(m[i], 0);
	munmap(m, 8 * page);
}

/*
 * A window's fresh page made writable for its fill and refused its way back
 * to executable: nothing is placed there (a trampoline in it could not
 * run), now or later, and the window hands out nothing fresh any more.
 */
Test(usft_execmem, a_page_that_cannot_become_executable_again_is_not_handed_out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct usft_window *w = usft_window_far();
	unsigned long a;

	cr_assert_not_null(w);
	a = usft_execmem_alloc(w, 256);
	cr_assert_neq(a, 0);
	refuse_exec = true;
	cr_assert_eq(usft_execmem_alloc(w, page), 0, "a chunk in a page left not executable");
	refuse_exec = false;
	cr_assert_eq(usft_execmem_alloc(w, 256), 0, "the window hands out fresh memory again");
	/* what it gave before is still there, filled */
	cr_assert(trapping((const unsigned char *)(a & ~(page - 1)) + 256, page - 256));
}
