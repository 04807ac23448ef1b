// SPDX-License-Identifier: MIT
/*
 * fprobe (kernel/trace/fprobe.c, include/linux/fprobe.h): entry and exit
 * handlers on the function graph hook, entry_data shared by both, a nonzero
 * entry return skipping the exit, disable/enable, several fprobes on one
 * function, the filter and symbol forms, nmissed, and unregister stopping
 * both handlers.  The kernel's tests: samples/fprobe/fprobe_example.c and
 * lib/tests/test_fprobe.c.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <usft/fprobe.h>
#include "test_common.h"

TRACEE long cf_fp_target(long x)
{
	TRACEE_BODY();
	return x * 3 + 1;
}

TRACEE long cf_fp_target2(long x)
{
	TRACEE_BODY();
	return x * 5 + 2;
}

TRACEE long cf_fp_caller(long x)
{
	long r = cf_fp_target(x) + cf_fp_target2(x);

	TRACEE_BODY();
	return r;
}

struct probe {
	struct fprobe fp;
	atomic_int entries, exits, bad;
	unsigned long last_ip, last_ret_ip, last_retval;
	long skip_arg;		/* entry returns nonzero for this argument */
};

static notrace int probe_entry(struct fprobe *fp, unsigned long ip, unsigned long ret_ip,
			       struct ftrace_regs *fregs, void *data)
{
	struct probe *p = container_of(fp, struct probe, fp);
	long arg = (long)ftrace_regs_get_argument(fregs, 0);

	atomic_fetch_add(&p->entries, 1);
	p->last_ip = ip;
	p->last_ret_ip = ret_ip;
	if (fp->entry_data_size >= sizeof(long)) {
		if (!data)
			atomic_fetch_add(&p->bad, 1);
		else
			*(long *)data = arg * 4096 + (long)(ip & 0xfff);
	}
	return arg == p->skip_arg;
}

static notrace void probe_exit(struct fprobe *fp, unsigned long ip, unsigned long ret_ip,
			       struct ftrace_regs *fregs, void *data)
{
	struct probe *p = container_of(fp, struct probe, fp);

	atomic_fetch_add(&p->exits, 1);
	p->last_retval = ftrace_regs_get_return_value(fregs);
	if (ip != p->last_ip || ret_ip != p->last_ret_ip)
		atomic_fetch_add(&p->bad, 1);
	if (fp->entry_data_size >= sizeof(long) &&
	    (!data || ((*(long *)data) & 0xfff) != (long)(ip & 0xfff)))
		atomic_fetch_add(&p->bad, 1);
}

static void probe_init(struct probe *p, size_t data_size)
{
	memset(p, 0, sizeof(*p));
	p->fp.entry_handler = probe_entry;
	p->fp.exit_handler = probe_exit;
	p->fp.entry_data_size = data_size;
	p->skip_arg = -12345;
}

Test(fprobe, entry_and_exit_with_entry_data)
{
	static struct probe p;
	unsigned long fn = (unsigned long)cf_fp_target;

	probe_init(&p, sizeof(long));
	cr_assert_eq(register_fprobe_ips(&p.fp, &fn, 1), 0);
	cr_assert(fprobe_is_registered(&p.fp));
	cr_assert_eq(register_fprobe_ips(&p.fp, &fn, 1), -EBUSY);
	cr_assert_eq(cf_fp_target(4), 13);
	cr_assert_eq(atomic_load(&p.entries), 1);
	cr_assert_eq(atomic_load(&p.exits), 1);
	cr_assert_eq(p.last_ip, tc_site(cf_fp_target));
	cr_assert_eq(p.last_retval, 13);
	cr_assert_eq(cf_fp_caller(2), 7 + 12);
	cr_assert_eq(atomic_load(&p.exits), 2);
	cr_assert_eq(atomic_load(&p.bad), 0);
	cr_assert_eq(p.fp.nmissed, 0);
	cr_assert_eq(unregister_fprobe(&p.fp), 0);
	cr_assert_not(fprobe_is_registered(&p.fp));
	cr_assert_eq(unregister_fprobe(&p.fp), -EINVAL);
	cf_fp_target(1);
	cr_assert_eq(atomic_load(&p.entries), 2);
	expect_nop5(cf_fp_target);
}

