// SPDX-License-Identifier: MIT
/*
 * core/bpf_trampoline.c - fentry/fexit/fmod_ret trampolines (kernel:
 * kernel/bpf/trampoline.c).  One struct usft_trampoline per traced
 * function; every attach or detach regenerates its image
 * (bpf_trampoline_update()) and installs it through the direct API:
 *   single_direct_ops=1  one static shared direct ops, update_ftrace_direct_*
 *   single_direct_ops=0  one ops per trampoline, *_ftrace_direct()
 *
 * Image lifetime (bpf_tramp_image_put()): an image that calls the original
 * has its ip_after_call NOP turned into a jump to the epilogue, so threads
 * still inside the original skip the fexit callbacks when they return; it
 * is freed once a grace period has passed, no thread has it on its
 * usft_task.orig_stack (the per-thread stand-in for the kernel's percpu_ref
 * in-flight count) and another grace period covers the epilogue.  An image without CALL_ORIG is freed after a grace period.
 * usft_tramp_detach() itself waits for one grace period so that no thread
 * runs the detached callback after it returns; threads blocked inside the
 * original do not hold it up (the image drops out of the tasks span around
 * the call of the original).
 */
#include <stdlib.h>
#include <string.h>
#include "core/arch.h"
#include "core/bpf_trampoline.h"
#include "core/text.h"
#include "mem/execmem.h"

struct usft_tramp_link {
	struct usft_tramp_link *next;
	struct usft_trampoline *tr;
	enum usft_tramp_kind kind;
	usft_tramp_prog_t prog;
	void *cookie;
	int mode;
	unsigned long misses;
};

struct tramp_image {
	struct tramp_image *next;	/* retired list */
	struct usft_window *w;
	unsigned long addr;
	size_t size;
	bool call_orig;
	bool checkable;			/* a grace period passed since retirement */
	size_t data_off;		/* callback data words (image_quiesce()) */
	int nr_data;
	size_t ip_after_call, ip_epilogue;
};

struct usft_trampoline {
	struct usft_trampoline *next;
	unsigned long func, ip;
	struct usft_func_model model;
	struct usft_tramp_link *links[3];
	int cnt[3];
	struct tramp_image *cur;
	unsigned long cur_addr;		/* with the jmp bit when attached in jmp mode */
	bool single;			/* attached through the shared ops */
	struct ftrace_ops *fops;	/* per-trampoline model */
};

static struct usft_trampoline *trampolines;
static struct tramp_image *retired;
static pthread_mutex_t tramp_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/*
 * fork(): the child must not inherit tramp_mutex held by a thread that does
 * not exist there.  Taken before direct_mutex and ftrace_lock (lock order),
 * so these handlers are registered after ftrace.c's (prepare handlers run
 * in reverse order of registration).
 */
static void tramp_fork_prepare(void)
{
	pthread_mutex_lock(&tramp_mutex);
}

static void tramp_fork_parent(void)
{
	pthread_mutex_unlock(&tramp_mutex);
}

static void tramp_fork_child(void)
{
	usft_recursive_mutex_init(&tramp_mutex);
}

void usft_tramp_atfork_init(void)
{
	pthread_atfork(tramp_fork_prepare, tramp_fork_parent, tramp_fork_child);
}
/* kernel: the static direct_ops of the single-ops series */
static struct ftrace_ops tramp_direct_ops;

USFT_API int usft_func_arg_types(unsigned long func, struct usft_arg_type *args, int max,
				 struct usft_arg_type *ret, bool *variadic)
{
	struct usft_object *obj;
	unsigned long start, off = 0;
	int r;

	if (max < 0 || (max && !args))
		return usft_err(-EINVAL);
	r = ftrace_lazy_init();
	if (r)
		return usft_err(r);
	/* a site inside the function (after endbr64, arm64's pre-NOPs): its start */
	if (!usft_kallsyms_lookup(func, &off))
		return usft_err(-EINVAL);
	start = func - off;
	pthread_mutex_lock(&ftrace_lock);
	obj = usft_object_of(start);
	r = obj ? usft_dwarf_arg_types(obj->path, &obj->elf, start - obj->bias, args, max, ret,
					   variadic) :
		  -EINVAL;
	pthread_mutex_unlock(&ftrace_lock);
	return r < 0 ? usft_err(r) : r;
}

