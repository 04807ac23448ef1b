// SPDX-License-Identifier: MIT
/*
 * Objects loaded and unloaded at run time (the kernel's modules): sites of a
 * dlopen()ed object become filterable and traceable; after dlclose() its
 * records are gone and nothing touches its memory again, even when an ops
 * that selected it is still registered.  Kernel: ftrace_module_init(),
 * ftrace_release_mod() (kernel/trace/ftrace.c); docs/architecture.md.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_common.h"

#ifndef CF_FIXTURE_PATH
#error "CF_FIXTURE_PATH must name the fixture object"
#endif

typedef long (*bin_fn)(long, long);
typedef long (*un_fn)(long);

TRACEE long cf_dl_local(long x)
{
	TRACEE_BODY();
	return x + 100;
}

TRACEE long cf_dl_local2(long x)
{
	TRACEE_BODY();
	return x + 200;
}

struct fixture {
	void *handle;
	bin_fn add, mul;
	un_fn combo;
};

static void fixture_open(struct fixture *f)
{
	f->handle = dlopen(CF_FIXTURE_PATH, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(f->handle, "dlopen(%s): %s", CF_FIXTURE_PATH, dlerror());
	f->add = (bin_fn)dlsym(f->handle, "cf_dlfix_add");
	f->mul = (bin_fn)dlsym(f->handle, "cf_dlfix_mul");
	f->combo = (un_fn)dlsym(f->handle, "cf_dlfix_combo");
	cr_assert(f->add && f->mul && f->combo, "dlsym failed");
}

static void fixture_close(struct fixture *f)
{
	cr_assert_eq(dlclose(f->handle), 0);
	cr_assert_null(dlopen(CF_FIXTURE_PATH, RTLD_NOW | RTLD_NOLOAD),
		       "fixture still loaded after dlclose (pinned?)");
	memset(f, 0, sizeof(*f));
}

Test(dlopen, object_sites_are_traced)
{
	static struct tc_counter c;
	struct usft_stats st0, st;
	struct fixture f;

	cr_assert_eq(usft_init(), 0);
	st0 = tc_stat();
	fixture_open(&f);

	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_dlfix_a*", 1), 0,
		     "glob on the loaded object's function matched nothing");
	cr_assert_eq(usft_lookup_name("cf_dlfix_add"), (unsigned long)f.add);
	cr_assert_neq(ftrace_location((unsigned long)f.add), 0);
	st = tc_stat();
	cr_assert_geq(st.nr_sites, st0.nr_sites + 3, "object's sites not recorded");
	cr_assert_geq(st.nr_objects, st0.nr_objects + 1);
	expect_nop5(f.add);
	expect_nop5(f.mul);
	expect_nop5(f.combo);

	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_call(f.add);
	expect_nop5(f.mul);
	expect_nop5(f.combo);
	cr_assert_eq(f.add(2, 3), 5);
	cr_assert_eq(tc_count(&c), 1);
	cr_assert_eq(atomic_load(&c.last_ip), ftrace_location((unsigned long)f.add));
	cr_assert_eq(f.mul(2, 3), 6);
	cr_assert_eq(tc_count(&c), 1);
	cr_assert_eq(f.combo(4), 5 + 8);
	cr_assert_eq(tc_count(&c), 2, "call from inside the object not traced");

	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_nop5(f.add);
	cr_assert_eq(f.add(1, 1), 2);
	cr_assert_eq(tc_count(&c), 2);
	ftrace_free_filter(&c.ops);
	fixture_close(&f);
}

Test(dlopen, records_gone_after_dlclose)
{
	static struct tc_counter c, all;
	struct usft_stats st0, st;
	struct fixture f;

	cr_assert_eq(usft_init(), 0);
	st0 = tc_stat();
	fixture_open(&f);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_dlfix_*", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	f.combo(1);
	cr_assert_eq(tc_count(&c), 3);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	fixture_close(&f);

	/* every remaining site gets patched; the unloaded object is not touched */
	tc_counter_init(&all, 0);
	cr_assert_eq(register_ftrace_function(&all.ops), 0);
	expect_call(cf_dl_local);
	cr_assert_eq(cf_dl_local(1), 101);
	cr_assert_geq(tc_count(&all), 1);
	st = tc_stat();
	cr_assert_eq(st.nr_sites, st0.nr_sites, "records of the unloaded object remain");
	cr_assert_eq(st.nr_objects, st0.nr_objects);
	cr_assert_eq(usft_lookup_name("cf_dlfix_add"), 0);
	cr_assert_eq(unregister_ftrace_function(&all.ops), 0);
	expect_nop5(cf_dl_local);

	/* a glob for the unloaded functions matches nothing now */
	cr_assert_eq(tc_set_filter(&c.ops, "cf_dlfix_*", 1), -EINVAL);

	/* load it again: works again */
	fixture_open(&f);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_dlfix_mul", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_nop5(f.add);
	expect_call(f.mul);
	cr_assert_eq(f.mul(6, 7), 42);
	cr_assert_eq(tc_count(&c), 4);
	cr_assert_eq(atomic_load(&c.last_ip), ftrace_location((unsigned long)f.mul));
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_nop5(f.mul);
	fixture_close(&f);
}