Test(fprobe, nonzero_entry_return_skips_the_exit)
{
	static struct probe p;

	probe_init(&p, 0);
	p.skip_arg = 7;
	cr_assert_eq(register_fprobe(&p.fp, "cf_fp_target", NULL), 0);
	cf_fp_target(7);
	cf_fp_target(8);
	cr_assert_eq(atomic_load(&p.entries), 2);
	cr_assert_eq(atomic_load(&p.exits), 1);
	cr_assert_eq(p.last_retval, 25);
	cr_assert_eq(unregister_fprobe(&p.fp), 0);
}

Test(fprobe, filter_notfilter_syms_and_disable)
{
	static struct probe a, b;
	const char *syms[] = { "cf_fp_target2" };

	probe_init(&a, 0);
	probe_init(&b, 16);
	cr_assert_eq(register_fprobe(&a.fp, "cf_fp_*", "cf_fp_caller"), 0);
	cr_assert_eq(register_fprobe_syms(&b.fp, syms, 1), 0);
	cf_fp_caller(1);	/* a: target, target2; b: target2 */
	cr_assert_eq(atomic_load(&a.entries), 2);
	cr_assert_eq(atomic_load(&a.exits), 2);
	cr_assert_eq(atomic_load(&b.entries), 1);
	cr_assert_eq(atomic_load(&b.exits), 1);
	disable_fprobe(&a.fp);
	cr_assert(fprobe_disabled(&a.fp));
	cf_fp_caller(1);
	cr_assert_eq(atomic_load(&a.entries), 2);
	cr_assert_eq(atomic_load(&b.entries), 2);
	enable_fprobe(&a.fp);
	/* a goes; b keeps its function, whose site stays in the shared filter */
	cr_assert_eq(unregister_fprobe(&a.fp), 0);
	expect_nop5(cf_fp_target);
	cf_fp_caller(1);
	cr_assert_eq(atomic_load(&a.entries), 2);
	cr_assert_eq(atomic_load(&b.entries), 3);
	cr_assert_eq(atomic_load(&b.exits), 3);
	cr_assert_eq(atomic_load(&a.bad) + atomic_load(&b.bad), 0);
	cr_assert_eq(unregister_fprobe(&b.fp), 0);
	expect_nop5(cf_fp_target2);
}

Test(fprobe, bad_arguments)
{
	static struct probe p;
	unsigned long bad = 0x1000, fn = (unsigned long)cf_fp_target;

	probe_init(&p, 0);
	cr_assert_eq(register_fprobe_ips(NULL, &fn, 1), -EINVAL);
	cr_assert_eq(register_fprobe_ips(&p.fp, NULL, 1), -EINVAL);
	cr_assert_eq(register_fprobe_ips(&p.fp, &fn, 0), -EINVAL);
	cr_assert_eq(register_fprobe_ips(&p.fp, &bad, 1), -ENOENT);
	cr_assert_eq(register_fprobe(&p.fp, "cf_fp_no_such_function", NULL), -ENOENT);
	cr_assert_eq(register_fprobe(&p.fp, "cf_fp_target", "cf_fp_target"), -ENOENT);
	p.fp.entry_data_size = FPROBE_DATA_SIZE_MAX + 1;
	cr_assert_eq(register_fprobe_ips(&p.fp, &fn, 1), -E2BIG);
	cr_assert_not(fprobe_is_registered(&p.fp));
	expect_nop5(cf_fp_target);
}

/* several fprobes whose data does not fit one frame's block: the last miss */
Test(fprobe, nmissed_when_the_data_does_not_fit)
{
	static struct probe p[3];
	unsigned long fn = (unsigned long)cf_fp_target;
	unsigned long missed = 0, exits = 0;

	for (int i = 0; i < 3; i++) {
		probe_init(&p[i], FPROBE_DATA_SIZE_MAX / 2);
		cr_assert_eq(register_fprobe_ips(&p[i].fp, &fn, 1), 0);
	}
	cf_fp_target(1);
	for (int i = 0; i < 3; i++) {
		missed += p[i].fp.nmissed;
		exits += (unsigned long)atomic_load(&p[i].exits);
		cr_assert_eq(atomic_load(&p[i].bad), 0);
		cr_assert_eq(p[i].fp.nmissed + (unsigned long)atomic_load(&p[i].exits), 1);
	}
	cr_assert_geq(missed, 1);
	cr_assert_geq(exits, 1);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(unregister_fprobe(&p[i].fp), 0);
}
