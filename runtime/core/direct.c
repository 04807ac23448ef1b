// SPDX-License-Identifier: MIT
/*
 * core/direct.c - direct calls (kernel: DYNAMIC_FTRACE_WITH_DIRECT_CALLS in
 * kernel/trace/ftrace.c): the direct_functions registry, the per-ops API
 * (register/unregister/modify_ftrace_direct) and the single-ops batch API
 * (update_ftrace_direct_add/del/mod), call_direct_funcs() for shared sites
 * and the IPMODIFY peer handshake.
 *
 * direct_functions is always replaced copy-on-write and the old copy freed
 * after a tasks grace period; the only in-place change is a retarget of an
 * entry's ->direct word (one aligned store), as in the kernel.
 */
#include <stdlib.h>
#include "core/arch.h"

/* x86-64 has WITH_REGS: a shared direct site goes through ftrace_regs_caller */
#define MULTI_FLAGS (FTRACE_OPS_FL_DIRECT | FTRACE_OPS_FL_SAVE_REGS)

static struct ftrace_hash *direct_functions = EMPTY_HASH;

int ftrace_startup(struct ftrace_ops *ops, int command);
int ftrace_shutdown(struct ftrace_ops *ops, int command);
int ftrace_hash_move_and_update_ops(struct ftrace_ops *ops, struct ftrace_hash **orig_hash,
				    struct ftrace_hash *hash, int enable);
int __ftrace_hash_update_ipmodify_direct(struct ftrace_ops *ops);
void ftrace_ops_init(struct ftrace_ops *ops);
bool ftrace_ops_references_ip(struct ftrace_ops *ops, unsigned long ip);

/* kernel ftrace_find_rec_direct(): readers run inside a caller (tasks-RCU) */
USFT_API unsigned long ftrace_find_rec_direct(unsigned long ip)
{
	struct ftrace_hash *h = smp_load_acquire(&direct_functions);
	struct ftrace_func_entry *e = ftrace_lookup_ip(h, ip);

	return e ? READ_ONCE(e->direct) : 0;
}

/*
 * call_direct_funcs() - the direct ops' callback, reached only on shared
 * (or out-of-range) sites through ftrace_regs_caller: ask the caller to
 * continue into the trampoline.  The per-ops model keeps the address in
 * ops->direct_call; the single shared ops looks it up by ip.
 */
static void call_direct_funcs(unsigned long ip, unsigned long pip, struct ftrace_ops *ops,
			      struct ftrace_regs *fregs)
{
	unsigned long addr = READ_ONCE(ops->direct_call);

	if (!addr)
		addr = ftrace_find_rec_direct(ip);
	if (!addr)
		return;
	arch_ftrace_set_direct_caller(fregs, addr);
}

static bool is_direct_multi(struct ftrace_ops *ops)
{
	return (ops->flags & FTRACE_OPS_FL_INITIALIZED) &&
	       (ops->flags & MULTI_FLAGS) == MULTI_FLAGS;
}

static int hash_bits_for(unsigned long count)
{
	int bits = fls_long(count);

	return bits > FTRACE_HASH_MAX_BITS ? FTRACE_HASH_MAX_BITS : bits;
}

/* a new hash: direct_functions plus (ip -> @addr, or each entry's own direct) */
static struct ftrace_hash *direct_hash_add(struct ftrace_hash *add, unsigned long addr)
{
	struct ftrace_hash *new;
	struct ftrace_func_entry *e;
	unsigned long i;

	new = alloc_ftrace_hash(hash_bits_for(direct_functions->count + add->count));
	if (!new)
		return NULL;
	if (!ftrace_hash_empty(direct_functions))
		for_each_hash_entry(direct_functions, i, e)
			if (e->ip && !add_ftrace_hash_entry_direct(new, e->ip, e->direct))
				goto fail;
	for_each_hash_entry(add, i, e)
		if (!add_ftrace_hash_entry_direct(new, e->ip, addr ? addr : e->direct))
			goto fail;
	return new;
fail:
	free_ftrace_hash(new);
	return NULL;
}