Test(dlopen, dlclose_while_ops_registered)
{
	static struct tc_counter c;
	struct fixture f;

	cr_assert_eq(usft_init(), 0);
	fixture_open(&f);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_dlfix_add cf_dl_local", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	expect_call(f.add);
	expect_call(cf_dl_local);
	f.add(1, 2);
	cf_dl_local(1);
	cr_assert_eq(tc_count(&c), 2);

	fixture_close(&f);	/* the object goes away under a live ops */

	cr_assert_eq(cf_dl_local(2), 102);
	cr_assert_eq(tc_count(&c), 3);
	expect_call(cf_dl_local);

	/* the live ops keeps working: filter changes re-patch remaining sites */
	cr_assert_eq(tc_set_filter(&c.ops, "cf_dl_local2", 0), 0);
	expect_call(cf_dl_local2);
	cf_dl_local2(0);
	cr_assert_eq(tc_count(&c), 4);
	cr_assert_eq(tc_stat().nr_enabled, 2);

	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	expect_nop5(cf_dl_local);
	expect_nop5(cf_dl_local2);
	cf_dl_local(0);
	cr_assert_eq(tc_count(&c), 4);

	/* a fresh load starts clean */
	fixture_open(&f);
	cr_assert_neq(ftrace_location((unsigned long)f.add), 0);
	expect_nop5(f.add);
	cr_assert_eq(f.add(20, 22), 42);
	cr_assert_eq(tc_count(&c), 4);
	fixture_close(&f);
}

Test(dlopen, object_loaded_under_all_functions_ops_is_traced)
{
	static struct tc_counter all;
	struct fixture f;
	long before, after, r;

	cr_assert_eq(usft_init(), 0);
	tc_counter_init(&all, 0);
	cr_assert_eq(register_ftrace_function(&all.ops), 0);
	fixture_open(&f);
	/* any API call lets the runtime see the new object */
	cr_assert_neq(ftrace_location((unsigned long)f.add), 0);
	expect_call(f.add);
	before = tc_count(&all);
	r = f.add(1, 2);
	after = tc_count(&all);
	cr_assert_eq(r, 3);
	cr_assert_eq(after, before + 1,
		     "new object's site not enabled for a registered all-functions ops");
	cr_assert_eq(unregister_ftrace_function(&all.ops), 0);
	expect_nop5(f.add);
	fixture_close(&f);
}

static unsigned long unload_lo, unload_hi;

static void note_unload(unsigned long lo, unsigned long hi)
{
	unload_lo = lo;
	unload_hi = hi;
}

/*
 * kernel clear_mod_from_hashes(): the hashes of an ops that is not
 * registered but tracked (a trace array's) lose the unloaded object's ips,
 * so the object loaded again (at the same address, as mmap reuses the gap)
 * is not selected by the old entries; the unload hook names its text.
 */
