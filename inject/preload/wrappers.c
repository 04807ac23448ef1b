// SPDX-License-Identifier: MIT
/*
 * inject/preload/wrappers.c - the libc functions libusft-preload.so
 * interposes (the constructor and the USFT_* variables: shim.c).
 *
 * libusft's own sigaction/signal/dlclose carry the version USFT_0.1 and
 * so only bind in programs linked with -lusft; here they are unversioned,
 * bind to every caller and forward to libusft's (dlvsym).  The shim also
 * wraps what must see the real return addresses that the
 * function_graph hook replaced (exceptions, backtrace(), pthread_exit()),
 * what ends the process image (exec*, _exit) so the trace is written first,
 * and dlopen()/dlclose() so functions of loaded objects are traced at once
 * and named before they go.
 */
#include <alloca.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>
#include <usft/fgraph.h>
#include <usft/usft.h>
#include "preload.h"
#include "tracer.h"
#include "trace_mod.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- forwarding to libusft's versioned interposers ---------------------- */

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef __sighandler_t (*signal_fn)(int, __sighandler_t);
typedef int (*dlclose_fn)(void *);
typedef void *(*dlopen_fn)(const char *, int);

static sigaction_fn usft_sigaction_fn;
static signal_fn usft_signal_fn;
static dlclose_fn usft_dlclose_fn;
static dlopen_fn real_dlopen_fn;

/* the exported dlopen() itself, not what the GOT of this shim resolves it to */
extern void *shim_dlopen(const char *file, int mode)
	__attribute__((alias("dlopen"), visibility("hidden"), nothrow));
/* the same for the exec family (routed in an attached process, below), with libc's attributes */
#define SHIM_ALIAS(name) __attribute__((alias(#name), visibility("hidden"))) __THROW
extern int shim_execve(const char *path, char *const argv[], char *const envp[])
	SHIM_ALIAS(execve) __nonnull((1, 2));
extern int shim_execv(const char *path, char *const argv[]) SHIM_ALIAS(execv) __nonnull((1, 2));
extern int shim_execvp(const char *file, char *const argv[]) SHIM_ALIAS(execvp) __nonnull((1, 2));
extern int shim_execvpe(const char *file, char *const argv[], char *const envp[])
	SHIM_ALIAS(execvpe) __nonnull((1, 2));
extern int shim_fexecve(int fd, char *const argv[], char *const envp[])
	SHIM_ALIAS(fexecve) __nonnull((2));
extern int shim_execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
			 int flags) SHIM_ALIAS(execveat) __nonnull((2, 3));
extern int shim_execl(const char *path, const char *arg, ...) SHIM_ALIAS(execl) __nonnull((1, 2));
extern int shim_execlp(const char *file, const char *arg, ...) SHIM_ALIAS(execlp) __nonnull((1, 2));
extern int shim_execle(const char *path, const char *arg, ...) SHIM_ALIAS(execle) __nonnull((1, 2));

static void *next_sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

struct load_order {
	int libusft, libc, i;
};

static int order_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct load_order *o = data;
	const char *base = strrchr(info->dlpi_name, '/');

	base = base ? base + 1 : info->dlpi_name;
	if (o->libusft < 0 && !strncmp(base, "libusft.so", 10))
		o->libusft = o->i;
	if (o->libc < 0 && !strcmp(base, "libc.so.6"))
		o->libc = o->i;
	o->i++;
	return 0;
}

/*
 * libusft finds libc's sigaction/dlclose with dlsym(RTLD_NEXT), which only
 * works when libusft comes before libc in the global scope.  As a mere
 * dependency of this shim it comes after (`usft record` puts it in
 * LD_PRELOAD to avoid that); then its wrappers cannot work and we call
 * libc's functions directly, without signal contexts and dlclose ordering
 * (but see below for a process `usft attach` loaded this shim into).
 */
bool preload_libusft_misplaced;

void preload_resolve_hooks(void)
{
	struct load_order o = { -1, -1, 0 };
	void *libc = NULL;

	if (!real_dlopen_fn)
		real_dlopen_fn = (dlopen_fn)next_sym("dlopen");
	dl_iterate_phdr(order_cb, &o);
	preload_libusft_misplaced = o.libusft >= 0 && o.libc >= 0 && o.libusft > o.libc;
	if (preload_libusft_misplaced && real_dlopen_fn)
		libc = real_dlopen_fn("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	if (libc) {
		void *lu = real_dlopen_fn("libusft.so.0", RTLD_LAZY | RTLD_NOLOAD);

		usft_sigaction_fn = (sigaction_fn)dlsym(libc, "sigaction");
		usft_signal_fn = (signal_fn)dlsym(libc, "signal");
		/*
		 * Loaded by `usft attach` (this shim's dlopen interposes
		 * nothing): libusft's dlclose finds libc's by itself (records.c)
		 * and keeps its ordering, records released under ftrace_lock
		 * before the text goes.  Preloaded after libc, its lookup of
		 * libc would come back through this shim's dlopen.
		 */
		if (lu && dlsym(RTLD_DEFAULT, "dlopen") != (void *)shim_dlopen)
			usft_dlclose_fn = (dlclose_fn)dlvsym(lu, "dlclose", "USFT_0.1");
		if (!usft_dlclose_fn)
			usft_dlclose_fn = (dlclose_fn)dlsym(libc, "dlclose");
		/* the handles: references never given up anyway */
	}
	if (!usft_sigaction_fn)
		usft_sigaction_fn = (sigaction_fn)dlvsym(RTLD_DEFAULT, "sigaction", "USFT_0.1");
	if (!usft_signal_fn)
		usft_signal_fn = (signal_fn)dlvsym(RTLD_DEFAULT, "signal", "USFT_0.1");
	if (!usft_dlclose_fn)
		usft_dlclose_fn = (dlclose_fn)dlvsym(RTLD_DEFAULT, "dlclose", "USFT_0.1");
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
	if (!usft_sigaction_fn)
		preload_resolve_hooks();
	if (!usft_sigaction_fn) {
		errno = ENOSYS;
		return -1;
	}
	return usft_sigaction_fn(sig, act, oact);
}

