/* SPDX-License-Identifier: MIT */
/*
 * usft/fprobe.h - function entry/exit probes (kernel include/linux/fprobe.h,
 * kernel/trace/fprobe.c): one or both handlers on a set of functions, with
 * per-call data shared by the entry and the exit handler.
 *
 * Built on the function graph hook as the kernel's is: every fprobe is
 * served by one shared fgraph_ops whose filter is the union of their
 * functions; the per-call data lives on the shadow stack
 * (fgraph_reserve_data()).
 */
#ifndef USFT_FPROBE_H
#define USFT_FPROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <usft/common.h>
#include <usft/ftrace.h>

USFT_BEGIN_DECLS

struct fprobe;

/*
 * Entry handler: @entry_ip is the probed function's site address, @ret_ip
 * where it returns to, @entry_data the fprobe's entry_data_size bytes for
 * this call (NULL when entry_data_size is 0).  A nonzero return skips the
 * exit handler for this call.
 */
typedef int (*fprobe_entry_cb)(struct fprobe *fp, unsigned long entry_ip, unsigned long ret_ip,
			       struct ftrace_regs *fregs, void *entry_data);
/* Exit handler: @fregs has the return registers (ftrace_regs_get_return_value()). */
typedef void (*fprobe_exit_cb)(struct fprobe *fp, unsigned long entry_ip, unsigned long ret_ip,
			       struct ftrace_regs *fregs, void *entry_data);

/* fprobe::flags */
#define FPROBE_FL_DISABLED	1
#define FPROBE_FL_KPROBE_SHARED	2

/**
 * struct fprobe - one probe on a set of functions.
 * @nmissed: calls whose handlers did not run (no room for the per-call data)
 * @flags: FPROBE_FL_*; disable_fprobe()/enable_fprobe() flip DISABLED
 * @entry_data_size: bytes of per-call data handed to both handlers
 * @entry_handler: may be NULL
 * @exit_handler: may be NULL (then nothing of the return is hooked)
 * @hlist_array: runtime-owned
 */
struct fprobe {
	unsigned long nmissed;
	unsigned int flags;
	size_t entry_data_size;
	fprobe_entry_cb entry_handler;
	fprobe_exit_cb exit_handler;
	void *hlist_array;
};

/* per-call data one fprobe may ask for */
#define FPROBE_DATA_SIZE_MAX	(sizeof(long) * 28)

static inline bool fprobe_disabled(struct fprobe *fp)
{
	return !fp || (__atomic_load_n(&fp->flags, __ATOMIC_RELAXED) & FPROBE_FL_DISABLED);
}

static inline void disable_fprobe(struct fprobe *fp)
{
	if (fp)
		__atomic_fetch_or(&fp->flags, FPROBE_FL_DISABLED, __ATOMIC_RELAXED);
}

static inline void enable_fprobe(struct fprobe *fp)
{
	if (fp)
		__atomic_fetch_and(&fp->flags, ~FPROBE_FL_DISABLED, __ATOMIC_RELAXED);
}

/**
 * register_fprobe() - probe the functions a filter selects.
 * @filter: globs in ftrace_set_filter() syntax
 * @notfilter: globs to leave out, or NULL
 * Return: 0; -EINVAL bad arguments; -ENOENT nothing matched; -EBUSY @fp
 * is registered; -E2BIG entry_data_size past FPROBE_DATA_SIZE_MAX;
 * -ENOMEM; any error of register_ftrace_graph().
 */
USFT_API int register_fprobe(struct fprobe *fp, const char *filter, const char *notfilter);

/**
 * register_fprobe_ips() - probe the functions at @addrs (function or site
 * addresses).  Return: as register_fprobe(); -ENOENT an address is not a
 * function with a site.
 */
USFT_API int register_fprobe_ips(struct fprobe *fp, unsigned long *addrs, int num);

/** register_fprobe_syms() - probe the functions named @syms. */
USFT_API int register_fprobe_syms(struct fprobe *fp, const char **syms, int num);

/**
 * unregister_fprobe() - remove @fp; on return neither handler runs for it
 * any more (calls already inside a probed function return without its exit
 * handler).  Return: 0; -EINVAL @fp is not registered.
 */
USFT_API int unregister_fprobe(struct fprobe *fp);

/** fprobe_is_registered() - whether @fp is registered. */
USFT_API bool fprobe_is_registered(struct fprobe *fp);

USFT_END_DECLS

#endif /* USFT_FPROBE_H */