Test(dlopen, dlclose_cleans_tracked_unregistered_ops)
{
	static struct tc_counter c;
	struct fixture f;
	unsigned long old_add;
	char *text = NULL;
	size_t len = 0;
	FILE *m;

	cr_assert_eq(usft_init(), 0);
	cr_assert_eq(usft_track_ops_hashes(NULL, true), -EINVAL);
	fixture_open(&f);
	old_add = (unsigned long)f.add;
	tc_counter_init(&c, 0);
	cr_assert_eq(usft_track_ops_hashes(&c.ops, true), 0);
	cr_assert_eq(usft_track_ops_hashes(&c.ops, true), 0);	/* once is enough */
	usft_set_unload_hook(note_unload);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_dlfix_add", 1), 0);
	fixture_close(&f);
	cr_assert(unload_lo <= old_add && old_add < unload_hi, "hook: [%#lx, %#lx) for %#lx",
		  unload_lo, unload_hi, old_add);

	fixture_open(&f);
	m = open_memstream(&text, &len);
	cr_assert_not_null(m);
	cr_assert_eq(usft_print_ops_hash(m, &c.ops, 0), 0, "old entry selects the new object");
	fclose(m);
	cr_assert_eq(len, 0, "filter reads %s", text);
	free(text);
	/* the cleared entry keeps the filter selecting nothing */
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	cr_assert_eq(f.add(1, 2), 3);
	cr_assert_eq(tc_count(&c), 0);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	usft_set_unload_hook(NULL);
	cr_assert_eq(usft_track_ops_hashes(&c.ops, false), 0);
	fixture_close(&f);
}

#if defined(__x86_64__)
/*
 * The per-ops trampoline copy a site calls saves xmm0-7: it has the
 * template's first `movups %xmm0, 0x0(%rax)` (0f 11 00) before its way out
 * (`ret; int3`).  The copy without the saves (novec_tramp) has none.
 */
static bool calls_copy_with_xmm_saves(const void *fn)
{
	const unsigned char *b = (const unsigned char *)tc_call_target(fn);

	cr_assert_not_null(b, "the site does not call");
	for (size_t i = 0; i + 2 < 512 && !(b[i] == 0xc3 && b[i + 1] == 0xcc); i++)
		if (b[i] == 0x0f && b[i + 1] == 0x11 && b[i + 2] == 0x00)
			return true;
	return false;
}

/* the fixture copied to a file of its own, loaded and recorded; @touch: then its mtime moved */
static void *load_copy(char *path, size_t len, bool touch, bin_fn *add)
{
	static const struct timespec old[2] = { { 1, 0 }, { 1, 0 } };
	char buf[65536];
	int in, out;
	ssize_t n;
	void *h;

	snprintf(path, len, "/tmp/usft-cf-dlfix-XXXXXX");
	out = mkstemp(path);
	in = open(CF_FIXTURE_PATH, O_RDONLY);
	cr_assert(out >= 0 && in >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "dlopen(%s): %s", path, dlerror());
	*add = (bin_fn)dlsym(h, "cf_dlfix_add");
	cr_assert_not_null(*add);
	/* its records (and the identity of the file they came from) are read now */
	cr_assert_neq(ftrace_location((unsigned long)*add), 0);
	if (touch)
		cr_assert_eq(utimensat(AT_FDCWD, path, old, 0), 0);
	return h;
}

static bool add_calls_copy_with_xmm_saves(bool touch)
{
	static struct tc_counter c;
	char path[64];
	bin_fn add;
	bool xmm;
	void *h;

	cr_assert_eq(usft_init(), 0);
	h = load_copy(path, sizeof(path), touch, &add);
	tc_counter_init(&c, 0);
	cr_assert_eq(tc_set_filter(&c.ops, "cf_dlfix_add", 1), 0);
	cr_assert_eq(register_ftrace_function(&c.ops), 0);
	xmm = calls_copy_with_xmm_saves((const void *)add);
	cr_assert_eq(add(2, 3), 5);
	cr_assert_eq(tc_count(&c), 1);
	cr_assert_eq(unregister_ftrace_function(&c.ops), 0);
	ftrace_free_filter(&c.ops);
	cr_assert_eq(dlclose(h), 0);
	unlink(path);
	return xmm;
}

/* cf_dlfix_add(long, long): its DWARF says no vector argument */
Test(dlopen, object_function_without_vector_arguments_calls_the_copy_without_xmm_saves)
{
	cr_assert_not(add_calls_copy_with_xmm_saves(false));
}

/* a file rewritten since it was loaded describes other code: its DWARF is not read */
Test(dlopen, file_changed_since_loaded_keeps_the_xmm_saves)
{
	cr_assert(add_calls_copy_with_xmm_saves(true),
		  "the DWARF of a file changed since it was loaded was trusted");
}
#endif
