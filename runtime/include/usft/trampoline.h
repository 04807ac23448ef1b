/* SPDX-License-Identifier: MIT */
/*
 * usft/trampoline.h - fentry / fexit / fmod_ret callbacks on a function
 * through a generated trampoline (the kernel's BPF trampoline).
 *
 * One image per function is generated on every attach and detach
 * (bpf_trampoline_update()) and installed with the direct-call API: the
 * single shared direct ops (option single_direct_ops=1) or one ops per
 * trampoline.  Images that call the original are attached in jmp mode on
 * x86-64 (option jmp=1) so calls and returns stay paired.
 */
#ifndef USFT_TRAMPOLINE_H
#define USFT_TRAMPOLINE_H

#include <stddef.h>
#include <usft/common.h>

USFT_BEGIN_DECLS

enum usft_tramp_kind { USFT_TRAMP_FENTRY, USFT_TRAMP_FEXIT, USFT_TRAMP_FMODRET };

/*
 * ctx[0..nr_args-1] = arguments; for FEXIT and FMODRET ctx[nr_args] = return
 * value (for FMODRET: of the previous fmod_ret callback, 0 for the first).
 * FMODRET: a non-zero return skips the original function and is returned to
 * the caller.  Floating-point arguments and returns appear as raw bits.
 */
typedef unsigned long (*usft_tramp_prog_t)(const unsigned long *ctx, void *cookie);

enum usft_tramp_mode {
	USFT_TRAMP_MODE_AUTO = 0,	/* jmp when the image calls the original */
	USFT_TRAMP_MODE_CALL = 1,
	USFT_TRAMP_MODE_JMP = 2,
};

struct usft_tramp_opts {
	size_t sz;		/* sizeof(struct usft_tramp_opts); a larger struct
				 * (newer caller) must be zero past mode */
	int nr_args;		/* -1: from DWARF */
	int mode;		/* enum usft_tramp_mode */
};

struct usft_tramp_link;

/* Links per function (BPF_MAX_TRAMP_LINKS). */
#define USFT_TRAMP_MAX_LINKS 38

/**
 * usft_tramp_attach() - run @prog with @cookie at entry (FENTRY), exit
 * (FEXIT) or instead of (FMODRET) @func.
 * @opts: NULL for defaults (nr_args from DWARF, mode auto)
 * Return: the link, or NULL and errno: E2BIG past 38 links on one function,
 * EINVAL not a function with a site / bad kind or options / nr_args that
 * disagrees with the function's other links, EBUSY the function already has
 * a direct call of another owner (register_ftrace_direct() or the batch
 * API), ENOENT the argument count is
 * unknown (no DWARF) and not given, ESTALE it would come from DWARF but
 * the object's file is not the one loaded (replaced or rewritten since),
 * EOPNOTSUPP arguments on the stack or
 * returned in memory, ENOMEM, EBUSY the site's bytes were not the
 * compiler's NOPs when usft read them (someone else patched it; its record
 * is disabled), ENODEV runtime dead (also when the site's bytes changed
 * since usft read them: the compare before the write fires ftrace_bug()),
 * EDEADLK called from a callback.  For ENOENT, ESTALE and
 * EOPNOTSUPP, USFT_LOG=info logs the function, the reason and the fix.
 */
USFT_API struct usft_tramp_link *usft_tramp_attach(void *func, enum usft_tramp_kind kind,
						   usft_tramp_prog_t prog, void *cookie,
						   const struct usft_tramp_opts *opts);

/**
 * usft_tramp_detach() - remove the link.  On return no thread runs @prog any
 * more (threads still inside the original function skip their fexit
 * callbacks when they return); the old image is freed once the last of them
 * has left it.  Return: 0 or a negative errno.
 */
USFT_API int usft_tramp_detach(struct usft_tramp_link *link);

/** usft_tramp_link_misses() - calls skipped because the callback recursed. */
USFT_API unsigned long usft_tramp_link_misses(const struct usft_tramp_link *link);

USFT_END_DECLS

#endif /* USFT_TRAMPOLINE_H */
