// SPDX-License-Identifier: MIT
/*
 * core/direct.c - the direct-call API (DYNAMIC_FTRACE_WITH_DIRECT_CALLS).
 *
 * Not implemented yet (issue "Direct calls ..."): every entry point checks
 * its arguments like the kernel and then returns -EOPNOTSUPP, and the
 * direct_functions hash is always empty, so the core's direct paths are
 * never taken.
 */
#include "core/internal.h"

unsigned long ftrace_find_rec_direct(unsigned long ip)
{
	return 0;
}

USFT_API int register_ftrace_direct(struct ftrace_ops *ops, unsigned long addr)
{
	return usft_err(ops && addr ? -EOPNOTSUPP : -EINVAL);
}

USFT_API int unregister_ftrace_direct(struct ftrace_ops *ops, unsigned long addr,
				      bool free_filters)
{
	return usft_err(ops && addr ? -EOPNOTSUPP : -EINVAL);
}

USFT_API int modify_ftrace_direct(struct ftrace_ops *ops, unsigned long addr)
{
	return usft_err(ops && addr ? -EOPNOTSUPP : -EINVAL);
}

USFT_API int modify_ftrace_direct_nolock(struct ftrace_ops *ops, unsigned long addr)
{
	return usft_err(ops && addr ? -EOPNOTSUPP : -EINVAL);
}

USFT_API int update_ftrace_direct_add(struct ftrace_ops *ops, struct ftrace_hash *hash)
{
	return usft_err(ops && hash ? -EOPNOTSUPP : -EINVAL);
}

USFT_API int update_ftrace_direct_del(struct ftrace_ops *ops, struct ftrace_hash *hash)
{
	return usft_err(ops && hash ? -EOPNOTSUPP : -EINVAL);
}

USFT_API int update_ftrace_direct_mod(struct ftrace_ops *ops, struct ftrace_hash *hash,
				      bool do_direct_lock)
{
	return usft_err(ops && hash ? -EOPNOTSUPP : -EINVAL);
}