EXPORT __sighandler_t signal(int sig, __sighandler_t handler)
{
	if (!usft_signal_fn)
		preload_resolve_hooks();
	if (!usft_signal_fn) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	return usft_signal_fn(sig, handler);
}

/*
 * What dlclose() unloads (the object, and dependencies nothing else holds):
 * the loaded objects before and after, by load address and text range.
 * Another object loaded later at the same addresses must not keep the old
 * names (usft_tracer_unmapped()).
 */
struct obj_range {
	unsigned long bias, lo, hi;
};

struct obj_list {
	struct obj_range *v;
	size_t n, cap;
	unsigned long long subs;
};

static int list_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct obj_list *l = data;
	unsigned long lo = ~0UL, hi = 0;

	l->subs = info->dlpi_subs;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (hi <= lo)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		void *p = realloc(l->v, cap * sizeof(*l->v));

		if (!p)
			return 1;	/* a partial list only misses renames */
		l->v = p;
		l->cap = cap;
	}
	l->v[l->n++] = (struct obj_range){ info->dlpi_addr, lo, hi };
	return 0;
}

static bool obj_listed(const struct obj_list *l, const struct obj_range *o)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].bias == o->bias && l->v[i].lo == o->lo && l->v[i].hi == o->hi)
			return true;
	return false;
}

/*
 * The other libc calls that set a disposition go to libusft's versions
 * (glibc's would reach the kernel without passing through sigaction()).
 */