static int func_model(unsigned long func, int nr_args, struct usft_func_model *m)
{
	struct usft_object *obj;
	int ret = -ENOENT;

	memset(m, 0, sizeof(*m));
	if (nr_args >= 0) {
		if (nr_args > MAX_BPF_FUNC_ARGS)
			return -EOPNOTSUPP;
		m->nr_args = nr_args;
		return 0;
	}
	pthread_mutex_lock(&ftrace_lock);
	obj = usft_object_of(func);
	if (obj)
		ret = usft_dwarf_func_model(obj->path, &obj->elf, func - obj->bias, m);
	/* the errno alone ("No such file or directory") does not say why */
	if (ret == -ENOENT || ret == -EOPNOTSUPP || ret == -ESTALE) {
		const struct usft_elf_sym *sym = obj ? usft_elf_find_sym(&obj->elf, func - obj->bias) : NULL;

		if (ret == -ENOENT)
			pr_info("usft: usft_tramp_attach(%s): the argument count is unknown: %s has "
				"no DWARF entry for it (ENOENT); build it with -g, or give "
				"opts.nr_args\n", sym ? sym->name : "?", obj ? obj->path : "no object");
		else if (ret == -ESTALE)
			pr_info("usft: usft_tramp_attach(%s): the argument count is unknown: %s is "
				"not the file that was loaded (replaced or rewritten since), so its "
				"DWARF describes other code (ESTALE); give opts.nr_args\n",
				sym ? sym->name : "?", obj->path);
		else
			pr_info("usft: usft_tramp_attach(%s): an argument or the return value is not "
				"in registers (struct or union by value, long double, __int128, or "
				"more than %d arguments) (EOPNOTSUPP); trace it with an ftrace_ops "
				"instead\n", sym ? sym->name : "?", MAX_BPF_FUNC_ARGS);
	}
	pthread_mutex_unlock(&ftrace_lock);
	return ret;
}

static struct usft_trampoline *find_tr(unsigned long ip)
{
	for (struct usft_trampoline *tr = trampolines; tr; tr = tr->next)
		if (tr->ip == ip)
			return tr;
	return NULL;
}

static void free_image(void *p)
{
	struct tramp_image *im = p;

	usft_execmem_free(im->w, im->addr, im->size);
	free(im);
}

static void mark_checkable(void *p)
{
	struct tramp_image *im = p;

	__atomic_store_n(&im->checkable, true, __ATOMIC_RELEASE);
}

/* free retired CALL_ORIG images nobody is inside any more; tramp_mutex held */
static void reap_retired(void)
{
	struct tramp_image **pp = &retired, *im;

	while ((im = *pp)) {
		if (!__atomic_load_n(&im->checkable, __ATOMIC_ACQUIRE) ||
		    usft_tasks_in_original(im->addr)) {
			pp = &im->next;
			continue;
		}
		*pp = im->next;
		usft_call_rcu_tasks(free_image, im);
	}
}

static unsigned long stub_misses;

static notrace unsigned long stub_prog(const unsigned long *ctx, void *cookie)
{
	return 0;	/* fmod_ret 0: the original runs, as if nothing were attached */
}

#ifndef ARCH_TRAMP_DATA_TWIN
#define ARCH_TRAMP_DATA_TWIN 0
#endif

/* where the code of @im reads its data words: its twin, or the image itself */
static unsigned long *image_words(const struct tramp_image *im)
{
	unsigned long base = ARCH_TRAMP_DATA_TWIN ? usft_execmem_twin(im->addr) : im->addr;

	return (unsigned long *)(base + im->data_off);
}

/*
 * Before the grace period of a retirement: every callback word of the image
 * becomes the stub, its cookie 0 and its miss counter a dummy, so a thread
 * that enters the image late (even paused before its first instruction)
 * runs no callback of a link that is being detached.  In a data twin each
 * word is one store; in the image, text writes (arm64: an aligned 8-byte
 * copy, docs/design.md).
 */
static void image_quiesce(struct tramp_image *im)
{
	unsigned long *w = image_words(im);
	bool in_text = !ARCH_TRAMP_DATA_TWIN;

	if (!im->nr_data)
		return;
	if (in_text && usft_text_open((unsigned long)w, 8UL * im->nr_data)) {
		usft_text_close_all();
		return;
	}
	for (int k = 0; k + 2 < im->nr_data; k += 3) {
		const unsigned long v[3] = { (unsigned long)stub_prog, 0,
					     (unsigned long)&stub_misses };

		for (int i = 0; i < 3; i++)
			if (in_text)
				usft_text_write((unsigned long)&w[k + i], &v[i], 8);
			else
				__atomic_store_n(&w[k + i], v[i], __ATOMIC_RELEASE);
	}
	if (in_text)
		usft_text_close_all();
}