/*
 * direct_functions minus the ips of @del whose target equals @addr (jmp bit
 * ignored) or, with @addr 0, the entry's own direct in @del.
 */
static struct ftrace_hash *direct_hash_sub(struct ftrace_hash *del, unsigned long addr)
{
	struct ftrace_hash *new;
	struct ftrace_func_entry *e, *d;
	unsigned long i;

	new = alloc_ftrace_hash(hash_bits_for(direct_functions->count));
	if (!new)
		return NULL;
	if (ftrace_hash_empty(direct_functions))
		return new;
	for_each_hash_entry(direct_functions, i, e) {
		unsigned long want;

		d = ftrace_lookup_ip(del, e->ip);
		want = addr ? addr : (d ? d->direct : 0);
		if (d && ftrace_jmp_get(e->direct) == ftrace_jmp_get(want))
			continue;
		if (e->ip && !add_ftrace_hash_entry_direct(new, e->ip, e->direct)) {
			free_ftrace_hash(new);
			return NULL;
		}
	}
	return new;
}

static void publish_direct(struct ftrace_hash *new)
{
	struct ftrace_hash *old = direct_functions;

	smp_store_release(&direct_functions, new);
	free_ftrace_hash_rcu(old);
}

/* ---- per-ops API ---------------------------------------------------- */

/*
 * A trampoline that was meant to be called but sits at an odd address
 * (x86-64: an asm() block whose trampolines end in a bare one-byte "ret"
 * instead of the kernel's two-byte ASM_RET) reads as a jmp request for the
 * byte before it.  Caught where it can be: an odd @addr that is exactly the
 * start of a function symbol is not a jmp request (ftrace_jmp_set() of a
 * trampoline gives its start + 1), so it is refused.  Not under the locks:
 * the symbol lookup takes the objects lock.
 */
static int direct_addr_check(unsigned long addr)
{
	unsigned long off = 1;
	const char *name;

	if (!ftrace_is_jmp(addr))
		return 0;
	name = usft_kallsyms_lookup(addr, &off);
	if (!name || off)
		return 0;
	pr_err("direct trampoline %s at odd address %#lx: bit 0 is the jmp bit "
	       "(ftrace_jmp_set()); align it (.balign 16, or end the trampoline "
	       "before it with ASM_RET = \"ret; int3\")\n", name, addr);
	return -EINVAL;
}

USFT_API int register_ftrace_direct(struct ftrace_ops *ops, unsigned long addr)
{
	USFT_API_ENTER(busy);
	struct ftrace_hash *hash, *new_hash, *old;
	struct ftrace_func_entry *e;
	unsigned long i;
	int err;

	if (busy)
		return usft_err(busy);
	if (!ops || !addr)
		return usft_err(-EINVAL);
	err = ftrace_lazy_init();
	if (err)
		return usft_err(err);
	err = direct_addr_check(addr);
	if (err)
		return usft_err(err);
	if (ops->func || ops->trampoline)
		return usft_err(-EINVAL);
	if (!(ops->flags & FTRACE_OPS_FL_INITIALIZED))
		return usft_err(-EINVAL);
	if (ops->flags & FTRACE_OPS_FL_ENABLED)
		return usft_err(-EINVAL);
	hash = ops->func_hash->filter_hash;
	if (ftrace_hash_empty(hash))
		return usft_err(-EINVAL);

	pthread_mutex_lock(&direct_mutex);
	pthread_mutex_lock(&ftrace_lock);
	err = ftrace_records_sync();
	if (err)
		goto out;
	/* one direct trampoline per function, process-wide */
	err = -EBUSY;
	for_each_hash_entry(hash, i, e)
		if (ftrace_find_rec_direct(e->ip))
			goto out;
	err = -ENOMEM;
	new_hash = direct_hash_add(hash, addr);
	if (!new_hash)
		goto out;
	for_each_hash_entry(hash, i, e)
		e->direct = addr;	/* the ops is not enabled: no readers */
	old = direct_functions;
	smp_store_release(&direct_functions, new_hash);

	ops->func = call_direct_funcs;
	ops->flags |= MULTI_FLAGS;	/* kernel: |=, the caller's flags stay */
	ops->trampoline = FTRACE_REGS_ADDR;
	ops->direct_call = addr;
	err = ftrace_startup(ops, 0);
	if (err) {
		/* put the registry back as it was */
		smp_store_release(&direct_functions, old);
		free_ftrace_hash_rcu(new_hash);
		ops->func = NULL;
		ops->trampoline = 0;
		ops->direct_call = 0;
	} else {
		free_ftrace_hash_rcu(old);
	}
out:
	pthread_mutex_unlock(&ftrace_lock);
	pthread_mutex_unlock(&direct_mutex);
	return usft_err(err);
}