#define FORWARD(ret, name, params, args, fail)					\
	EXPORT ret name params							\
	{									\
		static ret (*fn) params;					\
										\
		if (!fn && !preload_libusft_misplaced)				\
			fn = (ret (*) params)dlvsym(RTLD_DEFAULT, #name, "USFT_0.1"); \
		if (!fn)							\
			fn = (ret (*) params)next_sym(#name);			\
		if (!fn) {							\
			errno = ENOSYS;						\
			return fail;						\
		}								\
		return fn args;							\
	}
FORWARD(__sighandler_t, bsd_signal, (int sig, __sighandler_t h), (sig, h), SIG_ERR)
FORWARD(__sighandler_t, sysv_signal, (int sig, __sighandler_t h), (sig, h), SIG_ERR)
FORWARD(__sighandler_t, __sysv_signal, (int sig, __sighandler_t h), (sig, h), SIG_ERR)
FORWARD(__sighandler_t, sigset, (int sig, __sighandler_t h), (sig, h), SIG_ERR)
FORWARD(int, sigignore, (int sig), (sig), -1)
FORWARD(int, siginterrupt, (int sig, int flag), (sig, flag), -1)
/*
 * The calls that change the signal mask: libusft follows the mask of each
 * thread so that strncpy_from_user_nofault() knows without a system call
 * whether a fault would be delivered (core/nofault.c).
 */
FORWARD(int, pthread_sigmask, (int how, const sigset_t *set, sigset_t *old), (how, set, old),
	ENOSYS)
FORWARD(int, sigprocmask, (int how, const sigset_t *set, sigset_t *old), (how, set, old), -1)
FORWARD(int, sigblock, (int mask), (mask), -1)
FORWARD(int, sigsetmask, (int mask), (mask), -1)
FORWARD(int, sighold, (int sig), (sig), -1)
FORWARD(int, sigrelse, (int sig), (sig), -1)
FORWARD(int, setcontext, (const ucontext_t *ucp), (ucp), -1)

#define FORWARD_JMP(name, buf)							\
	EXPORT __attribute__((noreturn)) void name(buf env, int val)		\
	{									\
		static void (*fn)(buf, int);					\
										\
		if (!fn && !preload_libusft_misplaced)				\
			fn = (void (*)(buf, int))dlvsym(RTLD_DEFAULT, #name, "USFT_0.1"); \
		if (!fn)							\
			fn = (void (*)(buf, int))next_sym(#name);		\
		if (!fn)							\
			abort();						\
		fn(env, val);							\
		__builtin_unreachable();					\
	}
FORWARD_JMP(siglongjmp, sigjmp_buf)
FORWARD_JMP(longjmp, jmp_buf)
FORWARD_JMP(_longjmp, jmp_buf)
FORWARD_JMP(__longjmp_chk, jmp_buf)

static int shim_dlclose(void *handle)
{
	struct obj_list before = { 0 }, after = { 0 };
	int ret, saved;

	if (!usft_dlclose_fn)
		preload_resolve_hooks();
	/* name everything the object's code produced before it goes */
	usft_tracer_flush();
	if (!usft_dlclose_fn)
		return -1;
	/*
	 * The list before, even when nothing records: a recording that starts
	 * while the loader unloads (a START of an attached process) named the
	 * object's functions, and must hear that they went.
	 */
	usft_self_begin();
	dl_iterate_phdr(list_cb, &before);
	usft_self_end();
	ret = usft_dlclose_fn(handle);
	saved = errno;
	usft_self_begin();
	if (usft_tracer_active()) {
		dl_iterate_phdr(list_cb, &after);
		for (size_t i = 0; after.subs != before.subs && i < before.n; i++)
			if (!obj_listed(&after, &before.v[i]))
				usft_tracer_unmapped(before.v[i].lo, before.v[i].hi);
	}
	free(before.v);
	free(after.v);
	usft_self_end();
	errno = saved;
	return ret;
}

EXPORT int dlclose(void *handle)
{
	return shim_dlclose(handle);
}

/*
 * In a process usft attached to, this shim was loaded after libc, so the
 * program's calls to dlclose() and dlopen() bind to libc's: the runtime
 * would never hear of an unload (a batch could then write into text that
 * is gone or now belongs to another object) nor trace a loaded object's
 * functions at once; nor would an exec* wait for a rendezvous to end
 * (its signal, pending across the exec, kills the new image).  So each
 * loaded object's GOT entry for them (an
 * aligned pointer slot, outside its code, that a dynamic relocation of the
 * symbol fills: JUMP_SLOT, GLOB_DAT, or a plain pointer) that holds the
 * definition the loader found, or still its own lazy PLT stub, gets the
 * shim's: what symbol interposition gives a preloaded shim.  One aligned
 * pointer store each; a RELRO page is made writable for it and read-only
 * again.  (No relocation type is named: they are per architecture.)
 */
static void *shim_dlsym(void *handle, const char *name);
static long shim_syscall(long nr, ...);

static const struct {
	const char *name;
	void *shim;
} bind_syms[] = {
	{ "dlclose", (void *)shim_dlclose },
	{ "dlopen", (void *)shim_dlopen },
	/* no rendezvous across an exec (usft_exec_begin()) */
	{ "execve", (void *)shim_execve },
	{ "execv", (void *)shim_execv },
	{ "execvp", (void *)shim_execvp },
	{ "execvpe", (void *)shim_execvpe },
	{ "fexecve", (void *)shim_fexecve },
	{ "execveat", (void *)shim_execveat },
	{ "execl", (void *)shim_execl },
	{ "execlp", (void *)shim_execlp },
	{ "execle", (void *)shim_execle },
	/* syscall(SYS_execve, ...), and what dlsym() finds of the above */
	{ "syscall", (void *)shim_syscall },
	{ "dlsym", (void *)shim_dlsym },
};
#define NR_BIND (sizeof(bind_syms) / sizeof(bind_syms[0]))
#define BIND_SYSCALL (NR_BIND - 2)
#define BIND_DLSYM (NR_BIND - 1)

/*
 * What the loader binds each name to (NULL: leave it), from the first
 * preload_bind_dl(); and every entry changed, with what it held, so that
 * the detach puts each back (preload_unbind_dl()).  Under bind_lock.
 */
static void *bind_def[NR_BIND];
struct bound_slot {
	void **slot;
	void *old, *shim;
	unsigned long bias, lo, hi;	/* its object, which may have gone since */
	bool ro;			/* in a RELRO page */
};
static struct bound_slot *bound;
static size_t nr_bound, bound_cap;
static bool routing;		/* attached: entries routed, objects loaded later too */
static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;

struct bind_ctx {
	unsigned long n;	/* entries changed */
	struct obj_list live;	/* the objects loaded now */
};

/* a d_ptr: glibc relocates it in place on most targets, not on all */
static unsigned long dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) a)
{
	return a < info->dlpi_addr ? a + info->dlpi_addr : a;
}

/* one aligned pointer store, the page made writable around it when RELRO */
static bool slot_store(void **slot, void *val, bool ro)
{
	unsigned long page = (unsigned long)slot & ~((unsigned long)getpagesize() - 1);

	if (ro && mprotect((void *)page, getpagesize(), PROT_READ | PROT_WRITE))
		return false;
	__atomic_store_n(slot, val, __ATOMIC_RELEASE);
	if (ro)
		mprotect((void *)page, getpagesize(), PROT_READ);
	return true;
}

static void bind_slot(const struct obj_range *obj, unsigned long relro_lo,
		      unsigned long relro_hi, void **slot, void *def, void *shim,
		      struct bind_ctx *c)
{
	void *v = __atomic_load_n(slot, __ATOMIC_RELAXED);
	bool ro = (unsigned long)slot >= relro_lo && (unsigned long)slot < relro_hi;
	struct bound_slot *b;

	if ((unsigned long)slot % sizeof(void *) ||
	    (v != def && !((unsigned long)v >= obj->lo && (unsigned long)v < obj->hi)))
		return;		/* not a pointer slot; someone else's interposer, or ours */
	if (nr_bound == bound_cap) {
		size_t cap = bound_cap ? bound_cap * 2 : 64;

		b = realloc(bound, cap * sizeof(*b));
		if (!b)
			return;	/* not routed rather than never put back */
		bound = b;
		bound_cap = cap;
	}
	if (!slot_store(slot, shim, ro))
		return;
	bound[nr_bound++] = (struct bound_slot){ slot, v, shim, obj->bias, obj->lo, obj->hi, ro };
	c->n++;
}

static int bind_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	ElfW(Addr) symtab = 0, strtab = 0, rel[2] = { 0, 0 };
	ElfW(Xword) relsz[2] = { 0, 0 };
	unsigned long relro_lo = 0, relro_hi = 0, xlo[4], xhi[4];
	struct obj_range obj = { info->dlpi_addr, ~0UL, 0 };
	int nx = 0;
	const char *base = strrchr(info->dlpi_name, '/');
	const ElfW(Dyn) *dyn = NULL;
	struct bind_ctx *c = data;

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	/* libc and the loader define it; usft's own objects call libc's */
	if (!strncmp(base, "libc.so", 7) || !strncmp(base, "ld-linux", 8) ||
	    !strncmp(base, "libusft", 7) || !strncmp(base, "linux-vdso", 10))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		unsigned long a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)a;
		if (ph->p_type == PT_GNU_RELRO) {
			/* the loader protects whole pages only */
			relro_lo = a & ~((unsigned long)getpagesize() - 1);
			relro_hi = (a + ph->p_memsz) & ~((unsigned long)getpagesize() - 1);
		}
		if (ph->p_type == PT_LOAD) {
			obj.lo = a < obj.lo ? a : obj.lo;
			obj.hi = a + ph->p_memsz > obj.hi ? a + ph->p_memsz : obj.hi;
			if ((ph->p_flags & PF_X) && nx < 4) {
				xlo[nx] = a;
				xhi[nx++] = a + ph->p_memsz;
			}
		}
	}
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB: symtab = dyn_ptr(info, dyn->d_un.d_ptr); break;
		case DT_STRTAB: strtab = dyn_ptr(info, dyn->d_un.d_ptr); break;
		case DT_JMPREL: rel[0] = dyn_ptr(info, dyn->d_un.d_ptr); break;
		case DT_PLTRELSZ: relsz[0] = dyn->d_un.d_val; break;
		case DT_RELA: rel[1] = dyn_ptr(info, dyn->d_un.d_ptr); break;
		case DT_RELASZ: relsz[1] = dyn->d_un.d_val; break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	for (int k = 0; k < 2; k++) {
		const ElfW(Rela) *r = (const ElfW(Rela) *)rel[k];

		for (size_t i = 0; r && i < relsz[k] / sizeof(*r); i++) {
			const ElfW(Sym) *sym = (const ElfW(Sym) *)symtab + ELF64_R_SYM(r[i].r_info);
			unsigned long at = info->dlpi_addr + r[i].r_offset;
			bool in_code = false;

			for (int x = 0; x < nx; x++)
				in_code |= at >= xlo[x] && at < xhi[x];
			if (!ELF64_R_SYM(r[i].r_info) || in_code)
				continue;
			for (size_t b = 0; b < NR_BIND; b++)
				if (bind_def[b] &&
				    !strcmp((const char *)strtab + sym->st_name, bind_syms[b].name))
					bind_slot(&obj, relro_lo, relro_hi, (void **)at, bind_def[b],
						  bind_syms[b].shim, c);
		}
	}
	return 0;
}

