/* SPDX-License-Identifier: MIT */
/*
 * tests/trampoline/tramp_common.h - helpers for the fentry / fexit /
 * fmod_ret suites (usft/trampoline.h; kernel/bpf/trampoline.c).
 *
 * Site encodings on x86-64 (kernel: bpf_trampoline_update(),
 * arch/x86/net/bpf_jit_comp.c):
 *   nothing attached                      nop5  0f 1f 44 00 00
 *   fentry-only image (RESTORE_REGS)      e8 rel32 (call mode)
 *   image calls the original, jmp=1       e9 rel32 (jmp mode)
 *   ... with jmp=0 or opts.mode = CALL    e8 rel32 (call mode, SKIP_FRAME)
 */
#ifndef USFT_TRAMP_TEST_COMMON_H
#define USFT_TRAMP_TEST_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <usft/trampoline.h>

#include "test_common.h"

#if defined(__aarch64__)
/*
 * arm64: nop (1f 20 03 d5) or BL in the site's BL slot.  There is no jmp
 * mode (docs/arm64.md): an image that calls the original is BL'd too, so
 * TT_JMP expects the same BL as TT_CALL.
 */
#define TT_NOP5 0
#define TT_CALL 1
#define TT_JMP 2
#define TT_SITE_IS(b, kind) TC_IS_CALL_BYTES(b)
#else
#define TT_NOP5 0x0f
#define TT_CALL 0xe8
#define TT_JMP 0xe9
#define TT_SITE_IS(b, kind) ((b)[0] == (kind))
#endif

/* expect_site(fn, TT_CALL / TT_JMP / TT_NOP5): first byte of fn's site (and
 * the whole nop5 for TT_NOP5). */
#define expect_site(fn, kind)                                                  \
	do {                                                                   \
		unsigned char _b[TC_SITE_SIZE];                                \
		char _s[32];                                                   \
		int _r = tc_read_site((const void *)(fn), _b);                 \
		cr_assert_eq(_r, TC_SITE_SIZE, "usft_site_bytes(%s) = %d",     \
			     #fn, _r);                                         \
		if ((kind) == TT_NOP5)                                         \
			cr_assert(memcmp(_b, tc_nop5, TC_SITE_SIZE) == 0,      \
				  "%s:%d: site of %s: expected nop5 0f 1f 44 00 00, got %s", \
				  __FILE__, __LINE__, #fn,                     \
				  tc_fmt_bytes(_b, TC_SITE_SIZE, _s));         \
		else                                                           \
			cr_assert(TT_SITE_IS(_b, kind),                        \
				  "%s:%d: site of %s: expected %s (%02x rel32), got %s", \
				  __FILE__, __LINE__, #fn,                     \
				  (kind) == TT_CALL ? "call" : "jmp", (kind),  \
				  tc_fmt_bytes(_b, TC_SITE_SIZE, _s));         \
	} while (0)

/* usft_tramp_attach() with explicit nr_args and mode; NULL on failure (errno) */
static inline notrace struct usft_tramp_link *tt_try_attach(void *fn, enum usft_tramp_kind kind,
							     usft_tramp_prog_t prog, void *cookie,
							     int nr_args, int mode)
{
	struct usft_tramp_opts o = { .sz = sizeof(o), .nr_args = nr_args, .mode = mode };

	return usft_tramp_attach(fn, kind, prog, cookie, &o);
}

#define tt_attach(fn, kind, prog, cookie, nr_args, mode)                      \
	({                                                                     \
		struct usft_tramp_link *_l;                                    \
		errno = 0;                                                     \
		_l = tt_try_attach((void *)(fn), (kind), (prog), (cookie),     \
				   (nr_args), (mode));                         \
		cr_assert_not_null(_l, "%s:%d: attach %s to %s (nr_args %d, mode %d): errno %d (%s)", \
				   __FILE__, __LINE__, #prog, #fn, (int)(nr_args), \
				   (int)(mode), errno, strerror(errno));       \
		_l;                                                            \
	})

#define tt_detach(link)                                                        \
	do {                                                                   \
		int _r = usft_tramp_detach(link);                              \
		cr_assert_eq(_r, 0, "%s:%d: usft_tramp_detach(%s) = %d",       \
			     __FILE__, __LINE__, #link, _r);                   \
	} while (0)

/* attach must fail with @err */
#define tt_expect_fail(err, fn, kind, prog, cookie, nr_args, mode)            \
	do {                                                                   \
		struct usft_tramp_link *_l;                                    \
		errno = 0;                                                     \
		_l = tt_try_attach((void *)(fn), (kind), (prog), (cookie),     \
				   (nr_args), (mode));                         \
		int _e = errno;                                                \
		if (_l)                                                        \
			usft_tramp_detach(_l);                                 \
		cr_assert_null(_l, "%s:%d: attach %s to %s (nr_args %d) succeeded, expected %s", \
			       __FILE__, __LINE__, #prog, #fn, (int)(nr_args), #err); \
		cr_assert_eq(_e, (err), "%s:%d: attach %s to %s (nr_args %d): errno %d (%s), expected %s", \
			     __FILE__, __LINE__, #prog, #fn, (int)(nr_args), _e, \
			     strerror(_e), #err);                              \
	} while (0)

static inline notrace void tt_set_option(const char *name, const char *val)
{
	int r = usft_set_option(name, val);

	cr_assert_eq(r, 0, "usft_set_option(%s, %s) = %d", name, val, r);
}

static inline notrace unsigned long tt_dbits(double d)
{
	unsigned long u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static inline notrace double tt_bitsd(unsigned long u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

#endif /* USFT_TRAMP_TEST_COMMON_H */