USFT_API int unregister_ftrace_direct(struct ftrace_ops *ops, unsigned long addr,
				      bool free_filters)
{
	USFT_API_ENTER(busy);
	struct ftrace_hash *hash, *new;
	int err;

	if (busy)
		return usft_err(busy);
	if (!ops)
		return usft_err(-EINVAL);
	err = ftrace_lazy_init();
	if (err)
		return usft_err(err);
	if (!is_direct_multi(ops) || !(ops->flags & FTRACE_OPS_FL_ENABLED))
		return usft_err(-EINVAL);

	pthread_mutex_lock(&direct_mutex);
	pthread_mutex_lock(&ftrace_lock);
	hash = ops->func_hash->filter_hash;
	err = ftrace_shutdown(ops, 0);
	if (err == -1)
		err = -EBUSY;
	new = direct_hash_sub(hash, addr);
	if (new)
		publish_direct(new);
	else if (!err)
		err = -ENOMEM;
	pthread_mutex_unlock(&ftrace_lock);
	pthread_mutex_unlock(&direct_mutex);

	/* cleanup for a possible later register */
	ops->func = NULL;
	ops->trampoline = 0;
	ops->direct_call = 0;
	if (free_filters)
		ftrace_free_filter(ops);
	return usft_err(err);
}

/*
 * The tmp_ops dance (kernel __modify_ftrace_direct()): a STUB ops sharing
 * the direct ops' hashes makes every covered site a shared one, so it goes
 * through ftrace_regs_caller and call_direct_funcs() reads the target
 * afresh; the targets are changed; removing tmp_ops patches the sites
 * straight to their new trampolines.  Every call in between reaches the old
 * or the new trampoline.
 */
static struct ftrace_ops tmp_ops = {
	.func = ftrace_stub,
	.flags = FTRACE_OPS_FL_STUB,
};

static int tmp_ops_enter(struct ftrace_ops *ops)
{
	ftrace_ops_init(&tmp_ops);
	tmp_ops.func_hash = ops->func_hash;
	return ftrace_startup(&tmp_ops, 0);
}

static void tmp_ops_leave(void)
{
	ftrace_shutdown(&tmp_ops, 0);
}

static int __modify_ftrace_direct(struct ftrace_ops *ops, unsigned long addr,
				  struct ftrace_hash *targets)
{
	struct ftrace_hash *hash = ops->func_hash->filter_hash;
	struct ftrace_func_entry *iter, *e;
	unsigned long i;
	int err;

	err = tmp_ops_enter(ops);
	if (err)
		return err;
	/* lets an ops_func renegotiate IPMODIFY sharing for the new target */
	err = __ftrace_hash_update_ipmodify_direct(ops);
	if (err)
		goto out;
	for_each_hash_entry(hash, i, iter) {
		unsigned long to = addr;

		e = ftrace_lookup_ip(direct_functions, iter->ip);
		if (!e)
			continue;
		if (targets) {
			struct ftrace_func_entry *t = ftrace_lookup_ip(targets, iter->ip);

			if (!t)
				continue;
			to = t->direct;
		}
		WRITE_ONCE(e->direct, to);
		iter->direct = to;
	}
	if (!targets)
		WRITE_ONCE(ops->direct_call, addr);
out:
	tmp_ops_leave();
	if (!err && ftrace_disabled)
		err = -ENODEV;	/* the runtime died on the way */
	return err;
}