/* the entries of objects no longer loaded are forgotten (their memory went) */
static void bound_prune(const struct obj_list *live)
{
	size_t k = 0;

	for (size_t i = 0; i < nr_bound; i++) {
		struct obj_range o = { bound[i].bias, bound[i].lo, bound[i].hi };

		if (obj_listed(live, &o))
			bound[k++] = bound[i];
	}
	nr_bound = k;
}

/*
 * preload_bind_dl() - route the program's dlopen(), dlclose(), exec*,
 * syscall() and dlsym() calls through the shim (an attached process; a
 * no-op where the shim or libusft interposes already), in every object
 * loaded now; @loaded: only if routing is on (a dlopen() since the attach:
 * the new object's entries too).  Return: the number of GOT entries changed.
 */
unsigned long preload_bind_dl(bool loaded)
{
	struct bind_ctx c = { 0 };
	bool any = false;
	Dl_info di;

	usft_self_begin();
	pthread_mutex_lock(&bind_lock);
	if (loaded && !routing)
		goto out;
	for (size_t b = 0; b < NR_BIND; b++) {
		void *def = bind_def[b] ? bind_def[b] : dlsym(RTLD_DEFAULT, bind_syms[b].name);

		/* preloaded, or linked with -lusft: usft's own binds already */
		if (def && !(dladdr(def, &di) && di.dli_fname && strstr(di.dli_fname, "libusft")))
			bind_def[b] = def;
		any |= bind_def[b] != NULL;
	}
	if (any) {
		dl_iterate_phdr(list_cb, &c.live);
		bound_prune(&c.live);
		dl_iterate_phdr(bind_cb, &c);
		routing = true;
		free(c.live.v);
	}
out:
	pthread_mutex_unlock(&bind_lock);
	usft_self_end();
	return c.n;
}

/*
 * preload_unbind_dl() - the detach: every entry preload_bind_dl() changed
 * gets back what it held (libc's function, or the object's lazy PLT stub),
 * where its object is still loaded and the entry still holds the shim's
 * (compare, then one aligned store).  A call that read the shim's address
 * before still runs the shim's function, which stays loaded and forwards to
 * libc's.  Return: entries put back.
 */
unsigned long preload_unbind_dl(void)
{
	struct obj_list live = { 0 };
	unsigned long n = 0;

	usft_self_begin();
	pthread_mutex_lock(&bind_lock);
	routing = false;
	dl_iterate_phdr(list_cb, &live);
	bound_prune(&live);
	for (size_t i = 0; i < nr_bound; i++)
		if (__atomic_load_n(bound[i].slot, __ATOMIC_RELAXED) == bound[i].shim &&
		    slot_store(bound[i].slot, bound[i].old, bound[i].ro))
			n++;
	nr_bound = 0;
	free(live.v);
	pthread_mutex_unlock(&bind_lock);
	usft_self_end();
	return n;
}

/*
 * A routed dlsym(): a lookup of one of the names above (any handle but
 * RTLD_NEXT) that finds what the loader binds it to gets the shim's, as
 * in a process the shim was preloaded into; every other lookup is a tail
 * call of libc's, so that glibc still sees the caller's return address
 * (RTLD_NEXT and RTLD_DEFAULT depend on the calling object).
 */
__attribute__((optimize("optimize-sibling-calls")))
static void *shim_dlsym(void *handle, const char *name)
{
	void *(*real)(void *, const char *) = (void *(*)(void *, const char *))bind_def[BIND_DLSYM];

	if (handle != RTLD_NEXT && name) {
		for (size_t b = 0; b < NR_BIND; b++)
			if (bind_def[b] && !strcmp(name, bind_syms[b].name)) {
				void *v = real(handle, name);

				return v == bind_def[b] ? bind_syms[b].shim : v;
			}
	}
	return real(handle, name);
}

/* ---- dlopen --------------------------------------------------------------- */

/*
 * glibc searches a bare name in the DT_RPATH/DT_RUNPATH of the object that
 * called dlopen(), which would now be this shim.  So for a bare name the
 * caller's RPATH (when it has no RUNPATH) and RUNPATH are searched here
 * first, in glibc's order; LD_LIBRARY_PATH, the cache and the default
 * directories do not depend on the caller and are left to dlopen().
 */