/* kernel bpf_tramp_image_put() */
static void image_put(struct tramp_image *im)
{
	if (!im)
		return;
	pthread_mutex_lock(&ftrace_lock);
	image_quiesce(im);
	if (!arch_bpf_tramp_retire(im->addr, im->size))
		ftrace_arch_code_modify_post_process();
	pthread_mutex_unlock(&ftrace_lock);
	if (im->call_orig) {
		pthread_mutex_lock(&ftrace_lock);
		if (!arch_bpf_tramp_skip_fexit(im->addr + im->ip_after_call,
					       im->addr + im->ip_epilogue))
			ftrace_arch_code_modify_post_process();
		pthread_mutex_unlock(&ftrace_lock);
		im->next = retired;
		retired = im;
		usft_call_rcu_tasks(mark_checkable, im);
		return;
	}
	usft_call_rcu_tasks(free_image, im);
}

static struct tramp_image *image_new(struct usft_trampoline *tr, unsigned long flags)
{
	struct tramp_desc d = { .flags = flags, .model = tr->model };
	struct tramp_prog progs[3][USFT_TRAMP_MAX_LINKS];
	unsigned char *buf;
	struct tramp_image *im;
	int size, k;

	im = calloc(1, sizeof(*im));
	if (!im)
		return NULL;
	for (k = 0; k < 3; k++) {
		struct usft_tramp_link *l;
		int n = 0;

		/* links were pushed at the head: emit them in attach order */
		for (l = tr->links[k]; l; l = l->next)
			n++;
		d.nr[k] = n;
		d.progs[k] = progs[k];
		for (l = tr->links[k]; l; l = l->next) {
			n--;
			progs[k][n].prog = l->prog;
			progs[k][n].cookie = l->cookie;
			progs[k][n].misses = &l->misses;
		}
	}
	d.body = tr->ip + MCOUNT_INSN_SIZE;
	d.tpoff = usft_task_tpoff();
	buf = malloc(16384);
	if (!buf)
		goto fail;
	/*
	 * The image's address is its identity on the threads' orig_stack, so
	 * generate, reserve, then generate again knowing the address (the
	 * size does not depend on it).
	 */
	size = arch_prepare_bpf_trampoline(&d, buf, 16384, 0, &im->ip_after_call,
					   &im->ip_epilogue, &im->data_off, &im->nr_data);
	if (size < 0) {
		free(buf);
		errno = -size;
		goto fail_errno;
	}
	pthread_mutex_lock(&ftrace_lock);
	im->addr = usft_execmem_reserve(tr->ip, (size_t)size, &im->w);
	if (im->addr) {
		d.image_id = im->addr;
		arch_prepare_bpf_trampoline(&d, buf, 16384, im->addr, &im->ip_after_call,
					    &im->ip_epilogue, &im->data_off, &im->nr_data);
		if (ARCH_TRAMP_DATA_TWIN) {
			/* the words live in the twin; the image keeps traps where they were */
			memcpy(image_words(im), buf + im->data_off, 8UL * (size_t)im->nr_data);
			memset(buf + im->data_off, 0xcc, 8UL * (size_t)im->nr_data);
		}
		if (usft_execmem_write(im->addr, buf, (size_t)size)) {
			usft_execmem_free(im->w, im->addr, (size_t)size);
			im->addr = 0;
		}
	}
	pthread_mutex_unlock(&ftrace_lock);
	free(buf);
	if (!im->addr)
		goto fail;
	im->size = (size_t)size;
	im->call_orig = flags & BPF_TRAMP_F_CALL_ORIG;
	return im;
fail:
	errno = ENOMEM;
fail_errno:
	free(im);
	return NULL;
}

static struct ftrace_hash *one_entry(unsigned long ip, unsigned long addr)
{
	struct ftrace_hash *h = alloc_ftrace_hash(0);

	if (h && !add_ftrace_hash_entry_direct(h, ip, addr)) {
		free_ftrace_hash(h);
		h = NULL;
	}
	return h;
}

static int register_fentry(struct usft_trampoline *tr, unsigned long addr)
{
	int ret;

	tr->single = usft_opts.single_direct_ops;
	if (tr->single) {
		struct ftrace_hash *h = one_entry(tr->ip, addr);

		if (!h)
			return -ENOMEM;
		ret = update_ftrace_direct_add(&tramp_direct_ops, h);
		free_ftrace_hash(h);
		return ret;
	}
	tr->fops = calloc(1, sizeof(*tr->fops));
	if (!tr->fops)
		return -ENOMEM;
	ret = ftrace_set_filter_ip(tr->fops, tr->ip, 0, 1);
	if (!ret)
		ret = register_ftrace_direct(tr->fops, addr);
	if (ret) {
		ftrace_free_filter(tr->fops);
		free(tr->fops);
		tr->fops = NULL;
	}
	return ret;
}

