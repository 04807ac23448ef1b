// SPDX-License-Identifier: MIT
/*
 * Fault injection along whole updates: for each kind (malloc, mprotect,
 * mmap, membarrier) and every N, a fresh child makes the Nth such call of
 * the runtime fail during a scenario (register/re-filter/unregister ops,
 * batch direct add/mod/del, trampoline attach/detach), then checks: every
 * API returned 0 or a documented errno; no site is half-patched (each is
 * nop5, or a complete call/jmp); no mapping is writable and executable;
 * every function still computes its result; a live runtime ends with all
 * sites nop5, a dead one (-ENODEV everywhere) wrote nothing after dying.
 * Runs under LD_PRELOAD=libusft_fault.so (ctest sets it).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <usft/trampoline.h>
#include "test_common.h"

enum { F_NONE, F_MALLOC, F_MPROTECT, F_MMAP, F_MEMBARRIER };

TRACEE long cf_fault_a(long x) { TRACEE_BODY(); return x + 1; }
TRACEE long cf_fault_b(long x) { TRACEE_BODY(); return x * 2; }
TRACEE long cf_fault_c(long x) { TRACEE_BODY(); return x - 3; }

static const tc_fn_t fns[] = { cf_fault_a, cf_fault_b, cf_fault_c };
extern const char fault_ret_tramp[];

static void (*arm)(int, long);
static int (*fired)(void);
static void (*disarm)(void);

static notrace unsigned long prog(const unsigned long *ctx, void *cookie)
{
	return 0;
}

static notrace bool ok_err(int r)
{
	return r == 0 || r == -ENOMEM || r == -ENODEV || r == -EPERM || r == -EBUSY ||
	       r == -EINVAL;
}

/* exit codes: 0 consistent, 2 the fault never fired, 10+ which check failed */
static notrace int child(int kind, long n)
{
	static struct tc_counter c;
	static struct ftrace_ops dops;
	struct ftrace_hash *h;
	struct usft_tramp_link *l;
	struct usft_tramp_opts o = { .sz = sizeof(o), .nr_args = 1 };
	unsigned char b[5];
	FILE *maps;
	char line[512];
	int r;

	if (usft_init())
		return 11;
	tc_counter_init(&c, 0);
	arm(kind, n);
	r = tc_set_filter(&c.ops, "cf_fault_*", 1);
	if (!ok_err(r))
		return 12;
	r = register_ftrace_function(&c.ops);
	if (!ok_err(r))
		return 13;
	for (int i = 0; i < 3; i++)
		fns[i](i);
	tc_set_filter(&c.ops, "cf_fault_b", 1);
	r = unregister_ftrace_function(&c.ops);
	if (!ok_err(r))
		return 14;
	h = alloc_ftrace_hash(2);
	if (h) {
		for (int i = 0; i < 3; i++)
			add_ftrace_hash_entry_direct(h, ftrace_location((unsigned long)fns[i]),
						     (unsigned long)fault_ret_tramp);
		r = update_ftrace_direct_add(&dops, h);
		if (!ok_err(r))
			return 15;
		for (int i = 0; i < 3; i++)
			fns[i](i);
		if (!r && (r = update_ftrace_direct_del(&dops, h)) && !ok_err(r))
			return 16;
		free_ftrace_hash(h);
	} else {
		r = 0;
	}
	l = usft_tramp_attach(cf_fault_c, USFT_TRAMP_FEXIT, prog, NULL, &o);
	if (l) {
		fns[2](5);
		r = usft_tramp_detach(l);
		if (!ok_err(r))
			return 17;
		if (!r)
			l = NULL;
	}
	disarm();

	/*
	 * A call that failed left its attachment as it was: with memory back,
	 * the same cleanup calls must now succeed (or the runtime is dead).
	 */
	if (!tc_stat().disabled) {
		if (c.ops.flags & FTRACE_OPS_FL_ENABLED)
			unregister_ftrace_function(&c.ops);
		if (dops.flags & FTRACE_OPS_FL_ENABLED) {
			struct ftrace_hash *all = alloc_ftrace_hash(2);

			for (int i = 0; all && i < 3; i++) {
				unsigned long site = ftrace_location((unsigned long)fns[i]);

				if (usft_site_bytes(site, b, 5) == 5 && b[0] == 0xe8)
					add_ftrace_hash_entry_direct(all, site,
								     (unsigned long)fault_ret_tramp);
			}
			if (!all || update_ftrace_direct_del(&dops, all))
				return 18;
			free_ftrace_hash(all);
		}
		if (l && usft_tramp_detach(l))
			return 19;
	}

	/* the checks */
	for (int i = 0; i < 3; i++) {
		if (fns[i](7) != (i == 0 ? 8 : i == 1 ? 14 : 4))
			return 20;
		if (usft_site_bytes((unsigned long)fns[i], b, 5) != 5)
			return 21;
		if (memcmp(b, "\x0f\x1f\x44\x00\x00", 5) && b[0] != 0xe8 && b[0] != 0xe9)
			return 22;	/* half-patched */
		if (!tc_stat().disabled && memcmp(b, "\x0f\x1f\x44\x00\x00", 5))
			return 23;	/* alive but a site left enabled */
	}
	maps = fopen("/proc/self/maps", "re");
	if (!maps)
		return 24;
	while (fgets(line, sizeof(line), maps)) {
		char perms[5];

		if (sscanf(line, "%*s %4s", perms) == 1 && perms[1] == 'w' && perms[2] == 'x') {
			fclose(maps);
			return 25;	/* W+X left behind */
		}
	}
	fclose(maps);
	if (tc_stat().disabled && register_ftrace_function(&c.ops) != -ENODEV)
		return 26;
	return fired() ? 0 : 2;
}