static const char *dyn_str(struct link_map *lm, ElfW(Sxword) tag)
{
	const char *strtab = NULL;
	ElfW(Xword) off = 0;
	bool found = false;

	for (ElfW(Dyn) *d = lm->l_ld; d && d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_STRTAB) {
			ElfW(Addr) a = d->d_un.d_ptr;

			/* glibc relocates d_ptr in place on most targets; not on all */
			strtab = (const char *)(a < lm->l_addr ? a + lm->l_addr : a);
		} else if (d->d_tag == tag) {
			off = d->d_un.d_val;
			found = true;
		}
	}
	return found && strtab ? strtab + off : NULL;
}

static void object_dir(struct link_map *lm, char *dir, size_t len)
{
	char path[PATH_MAX];
	const char *name = lm->l_name;
	char *slash;

	if (!name || !*name) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

		if (n <= 0) {
			dir[0] = 0;
			return;
		}
		path[n] = 0;
	} else if (!realpath(name, path)) {
		snprintf(path, sizeof(path), "%s", name);
	}
	slash = strrchr(path, '/');
	if (slash)
		*slash = 0;
	snprintf(dir, len, "%s", path);
}

/* search one colon-separated list; Return: true with @out set when found */
static bool search_list(const char *list, struct link_map *lm, const char *file,
			char *out, size_t len)
{
	char origin[PATH_MAX] = "";
	const char *p = list;

	while (p && *p) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char dir[PATH_MAX], *o = dir;
		size_t i = 0;
		struct stat st;

		while (i < n && (size_t)(o - dir) < sizeof(dir) - 1) {
			if (lm && (!strncmp(p + i, "$ORIGIN", 7) || !strncmp(p + i, "${ORIGIN}", 9))) {
				if (!origin[0])
					object_dir(lm, origin, sizeof(origin));
				o += snprintf(o, sizeof(dir) - (o - dir), "%s", origin);
				i += p[i + 1] == '{' ? 9 : 7;
				if ((size_t)(o - dir) >= sizeof(dir))
					o = dir + sizeof(dir) - 1;
			} else {
				*o++ = p[i++];
			}
		}
		*o = 0;
		if (n && snprintf(out, len, "%s/%s", dir, file) < (int)len &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode))
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

static bool in_ld_library_path(const char *file)
{
	const char *llp = getenv("LD_LIBRARY_PATH");
	char path[PATH_MAX];

	return llp && *llp && search_list(llp, NULL, file, path, sizeof(path));
}

static void *dlopen_like(const char *file, int mode, void *caller)
{
	char path[PATH_MAX];
	struct link_map *lm = NULL, *main_map = NULL;
	const char *rpath, *runpath;
	Dl_info di;
	void *h;

	if (!file || strchr(file, '/'))
		return real_dlopen_fn(file, mode);
	/* already loaded (matched by name or soname, whatever the caller) */
	h = real_dlopen_fn(file, RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		void *h2 = real_dlopen_fn(file, mode);

		if (usft_dlclose_fn)
			usft_dlclose_fn(h);
		return h2;
	}
	if (!dladdr1(caller, &di, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return real_dlopen_fn(file, mode);
	rpath = dyn_str(lm, DT_RPATH);
	runpath = dyn_str(lm, DT_RUNPATH);
	if (!runpath) {
		if (rpath && search_list(rpath, lm, file, path, sizeof(path)))
			return real_dlopen_fn(path, mode);
		/* then the main program's DT_RPATH */
		main_map = lm;
		while (main_map->l_prev)
			main_map = main_map->l_prev;
		if (main_map != lm && !dyn_str(main_map, DT_RUNPATH)) {
			const char *mr = dyn_str(main_map, DT_RPATH);

			if (mr && search_list(mr, main_map, file, path, sizeof(path)))
				return real_dlopen_fn(path, mode);
		}
	} else if (!in_ld_library_path(file) && search_list(runpath, lm, file, path, sizeof(path))) {
		return real_dlopen_fn(path, mode);
	}
	return real_dlopen_fn(file, mode);
}

EXPORT void *dlopen(const char *file, int mode)
{
	void *caller = __builtin_extract_return_addr(__builtin_return_address(0));
	int saved;
	void *h;

	if (!real_dlopen_fn)
		preload_resolve_hooks();
	if (!real_dlopen_fn)
		return NULL;
	h = dlopen_like(file, mode, caller);
	if (h) {
		saved = errno;
		/* attached: the new objects' own calls are routed too */
		preload_bind_dl(true);
		usft_tracer_after_dlopen();
		/* the tracefs's cached :mod: filters (RTLD_NOLOAD brings nothing in) */
		if (!(mode & RTLD_NOLOAD))
			usft_tracefs_after_dlopen();
		errno = saved;
	}
	return h;
}

/* ---- the end of a process image ------------------------------------------ */

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);
typedef long (*syscall_fn)(long, ...);

static void before_exec(void)
{
	int saved = errno;

	usft_tracer_drain();
	errno = saved;
}

/*
 * Children started with an environment of their own (execve(), the other
 * exec*e, posix_spawn*) get usft's settings too, so they are traced like
 * the rest of the run: every USFT_* variable and LD_PRELOAD as this image
 * had them at start-up, added where @envp lacks them (the child's own
 * values win); an LD_PRELOAD of the child's own without the shim gets ours
 * in front.  The new vector lives in a private mapping (an exec may run in
 * a vfork() child, where malloc() is not safe); carry_env_done() gives it
 * back when the exec failed or the spawn returned.
 */
static char **carried;		/* "NAME=value" strings, NULL-terminated */
static size_t nr_carried;
static const char *shim_path;	/* this shim's file, as LD_PRELOAD names it */

void preload_carry_env_init(void)
{
	extern char **environ;
	size_t n = 0;
	Dl_info di;

	if (dladdr((void *)preload_carry_env_init, &di) && di.dli_fname)
		shim_path = di.dli_fname;
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "USFT_", 5) || !strncmp(*e, "LD_PRELOAD=", 11))
			n++;
	carried = calloc(n + 1, sizeof(*carried));
	if (!carried)
		return;
	for (char **e = environ; e && *e && nr_carried < n; e++)
		if (!strncmp(*e, "USFT_", 5) || !strncmp(*e, "LD_PRELOAD=", 11))
			if ((carried[nr_carried] = strdup(*e)))
				nr_carried++;
}