static int modify_fentry(struct usft_trampoline *tr, unsigned long addr)
{
	if (tr->single) {
		struct ftrace_hash *h = one_entry(tr->ip, addr);
		int ret;

		if (!h)
			return -ENOMEM;
		ret = update_ftrace_direct_mod(&tramp_direct_ops, h, true);
		free_ftrace_hash(h);
		return ret;
	}
	return modify_ftrace_direct(tr->fops, addr);
}

static int unregister_fentry(struct usft_trampoline *tr, unsigned long addr)
{
	int ret;

	if (tr->single) {
		struct ftrace_hash *h = one_entry(tr->ip, addr);

		if (!h)
			return -ENOMEM;
		ret = update_ftrace_direct_del(&tramp_direct_ops, h);
		free_ftrace_hash(h);
		return ret;
	}
	ret = unregister_ftrace_direct(tr->fops, addr, true);
	if (!ret) {
		free(tr->fops);
		tr->fops = NULL;
	}
	return ret;
}

/* kernel bpf_trampoline_update() */
static int trampoline_update(struct usft_trampoline *tr)
{
	unsigned long flags = 0, addr;
	struct tramp_image *im;
	bool force_call = false, want_jmp = false;
	int ret;

	if (!tr->cnt[0] && !tr->cnt[1] && !tr->cnt[2]) {
		ret = unregister_fentry(tr, tr->cur_addr);
		if (ret)
			return ret;
		image_put(tr->cur);
		tr->cur = NULL;
		tr->cur_addr = 0;
		return 0;
	}
	if (tr->cnt[USFT_TRAMP_FEXIT] || tr->cnt[USFT_TRAMP_FMODRET]) {
		/*
		 * The image would call the original from its own frame: stack
		 * arguments (variadic ones included) are not copied, so refuse
		 * rather than run it with wrong arguments.
		 */
		if (tr->model.variadic)
			return -EOPNOTSUPP;
		flags = BPF_TRAMP_F_CALL_ORIG | BPF_TRAMP_F_SKIP_FRAME;
	} else {
		flags = BPF_TRAMP_F_RESTORE_REGS;
	}
	for (int k = 0; k < 3; k++)
		for (struct usft_tramp_link *l = tr->links[k]; l; l = l->next) {
			force_call |= l->mode == USFT_TRAMP_MODE_CALL;
			want_jmp |= l->mode == USFT_TRAMP_MODE_JMP;
		}
	/* bpf_trampoline_use_jmp(): WITH_JMP && CALL_ORIG && !SKIP_FRAME */
	if ((flags & BPF_TRAMP_F_CALL_ORIG) && arch_bpf_tramp_has_jmp() && !force_call &&
	    (want_jmp || usft_opts.jmp))
		flags &= ~BPF_TRAMP_F_SKIP_FRAME;

	im = image_new(tr, flags);
	if (!im)
		return -errno;
	addr = im->addr;
	if ((flags & BPF_TRAMP_F_CALL_ORIG) && !(flags & BPF_TRAMP_F_SKIP_FRAME))
		addr = ftrace_jmp_set(addr);
	ret = tr->cur ? modify_fentry(tr, addr) : register_fentry(tr, addr);
	if (ret) {
		free_image(im);
		return ret;
	}
	image_put(tr->cur);
	tr->cur = im;
	tr->cur_addr = addr;
	return 0;
}