static void sweep(int kind, const char *name)
{
	long n;
	int dead = 0;

	for (n = 1; n < 400; n++) {
		pid_t pid = fork();
		int st;

		cr_assert_neq(pid, -1);
		if (!pid)
			_exit(child(kind, n));
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st), "%s #%ld: child died (signal %d)", name, n,
			  WIFSIGNALED(st) ? WTERMSIG(st) : 0);
		if (WEXITSTATUS(st) == 2)
			break;
		cr_assert_eq(WEXITSTATUS(st), 0, "%s #%ld: check %d failed", name, n,
			     WEXITSTATUS(st));
		dead++;
	}
	cr_assert_lt(n, 400, "%s: the scenario never completed without the fault", name);
	cr_assert_gt(n, 1, "%s: no call of this kind along the scenario", name);
	cr_log_info("%s: %ld fault points", name, n - 1);
}

static void setup(void)
{
	arm = (void (*)(int, long))dlsym(RTLD_DEFAULT, "fault_arm");
	fired = (int (*)(void))dlsym(RTLD_DEFAULT, "fault_fired");
	disarm = (void (*)(void))dlsym(RTLD_DEFAULT, "fault_disarm");
	cr_assert(arm && fired && disarm, "run with LD_PRELOAD=libusft_fault.so");
}

/* six functions on six adjacent text pages */
#define PAGE_FN(n) \
	TRACEE __attribute__((aligned(4096))) long cf_page_##n(long x) { TRACEE_BODY(); return x + n; }
PAGE_FN(0) PAGE_FN(1) PAGE_FN(2) PAGE_FN(3) PAGE_FN(4) PAGE_FN(5)
static const tc_fn_t page_fns[] = { cf_page_0, cf_page_1, cf_page_2, cf_page_3, cf_page_4,
				    cf_page_5 };

/*
 * A batch over sites on adjacent pages makes them writable in one
 * mprotect() and restores them in one (core/text.c), not one per page
 * each way (16 calls each way for these six pages before; 6 now).
 */
Test(fault, adjacent_text_pages_share_an_mprotect, .init = setup)
{
	static struct tc_counter c;
	long (*calls)(void) = (long (*)(void))dlsym(RTLD_DEFAULT, "fault_mprotect_calls");
	long before, reg, unreg;

	cr_assert_not_null(calls);
	cr_assert_eq(usft_init(), 0);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_page_*", 1), 0);
	before = calls();
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	reg = calls() - before;
	for (long i = 0; i < 6; i++)
		cr_assert_eq(page_fns[i](100), 100 + i);
	before = calls();
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	unreg = calls() - before;
	for (long i = 0; i < 6; i++)
		cr_assert_eq(page_fns[i](100), 100 + i);
	cr_log_info("mprotect calls: register %ld, unregister %ld", reg, unreg);
	cr_assert_lt(reg, 12, "register: %ld mprotect calls for 6 adjacent pages", reg);
	cr_assert_lt(unreg, 12, "unregister: %ld mprotect calls for 6 adjacent pages", unreg);
}

Test(fault, every_malloc_along_an_update, .init = setup, .timeout = 300)
{
	sweep(F_MALLOC, "malloc");
}

Test(fault, every_mprotect_along_an_update, .init = setup, .timeout = 300)
{
	sweep(F_MPROTECT, "mprotect");
}

Test(fault, every_mmap_along_an_update, .init = setup, .timeout = 300)
{
	long n;

	/* trampoline windows may all exist after init: zero points is fine */
	for (n = 1; n < 50; n++) {
		pid_t pid = fork();
		int st;

		if (!pid)
			_exit(child(F_MMAP, n));
		waitpid(pid, &st, 0);
		cr_assert(WIFEXITED(st), "mmap #%ld: child died", n);
		if (WEXITSTATUS(st) == 2)
			break;
		cr_assert_eq(WEXITSTATUS(st), 0, "mmap #%ld: check %d failed", n, WEXITSTATUS(st));
	}
}

Test(fault, every_membarrier_along_an_update, .init = setup, .timeout = 300)
{
	sweep(F_MEMBARRIER, "membarrier");
}