static size_t name_len(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq ? (size_t)(eq - kv) + 1 : strlen(kv);
}

static char *const *env_find(char *const envp[], const char *kv)
{
	size_t n = name_len(kv);

	for (char *const *e = envp; e && *e; e++)
		if (!strncmp(*e, kv, n))
			return e;
	return NULL;
}

static bool preload_has_shim(const char *val)
{
	const char *base = shim_path ? strrchr(shim_path, '/') : NULL;

	return !shim_path || strstr(val, shim_path) || (base && strstr(val, base + 1));
}

struct env_map {
	void *mem;
	size_t len;
};

static char *const *carry_env(char *const envp[], struct env_map *m)
{
	size_t n = 0, add = 0, bytes;
	char **out, *str = NULL;
	char *const *ld = NULL;
	const char *ours = NULL;

	m->mem = NULL;
	if (!nr_carried)
		return envp;
	for (char *const *e = envp; e && *e; e++)
		n++;
	for (size_t i = 0; i < nr_carried; i++) {
		char *const *have = env_find(envp, carried[i]);

		if (!strncmp(carried[i], "LD_PRELOAD=", 11)) {
			ours = carried[i] + 11;
			if (have && !preload_has_shim(*have + 11))
				ld = have;
		}
		if (!have)
			add++;
	}
	if (!add && !ld)
		return envp;
	bytes = (n + add + 1) * sizeof(char *);
	if (ld)
		bytes += strlen(*ld) + strlen(ours) + 2;
	m->len = (bytes + 4095) & ~4095UL;
	m->mem = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->mem == MAP_FAILED) {
		m->mem = NULL;
		return envp;	/* the child runs untraced rather than not at all */
	}
	out = m->mem;
	if (ld) {
		str = (char *)(out + n + add + 1);
		sprintf(str, "LD_PRELOAD=%s %s", ours, *ld + 11);
	}
	n = 0;
	for (char *const *e = envp; e && *e; e++)
		out[n++] = e == ld ? str : *e;
	for (size_t i = 0; i < nr_carried; i++)
		if (!env_find(envp, carried[i]))
			out[n++] = carried[i];
	out[n] = NULL;
	return out;
}

static void carry_env_done(struct env_map *m)
{
	if (m->mem)
		munmap(m->mem, m->len);
}

/* an exec* that takes an environment: the call, made by exec_env() */
struct exec_call {
	void *real;
	int fd;			/* fexecve, execveat */
	const char *path;	/* execve, execvpe (a file name), execveat */
	int flags;		/* execveat */
	char *const *argv;
	long nr;		/* syscall(): SYS_execve or SYS_execveat, */
	const long *sysargs;	/* its six arguments */
};

static int exec_env(const char *name, struct exec_call *c, char *const envp[])
{
	struct env_map m;
	char *const *env;
	int ret, saved, tok;

	if (!c->real) {
		errno = ENOSYS;
		return -1;
	}
	before_exec();
	env = carry_env(envp, &m);
	tok = usft_exec_begin();
	usft_control_exec(true);
	if (!strcmp(name, "syscall")) {
		long a[6];

		memcpy(a, c->sysargs, sizeof(a));
		a[c->nr == SYS_execve ? 2 : 3] = (long)env;
		ret = (int)((syscall_fn)c->real)(c->nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	} else if (!strcmp(name, "fexecve"))
		ret = ((fexecve_fn)c->real)(c->fd, c->argv, env);
	else if (!strcmp(name, "execveat"))
		ret = ((execveat_fn)c->real)(c->fd, c->path, c->argv, env, c->flags);
	else
		ret = ((execve_fn)c->real)(c->path, c->argv, env);
	saved = errno;
	usft_control_exec(false);
	usft_exec_end(tok);
	carry_env_done(&m);
	errno = saved;
	return ret;
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	static void *real;
	struct exec_call c = { .path = path, .argv = argv };

	if (!real)
		real = next_sym("execve");
	c.real = real;
	return exec_env("execve", &c, envp);
}

/* execv, execvp: the environment is the process's own */
static int exec_plain(execv_fn real, const char *path, char *const argv[])
{
	int ret, saved, tok;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	before_exec();
	tok = usft_exec_begin();
	usft_control_exec(true);
	ret = real(path, argv);
	saved = errno;
	usft_control_exec(false);
	usft_exec_end(tok);
	errno = saved;
	return ret;
}

EXPORT int execv(const char *path, char *const argv[])
{
	static execv_fn real;

	if (!real)
		real = (execv_fn)next_sym("execv");
	return exec_plain(real, path, argv);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	static execv_fn real;

	if (!real)
		real = (execv_fn)next_sym("execvp");
	return exec_plain(real, file, argv);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	static void *real;
	struct exec_call c = { .path = file, .argv = argv };

	if (!real)
		real = next_sym("execvpe");
	c.real = real;
	return exec_env("execvpe", &c, envp);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	static void *real;
	struct exec_call c = { .fd = fd, .argv = argv };

	if (!real)
		real = next_sym("fexecve");
	c.real = real;
	return exec_env("fexecve", &c, envp);
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
		    int flags)
{
	static void *real;
	struct exec_call c = { .fd = dirfd, .path = path, .flags = flags, .argv = argv };

	if (!real)
		real = next_sym("execveat");
	c.real = real;
	return exec_env("execveat", &c, envp);
}

/*
 * syscall(SYS_execve / SYS_execveat, ...): the same as the wrappers above
 * (the trace drained, the environment carried, no rendezvous across it).
 * Every other number goes straight to libc's syscall() (the six argument
 * registers passed on, as glibc's own reads them); no errno is touched.
 */
static long syscall_with(syscall_fn real, long nr, const long a[6])
{
	struct exec_call c = { .real = (void *)real, .nr = nr, .sysargs = a };

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (nr != SYS_execve && nr != SYS_execveat)
		return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	return exec_env("syscall", &c, (char *const *)a[nr == SYS_execve ? 2 : 3]);
}

#define SYSCALL_ARGS(nr, a)						\
	do {								\
		va_list ap;						\
									\
		va_start(ap, nr);					\
		for (int i = 0; i < 6; i++)				\
			a[i] = va_arg(ap, long);			\
		va_end(ap);						\
	} while (0)

EXPORT long syscall(long nr, ...)
{
	static syscall_fn real;
	long a[6];

	if (!real)
		real = (syscall_fn)next_sym("syscall");
	SYSCALL_ARGS(nr, a);
	return syscall_with(real, nr, a);
}

/* the routed one (an attached process): libc's is what the loader bound */
static long shim_syscall(long nr, ...)
{
	long a[6];

	SYSCALL_ARGS(nr, a);
	return syscall_with((syscall_fn)bind_def[BIND_SYSCALL], nr, a);
}

typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			const posix_spawnattr_t *, char *const[], char *const[]);