USFT_API struct usft_tramp_link *usft_tramp_attach(void *func, enum usft_tramp_kind kind,
						   usft_tramp_prog_t prog, void *cookie,
						   const struct usft_tramp_opts *opts)
{
	USFT_API_ENTER(busy);
	struct usft_trampoline *tr;
	struct usft_tramp_link *link;
	int nr_args = -1, mode = USFT_TRAMP_MODE_AUTO, ret;
	unsigned long ip;
	bool new_tr = false;

	if (busy) {
		errno = -busy;
		return NULL;
	}
	if (!func || !prog || (unsigned)kind > USFT_TRAMP_FMODRET) {
		errno = EINVAL;
		return NULL;
	}
	if (opts) {
		/* sz and nr_args at least; a newer caller's non-zero fields refused */
		if (!usft_opts_valid(opts, opts->sz, offsetofend(struct usft_tramp_opts, nr_args),
				     sizeof(*opts))) {
			errno = EINVAL;
			return NULL;
		}
		nr_args = opts->nr_args;
		if (opts->sz >= sizeof(*opts))
			mode = opts->mode;
		if (mode < USFT_TRAMP_MODE_AUTO || mode > USFT_TRAMP_MODE_JMP ||
		    nr_args < -1) {
			errno = EINVAL;
			return NULL;
		}
	}
	ret = ftrace_lazy_init();
	if (ret) {
		errno = -ret;
		return NULL;
	}
	ip = ftrace_location((unsigned long)func);
	if (!ip) {
		errno = EINVAL;
		return NULL;
	}
	/* a site whose bytes are someone else's would take a link that never fires */
	ret = ftrace_site_state(ip);
	if (ret) {
		if (ret == -EBUSY)
			pr_info("usft: usft_tramp_attach(%s): its site at %#lx held other bytes "
				"than the compiler's NOPs when usft read it (another patcher or a "
				"debugger changed it), so usft never patches it (EBUSY)\n",
				usft_kallsyms_lookup(ip, NULL) ?: "?", ip);
		errno = -ret;
		return NULL;
	}
	link = calloc(1, sizeof(*link));
	if (!link) {
		errno = ENOMEM;
		return NULL;
	}
	link->kind = kind;
	link->prog = prog;
	link->cookie = cookie;
	link->mode = mode;

	pthread_mutex_lock(&tramp_mutex);
	tr = find_tr(ip);
	if (!tr) {
		/*
		 * A direct call of another owner on this function: the direct
		 * API's -EBUSY (register_ftrace_direct()), not the batch API's
		 * -EINVAL that trampoline_update() would report.
		 */
		if (ftrace_find_rec_direct(ip)) {
			ret = -EBUSY;
			goto fail;
		}
		tr = calloc(1, sizeof(*tr));
		if (!tr) {
			ret = -ENOMEM;
			goto fail;
		}
		tr->func = (unsigned long)func;
		tr->ip = ip;
		ret = func_model(tr->func, nr_args, &tr->model);
		if (ret) {
			free(tr);
			goto fail;
		}
		new_tr = true;
	} else if (nr_args >= 0 && nr_args != tr->model.nr_args) {
		ret = -EINVAL;
		goto fail;
	}
	if (tr->cnt[0] + tr->cnt[1] + tr->cnt[2] >= USFT_TRAMP_MAX_LINKS) {
		ret = -E2BIG;
		goto fail_tr;
	}
	link->tr = tr;
	link->next = tr->links[kind];
	tr->links[kind] = link;
	tr->cnt[kind]++;
	ret = trampoline_update(tr);
	if (ret) {
		tr->links[kind] = link->next;
		tr->cnt[kind]--;
		goto fail_tr;
	}
	if (new_tr) {
		tr->next = trampolines;
		trampolines = tr;
	}
	reap_retired();
	pthread_mutex_unlock(&tramp_mutex);
	return link;
fail_tr:
	if (new_tr)
		free(tr);
fail:
	pthread_mutex_unlock(&tramp_mutex);
	free(link);
	errno = -ret;
	return NULL;
}

USFT_API int usft_tramp_detach(struct usft_tramp_link *link)
{
	USFT_API_ENTER(busy);
	struct usft_trampoline *tr;
	struct usft_tramp_link **pp;
	int ret;

	if (busy)
		return usft_err(busy);
	if (!link || !link->tr)
		return usft_err(-EINVAL);
	pthread_mutex_lock(&tramp_mutex);
	tr = link->tr;
	for (pp = &tr->links[link->kind]; *pp && *pp != link; pp = &(*pp)->next)
		;
	if (!*pp) {
		pthread_mutex_unlock(&tramp_mutex);
		return usft_err(-EINVAL);
	}
	*pp = link->next;
	tr->cnt[link->kind]--;
	ret = trampoline_update(tr);
	if (ret) {
		link->next = tr->links[link->kind];
		tr->links[link->kind] = link;
		tr->cnt[link->kind]++;
		pthread_mutex_unlock(&tramp_mutex);
		return usft_err(ret);
	}
	if (!tr->cur) {
		struct usft_trampoline **tp;

		for (tp = &trampolines; *tp && *tp != tr; tp = &(*tp)->next)
			;
		if (*tp)
			*tp = tr->next;
		free(tr);
	}
	reap_retired();
	pthread_mutex_unlock(&tramp_mutex);
	/* nobody runs the callback after we return */
	synchronize_rcu_tasks();
	link->tr = NULL;
	free(link);
	return 0;
}

USFT_API unsigned long usft_tramp_link_misses(const struct usft_tramp_link *link)
{
	return link ? __atomic_load_n(&link->misses, __ATOMIC_RELAXED) : 0;
}
