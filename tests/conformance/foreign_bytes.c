// SPDX-License-Identifier: MIT
/*
 * A site whose bytes someone else changed (another patcher, a debugger):
 * attaching a trampoline to it fails with the errno its record's state
 * implies instead of returning a link that never fires (the kernel's
 * ftrace_check_record() / ftrace_bug() semantics):
 *   bytes changed before usft read them  -> the record is disabled (not a
 *                                           patchable NOP): -EBUSY;
 *   bytes changed after                  -> the compare before the write
 *                                           fails, ftrace_bug() kills the
 *                                           runtime: -ENODEV.
 * Nothing is written over the foreign bytes in either case.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <usft/trampoline.h>

#include "test_common.h"

TRACEE long fb_before(long x)
{
	TRACEE_BODY();
	return x + 1;
}

TRACEE long fb_after(long x)
{
	TRACEE_BODY();
	return x + 2;
}

#if defined(__x86_64__)
static atomic_int fired;

notrace static unsigned long count_prog(const unsigned long *ctx, void *cookie)
{
	atomic_fetch_add(&fired, 1);
	return 0;
}

/* a 5-byte NOP of another encoding than usft's (nopw 0x0(%rax)): still runs */
static const unsigned char foreign[5] = { 0x66, 0x0f, 0x1f, 0x40, 0x00 };

/* the function's entry: gcc's NOPs before init, the site after */
static void overwrite(void *fn)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)fn, lo = a & ~(uintptr_t)(pg - 1);

	cr_assert_eq(mprotect((void *)lo, 2 * pg, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
	memcpy(fn, foreign, sizeof(foreign));
	__builtin___clear_cache((char *)fn, (char *)fn + sizeof(foreign));
	cr_assert_eq(mprotect((void *)lo, 2 * pg, PROT_READ | PROT_EXEC), 0);
}

static void expect_foreign(void *fn)
{
	cr_expect_eq(memcmp(fn, foreign, sizeof(foreign)), 0, "the foreign bytes were overwritten");
}

Test(foreign_bytes, attach_to_a_site_changed_before_init_is_ebusy)
{
	struct usft_tramp_opts o = { .sz = sizeof(o), .nr_args = 1 };
	struct usft_tramp_link *l;

	static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	unsigned char *entry = (unsigned char *)fb_before;

	if (!memcmp(entry, endbr64, sizeof(endbr64)))
		entry += sizeof(endbr64);
	overwrite(entry);
	cr_assert_eq(usft_init(), 0);
	errno = 0;
	l = usft_tramp_attach((void *)fb_before, USFT_TRAMP_FENTRY, count_prog, NULL, &o);
	cr_expect_null(l, "a link on a site that is not usft's");
	cr_expect_eq(errno, EBUSY, "errno %s", strerror(errno));
	cr_expect_eq(fb_before(1), 2);
	cr_expect_eq(atomic_load(&fired), 0);
	expect_foreign(entry);
	if (l)
		usft_tramp_detach(l);
	/* the rest of the runtime is fine */
	l = usft_tramp_attach((void *)fb_after, USFT_TRAMP_FENTRY, count_prog, NULL, &o);
	cr_assert_not_null(l, "attach elsewhere: %s", strerror(errno));
	cr_expect_eq(fb_after(1), 3);
	cr_expect_eq(atomic_load(&fired), 1);
	cr_expect_eq(usft_tramp_detach(l), 0);
}

Test(foreign_bytes, attach_to_a_site_changed_after_init_is_enodev)
{
	struct usft_tramp_opts o = { .sz = sizeof(o), .nr_args = 1 };
	struct usft_stats st = { .sz = sizeof(st) };
	struct usft_tramp_link *l;
	unsigned long site;

	cr_assert_eq(usft_init(), 0);
	site = ftrace_location((unsigned long)fb_after);
	cr_assert_neq(site, 0);
	expect_nop5(fb_after);
	overwrite((void *)site);
	errno = 0;
	l = usft_tramp_attach((void *)fb_after, USFT_TRAMP_FENTRY, count_prog, NULL, &o);
	cr_expect_null(l, "a link on a site whose bytes changed");
	cr_expect_eq(errno, ENODEV, "errno %s", strerror(errno));
	cr_expect_eq(fb_after(1), 3);
	cr_expect_eq(atomic_load(&fired), 0);
	cr_expect_eq(memcmp((void *)site, foreign, sizeof(foreign)), 0,
		     "the foreign bytes were overwritten");
	cr_assert_eq(usft_stat(&st), 0);
	cr_expect_eq(st.disabled, 1, "ftrace_bug() did not fire");
	if (l)
		usft_tramp_detach(l);
}
#else
Test(foreign_bytes, x86_64_only)
{
	cr_skip_test("the foreign encoding is x86-64's");
}
#endif