/* posix_spawn returns its error and leaves errno alone */
static int spawn_env(spawn_fn real, pid_t *pid, const char *path,
		     const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
		     char *const argv[], char *const envp[])
{
	int saved = errno, ret;
	struct env_map m;
	char *const *env;

	if (!real)
		return ENOSYS;
	env = carry_env(envp, &m);
	ret = real(pid, path, fa, attr, argv, env);
	carry_env_done(&m);
	errno = saved;
	return ret;
}

EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	static spawn_fn real;

	if (!real)
		real = (spawn_fn)next_sym("posix_spawn");
	return spawn_env(real, pid, path, fa, attr, argv, envp);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	static spawn_fn real;

	if (!real)
		real = (spawn_fn)next_sym("posix_spawnp");
	return spawn_env(real, pid, file, fa, attr, argv, envp);
}

/*
 * daemon(): the parent leaves from inside it through glibc's own _exit()
 * (not the one above), right after the fork: write its trace first, the
 * kept-back entries of every thread included, as for an exec.  The child
 * goes on under a session of its own (atfork).
 */
EXPORT int daemon(int nochdir, int noclose)
{
	static int (*real)(int, int);

	if (!real)
		real = (int (*)(int, int))next_sym("daemon");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	before_exec();
	return real(nochdir, noclose);
}

/* execl*: collect the variadic arguments, then the vector forms above */
#define COLLECT_ARGS(arg0, ap, argv)						\
	do {									\
		size_t n_ = 1;							\
		va_list c_;							\
		va_copy(c_, ap);						\
		while (va_arg(c_, char *))					\
			n_++;							\
		va_end(c_);							\
		argv = alloca((n_ + 1) * sizeof(char *));			\
		argv[0] = (char *)(arg0);					\
		for (size_t i_ = 1; i_ <= n_; i_++)				\
			argv[i_] = va_arg(ap, char *);				\
	} while (0)

EXPORT int execl(const char *path, const char *arg, ...)
{
	char **argv;
	va_list ap;

	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	return shim_execv(path, argv);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	char **argv;
	va_list ap;

	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	return shim_execvp(file, argv);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	char **argv, **envp = NULL;
	va_list ap;

	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	envp = va_arg(ap, char **);
	va_end(ap);
	return shim_execve(path, argv, envp);
}

EXPORT void _exit(int status)
{
	static void (*real)(int);

	if (!real)
		real = (void (*)(int))next_sym("_exit");
	usft_tracer_stop();
	usft_control_exit();
	real(status);
	__builtin_unreachable();
}

EXPORT void _Exit(int status)
{
	_exit(status);
}

/* ---- what needs the real return addresses ------------------------------- */

/*
 * The function_graph hook leaves return_to_handler in the return slots of
 * hooked frames; an unwinder cannot get past it.  Around every unwinder
 * entry the real addresses are put back (usft_fgraph_unwind_begin()); when
 * a C++ catch is entered, or the walk returns, frames at or below the
 * current one are gone and the live ones get their hook back
 * (usft_fgraph_unwind_end()).  The slot of our own return address bounds
 * what is gone: everything called from our caller's frame.
 */
#define MY_RETURN_SLOT() ((unsigned long)__builtin_frame_address(0) + sizeof(void *))

EXPORT _Unwind_Reason_Code _Unwind_RaiseException(struct _Unwind_Exception *exc)
{
	static _Unwind_Reason_Code (*real)(struct _Unwind_Exception *);
	_Unwind_Reason_Code r;

	if (!real)
		real = (_Unwind_Reason_Code (*)(struct _Unwind_Exception *))
			next_sym("_Unwind_RaiseException");
	usft_fgraph_unwind_begin();
	r = real(exc);
	/* no handler: nothing was unwound */
	usft_fgraph_unwind_end(MY_RETURN_SLOT());
	return r;
}

EXPORT _Unwind_Reason_Code _Unwind_Resume_or_Rethrow(struct _Unwind_Exception *exc)
{
	static _Unwind_Reason_Code (*real)(struct _Unwind_Exception *);
	_Unwind_Reason_Code r;

	if (!real)
		real = (_Unwind_Reason_Code (*)(struct _Unwind_Exception *))
			next_sym("_Unwind_Resume_or_Rethrow");
	usft_fgraph_unwind_begin();
	r = real(exc);
	usft_fgraph_unwind_end(MY_RETURN_SLOT());
	return r;
}

EXPORT void _Unwind_Resume(struct _Unwind_Exception *exc)
{
	static void (*real)(struct _Unwind_Exception *);

	if (!real)
		real = (void (*)(struct _Unwind_Exception *))next_sym("_Unwind_Resume");
	/* a cleanup in between may have rehooked frames (a nested catch) */
	usft_fgraph_unwind_begin();
	real(exc);
	__builtin_unreachable();
}