static int modify_direct(struct ftrace_ops *ops, unsigned long addr, bool lock)
{
	int err;

	if (!ops || !addr)
		return -EINVAL;
	err = ftrace_lazy_init();
	if (err)
		return err;
	if (!is_direct_multi(ops) || !(ops->flags & FTRACE_OPS_FL_ENABLED))
		return -EINVAL;
	if (lock) {
		/* from an ops_func (!lock) the caller holds the locks: not checked */
		err = direct_addr_check(addr);
		if (err)
			return err;
	}
	if (lock)
		pthread_mutex_lock(&direct_mutex);
	pthread_mutex_lock(&ftrace_lock);
	err = __modify_ftrace_direct(ops, addr, NULL);
	pthread_mutex_unlock(&ftrace_lock);
	if (lock)
		pthread_mutex_unlock(&direct_mutex);
	return err;
}

USFT_API int modify_ftrace_direct(struct ftrace_ops *ops, unsigned long addr)
{
	USFT_API_ENTER(busy);

	if (busy)
		return usft_err(busy);
	return usft_err(modify_direct(ops, addr, true));
}

/* caller holds direct_mutex (e.g. from inside an ops_func) */
USFT_API int modify_ftrace_direct_nolock(struct ftrace_ops *ops, unsigned long addr)
{
	USFT_API_ENTER(busy);

	if (busy)
		return usft_err(busy);
	return usft_err(modify_direct(ops, addr, false));
}

/* ---- single-ops batch API (Jiri Olsa's series) ----------------------- */

/* the checks every batch call starts with; Return: 0 or the error to return */
static int batch_enter(int busy, struct ftrace_ops *ops, struct ftrace_hash *hash)
{
	if (busy)
		return busy;
	if (!ops || ftrace_hash_empty(hash))
		return -EINVAL;
	return ftrace_lazy_init();
}

/*
 * The hashes a batch edits before anything is published: direct_functions
 * with @hash's sites added (@add) or taken out, and a copy of the ops'
 * filter.  Return: 0, or -ENOMEM with neither made.
 */
static int batch_hashes(struct ftrace_ops *ops, struct ftrace_hash *hash, bool add,
			struct ftrace_hash **new_direct, struct ftrace_hash **new_filter)
{
	*new_filter = NULL;
	*new_direct = add ? direct_hash_add(hash, 0) : direct_hash_sub(hash, 0);
	if (!*new_direct)
		return -ENOMEM;
	*new_filter = alloc_and_copy_ftrace_hash(FTRACE_HASH_DEFAULT_BITS,
						 ops->func_hash->filter_hash);
	if (!*new_filter) {
		free_ftrace_hash(*new_direct);
		return -ENOMEM;
	}
	return 0;
}