EXPORT _Unwind_Reason_Code _Unwind_ForcedUnwind(struct _Unwind_Exception *exc,
						_Unwind_Stop_Fn stop, void *arg)
{
	static _Unwind_Reason_Code (*real)(struct _Unwind_Exception *, _Unwind_Stop_Fn, void *);
	_Unwind_Reason_Code r;

	if (!real)
		real = (_Unwind_Reason_Code (*)(struct _Unwind_Exception *, _Unwind_Stop_Fn, void *))
			next_sym("_Unwind_ForcedUnwind");
	usft_fgraph_unwind_begin();
	r = real(exc, stop, arg);
	usft_fgraph_unwind_end(MY_RETURN_SLOT());
	return r;
}

EXPORT _Unwind_Reason_Code _Unwind_Backtrace(_Unwind_Trace_Fn fn, void *arg)
{
	static _Unwind_Reason_Code (*real)(_Unwind_Trace_Fn, void *);
	_Unwind_Reason_Code r;

	if (!real)
		real = (_Unwind_Reason_Code (*)(_Unwind_Trace_Fn, void *))
			next_sym("_Unwind_Backtrace");
	usft_fgraph_unwind_begin();
	r = real(fn, arg);
	usft_fgraph_unwind_end(MY_RETURN_SLOT());
	return r;
}

EXPORT void *__cxa_begin_catch(void *exc)
{
	static void *(*real)(void *);
	void *r;

	if (!real)
		real = (void *(*)(void *))next_sym("__cxa_begin_catch");
	r = real(exc);
	/* we run in the catching frame: every frame below it is gone */
	usft_fgraph_unwind_end(MY_RETURN_SLOT());
	return r;
}

/*
 * The personality routines decide, frame by frame, where phase 2 lands.
 * When one installs a landing pad (a cleanup or a catch), every frame
 * below the landing frame is gone: say so now, so calls the landing pad
 * makes (destructors) are not shown inside frames that no longer exist.
 * In phase 2 the context a personality routine gets still carries the CFA
 * of the frame below the landing one (libgcc updates it after the call):
 * that frame's return slot is the word under it.  Rehooking the live
 * frames here is undone by _Unwind_Resume() if the unwind goes on.
 */
typedef _Unwind_Reason_Code (*personality_fn)(int, _Unwind_Action, _Unwind_Exception_Class,
					      struct _Unwind_Exception *, struct _Unwind_Context *);

static _Unwind_Reason_Code personality(personality_fn real, int version, _Unwind_Action actions,
				       _Unwind_Exception_Class cls, struct _Unwind_Exception *exc,
				       struct _Unwind_Context *ctx)
{
	static unsigned long (*get_cfa)(struct _Unwind_Context *);
	_Unwind_Reason_Code r = real(version, actions, cls, exc, ctx);

	if (r == _URC_INSTALL_CONTEXT && (actions & _UA_CLEANUP_PHASE)) {
		if (!get_cfa)
			get_cfa = (unsigned long (*)(struct _Unwind_Context *))
				next_sym("_Unwind_GetCFA");
		if (get_cfa)
			usft_fgraph_unwind_end(get_cfa(ctx) - sizeof(void *));
	}
	return r;
}

EXPORT _Unwind_Reason_Code __gxx_personality_v0(int version, _Unwind_Action actions,
						_Unwind_Exception_Class cls,
						struct _Unwind_Exception *exc,
						struct _Unwind_Context *ctx)
{
	static personality_fn real;

	if (!real)
		real = (personality_fn)next_sym("__gxx_personality_v0");
	return personality(real, version, actions, cls, exc, ctx);
}

EXPORT _Unwind_Reason_Code __gcc_personality_v0(int version, _Unwind_Action actions,
						_Unwind_Exception_Class cls,
						struct _Unwind_Exception *exc,
						struct _Unwind_Context *ctx)
{
	static personality_fn real;

	if (!real)
		real = (personality_fn)next_sym("__gcc_personality_v0");
	return personality(real, version, actions, cls, exc, ctx);
}

/* glibc's backtrace() reaches libgcc through a private pointer, not the PLT */
EXPORT int backtrace(void **buffer, int size)
{
	static int (*real)(void **, int);
	int n;

	if (!real)
		real = (int (*)(void **, int))next_sym("backtrace");
	usft_fgraph_unwind_begin();
	n = real(buffer, size);
	usft_fgraph_unwind_end(MY_RETURN_SLOT());
	return n;
}

/*
 * Coroutines: each context has its own shadow stack (function_graph).  The
 * real swapcontext() saves the context inside this wrapper, so whatever
 * resumes it later (another swapcontext(), setcontext(), a uc_link at the
 * end of a makecontext() function) comes back here, and the context's
 * shadow stack is taken up again.  setcontext() needs no wrapper: the
 * context it leaves is gone, as with longjmp(), and the one it enters was
 * parked here or is found by its frames (core/fgraph.c).
 */
EXPORT int swapcontext(ucontext_t *oucp, const ucontext_t *ucp)
{
	static int (*real)(ucontext_t *, const ucontext_t *);
	void *h;
	int ret, saved;

	if (!real)
		real = (int (*)(ucontext_t *, const ucontext_t *))next_sym("swapcontext");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	h = usft_fgraph_context_save();
	ret = real(oucp, ucp);
	saved = errno;
	usft_fgraph_context_resume(h);
	errno = saved;
	return ret;
}

/* glibc's pthread_exit() also calls the unwinder through a private pointer */
EXPORT void pthread_exit(void *retval)
{
	static void (*real)(void *);

	if (!real)
		real = (void (*)(void *))next_sym("pthread_exit");
	usft_fgraph_unwind_begin();
	real(retval);
	__builtin_unreachable();
}