USFT_API int update_ftrace_direct_add(struct ftrace_ops *ops, struct ftrace_hash *hash)
{
	USFT_API_ENTER(busy);
	struct ftrace_hash *new_direct, *old_direct, *new_filter;
	struct ftrace_func_entry *e;
	unsigned long i;
	bool first;
	int err;

	err = batch_enter(busy, ops, hash);
	if (err)
		return usft_err(err);
	ftrace_ops_init(ops);
	pthread_mutex_lock(&direct_mutex);
	pthread_mutex_lock(&ftrace_lock);
	err = ftrace_records_sync();
	if (err)
		goto out;
	err = -EINVAL;
	for_each_hash_entry(hash, i, e) {
		struct dyn_ftrace *rec = lookup_rec(e->ip, e->ip);

		/* exact site addresses only, each without a direct target yet */
		if (!e->direct || !rec || rec->ip != e->ip || ftrace_find_rec_direct(e->ip))
			goto out;
	}
	first = ftrace_hash_empty(ops->func_hash->filter_hash);
	if (first && (ops->func || ops->trampoline || (ops->flags & FTRACE_OPS_FL_ENABLED)))
		goto out;
	if (!first && !(is_direct_multi(ops) && (ops->flags & FTRACE_OPS_FL_ENABLED)))
		goto out;

	err = batch_hashes(ops, hash, true, &new_direct, &new_filter);
	if (err)
		goto out;
	err = -ENOMEM;
	for_each_hash_entry(hash, i, e)
		if (!ftrace_lookup_ip(new_filter, e->ip) &&
		    !add_ftrace_hash_entry_direct(new_filter, e->ip, e->direct)) {
			free_ftrace_hash(new_filter);
			free_ftrace_hash(new_direct);
			goto out;
		}
	old_direct = direct_functions;
	smp_store_release(&direct_functions, new_direct);

	if (first) {
		struct ftrace_hash *moved = __ftrace_hash_move(new_filter);

		err = -ENOMEM;
		if (moved) {
			ops->func_hash->filter_hash = moved;
			ops->func = call_direct_funcs;
			ops->flags |= MULTI_FLAGS;
			ops->trampoline = FTRACE_REGS_ADDR;
			ops->direct_call = 0;
			err = ftrace_startup(ops, 0);
			if (err) {
				ops->func_hash->filter_hash = EMPTY_HASH;
				free_ftrace_hash(moved);
				ops->func = NULL;
				ops->trampoline = 0;
			}
		}
	} else {
		/* a hash move: only the changed sites are patched, no shutdown */
		err = ftrace_hash_move_and_update_ops(ops, &ops->func_hash->filter_hash,
						      new_filter, 1);
	}
	free_ftrace_hash(new_filter);
	if (err) {
		smp_store_release(&direct_functions, old_direct);
		free_ftrace_hash_rcu(new_direct);
	} else {
		free_ftrace_hash_rcu(old_direct);
	}
out:
	pthread_mutex_unlock(&ftrace_lock);
	pthread_mutex_unlock(&direct_mutex);
	return usft_err(err);
}

/*
 * Every entry of @hash is in the ops' filter and in direct_functions with
 * exactly that target, jmp bit included (kernel update_ftrace_direct_del():
 * del->direct != entry->direct refuses, so a 0 target matches nothing).
 */
static bool batch_entries_present(struct ftrace_ops *ops, struct ftrace_hash *hash)
{
	struct ftrace_func_entry *e, *d;
	unsigned long i;

	for_each_hash_entry(hash, i, e) {
		if (!ftrace_lookup_ip(ops->func_hash->filter_hash, e->ip))
			return false;
		d = ftrace_lookup_ip(direct_functions, e->ip);
		if (!d || d->direct != e->direct)
			return false;
	}
	return true;
}

USFT_API int update_ftrace_direct_del(struct ftrace_ops *ops, struct ftrace_hash *hash)
{
	USFT_API_ENTER(busy);
	struct ftrace_hash *new_filter = NULL, *new_direct;
	struct ftrace_func_entry *e, *f;
	unsigned long i;
	int err;

	err = batch_enter(busy, ops, hash);
	if (err)
		return usft_err(err);
	pthread_mutex_lock(&direct_mutex);
	pthread_mutex_lock(&ftrace_lock);
	err = -EINVAL;
	if (!is_direct_multi(ops) || !(ops->flags & FTRACE_OPS_FL_ENABLED) ||
	    ftrace_hash_empty(direct_functions) ||
	    ftrace_hash_empty(ops->func_hash->filter_hash) ||
	    !batch_entries_present(ops, hash))
		goto out;
	err = batch_hashes(ops, hash, false, &new_direct, &new_filter);
	if (err)
		goto out;
	for_each_hash_entry(hash, i, e) {
		f = ftrace_lookup_ip(new_filter, e->ip);
		if (f)
			free_hash_entry(new_filter, f);
	}
	if (ftrace_hash_empty(new_filter)) {
		/* the last site: the ops goes away (static: no wait for the hash) */
		err = ftrace_shutdown(ops, 0);
		if (!err) {
			free_ftrace_hash_rcu(ops->func_hash->filter_hash);
			ops->func_hash->filter_hash = EMPTY_HASH;
			ops->func = NULL;
			ops->trampoline = 0;
		}
	} else {
		err = ftrace_hash_move_and_update_ops(ops, &ops->func_hash->filter_hash,
						      new_filter, 1);
	}
	if (!err)
		publish_direct(new_direct);
	else
		free_ftrace_hash(new_direct);
out:
	free_ftrace_hash(new_filter);
	pthread_mutex_unlock(&ftrace_lock);
	pthread_mutex_unlock(&direct_mutex);
	return usft_err(err);
}

USFT_API int update_ftrace_direct_mod(struct ftrace_ops *ops, struct ftrace_hash *hash,
				      bool do_direct_lock)
{
	USFT_API_ENTER(busy);
	struct ftrace_func_entry *e;
	unsigned long i;
	int err;

	err = batch_enter(busy, ops, hash);
	if (err)
		return usft_err(err);
	if (do_direct_lock)
		pthread_mutex_lock(&direct_mutex);
	pthread_mutex_lock(&ftrace_lock);
	err = -EINVAL;
	if (!is_direct_multi(ops) || !(ops->flags & FTRACE_OPS_FL_ENABLED) ||
	    ftrace_hash_empty(direct_functions))
		goto out;
	for_each_hash_entry(hash, i, e)
		if (!e->direct || !ftrace_lookup_ip(ops->func_hash->filter_hash, e->ip) ||
		    !ftrace_lookup_ip(direct_functions, e->ip))
			goto out;
	err = __modify_ftrace_direct(ops, 0, hash);
out:
	pthread_mutex_unlock(&ftrace_lock);
	if (do_direct_lock)
		pthread_mutex_unlock(&direct_mutex);
	return usft_err(err);
}

/* ---- IPMODIFY peers (prepare_direct_functions_for_ipmodify()) -------- */

/* the enabled DIRECT ops covering @ip, if any */
static struct ftrace_ops *direct_ops_for(unsigned long ip)
{
	struct ftrace_ops *op;

	for (op = ftrace_ops_list; op != &ftrace_list_end; op = op->next)
		if ((op->flags & FTRACE_OPS_FL_DIRECT) && ftrace_ops_references_ip(op, ip))
			return op;
	return NULL;
}

/*
 * Tell every enabled DIRECT ops sharing a site with the IPMODIFY @ops: @cmd.
 * @enable: a peer that cannot share (no ops_func) is -EBUSY, and the first
 * error ends the walk; otherwise errors are ignored.
 */
static int ipmodify_peers(struct ftrace_ops *ops, enum ftrace_ops_cmd cmd, bool enable)
{
	struct ftrace_hash *hash;
	struct ftrace_func_entry *e;
	unsigned long i;
	int ret;

	if (!(ops->flags & FTRACE_OPS_FL_IPMODIFY))
		return 0;
	hash = ops->func_hash->filter_hash;
	if (ftrace_hash_empty(hash))
		return 0;
	for_each_hash_entry(hash, i, e) {
		struct ftrace_ops *op = direct_ops_for(e->ip);

		if (!op || (!op->ops_func && !enable))
			continue;
		if (!op->ops_func)
			return -EBUSY;
		ret = op->ops_func(op, e->ip, cmd);
		if (ret && enable)
			return ret;
	}
	return 0;
}

/* kernel prepare_direct_functions_for_ipmodify(); direct_mutex held */
int prepare_direct_functions_for_ipmodify(struct ftrace_ops *ops)
{
	return ipmodify_peers(ops, FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_PEER, true);
}

/* kernel cleanup_direct_functions_after_ipmodify(); errors ignored */
void cleanup_direct_functions_after_ipmodify(struct ftrace_ops *ops)
{
	ipmodify_peers(ops, FTRACE_OPS_CMD_DISABLE_SHARE_IPMODIFY_PEER, false);
}

/* usft_stat(): direct sites patched straight vs reached through the caller */
void ftrace_direct_stats(unsigned long *in_range, unsigned long *out_of_range)
{
	struct ftrace_page *pg;
	struct dyn_ftrace *rec;

	*in_range = *out_of_range = 0;
	do_for_each_ftrace_rec(pg, rec) {
		unsigned long addr;

		if (!(rec->flags & FTRACE_FL_DIRECT_EN))
			continue;
		addr = ftrace_find_rec_direct(rec->ip);
		if (addr && arch_ftrace_direct_in_reach(rec->ip, addr))
			(*in_range)++;
		else
			(*out_of_range)++;
	} while_for_each_ftrace_rec();
}
