// SPDX-License-Identifier: MIT
/*
 * ftrace-direct-too - a userspace port of the kernel's
 * samples/ftrace/ftrace-direct-too.c, written from its description.
 *
 * A direct trampoline on a function with four arguments, my_handle_mm_fault()
 * (a handle_mm_fault() look-alike): the trampoline (my_tramp,
 * ftrace-direct-too-x86_64.S) keeps all four argument registers and passes
 * them to my_direct_func().  In the kernel this module is loaded next to
 * ftrace-direct to show two direct users at once; here the same program also
 * attaches a second direct ops with its own trampoline (my_tramp2) to a
 * six-argument function, my_do_mmap(), so two direct ops on two functions
 * coexist, each patched straight to its own trampoline.  A third ops asking
 * for my_handle_mm_fault() too must get -EBUSY: one direct trampoline per
 * function.
 *
 * Exit status 0 only if each helper ran exactly once per call of its function
 * while attached, with every argument intact, and the traced functions
 * returned the right values throughout.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <usft/common.h>
#include <usft/ftrace.h>
#include <usft/usft.h>

#if defined(__clang__)
#define TRACEE __attribute__((noinline))
#else
#define TRACEE __attribute__((noinline, noipa))
#endif

/* Overwrite every integer argument register. */
#if defined(__x86_64__)
#define CLOBBER_ARG_REGS()							\
	__asm__ volatile("mov $-1, %%rdi\n\tmov $-1, %%rsi\n\tmov $-1, %%rdx\n\t"	\
			 "mov $-1, %%rcx\n\tmov $-1, %%r8\n\tmov $-1, %%r9"	\
			 ::: "rdi", "rsi", "rdx", "rcx", "r8", "r9")
#elif defined(__aarch64__)
#define CLOBBER_ARG_REGS()							\
	__asm__ volatile("mov x0, #-1\n\tmov x1, #-1\n\tmov x2, #-1\n\tmov x3, #-1\n\t"	\
			 "mov x4, #-1\n\tmov x5, #-1\n\tmov x6, #-1\n\tmov x7, #-1"	\
			 ::: "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7")
#else
#define CLOBBER_ARG_REGS() do { } while (0)
#endif

#define PAGE_SHIFT 12
#define VM_FAULT_SIGSEGV 0x0040u
#define FAULT_FLAG_WRITE 0x01u
#define FAULT_FLAG_USER 0x40u

struct vm_area {
	const char *name;
	unsigned long vm_start, vm_end;
};

struct fault_regs {
	unsigned long ip;
	unsigned long error_code;
};

/* The trampolines (assembly); call mode. */
extern void my_tramp(void);
extern void my_tramp2(void);

void my_direct_func(struct vm_area *vma, unsigned long address, unsigned int flags,
		    struct fault_regs *regs);
void my_direct_func2(unsigned long addr, unsigned long len, unsigned long prot,
		     unsigned long flags, long fd, unsigned long pgoff);
unsigned int my_handle_mm_fault(struct vm_area *vma, unsigned long address,
				unsigned int flags, struct fault_regs *regs);
unsigned long my_do_mmap(unsigned long addr, unsigned long len, unsigned long prot,
			 unsigned long flags, long fd, unsigned long pgoff);

static bool quiet;

/* what the next helper run must see */
static struct {
	struct vm_area *vma;
	unsigned long address;
	unsigned int flags;
	struct fault_regs *regs;
} want_fault;
static unsigned long want_mmap[6];

static unsigned long fault_runs, fault_bad_args;
static unsigned long mmap_runs, mmap_bad_args;

notrace void my_direct_func(struct vm_area *vma, unsigned long address, unsigned int flags,
			    struct fault_regs *regs)
{
	fault_runs++;
	if (vma != want_fault.vma || address != want_fault.address ||
	    flags != want_fault.flags || regs != want_fault.regs)
		fault_bad_args++;
	if (!quiet)
		printf("  my_direct_func: handle mm fault vma=%s address=%#lx flags=%#x regs=%p\n",
		       vma->name, address, flags, (void *)regs);
	CLOBBER_ARG_REGS();
}

notrace void my_direct_func2(unsigned long addr, unsigned long len, unsigned long prot,
			     unsigned long flags, long fd, unsigned long pgoff)
{
	mmap_runs++;
	if (addr != want_mmap[0] || len != want_mmap[1] || prot != want_mmap[2] ||
	    flags != want_mmap[3] || (unsigned long)fd != want_mmap[4] || pgoff != want_mmap[5])
		mmap_bad_args++;
	if (!quiet)
		printf("  my_direct_func2: do mmap addr=%#lx len=%#lx prot=%#lx flags=%#lx fd=%ld pgoff=%#lx\n",
		       addr, len, prot, flags, fd, pgoff);
	CLOBBER_ARG_REGS();
}

/* handle_mm_fault(): a page index and the flags, or SIGSEGV outside the vma. */
TRACEE unsigned int my_handle_mm_fault(struct vm_area *vma, unsigned long address,
				       unsigned int flags, struct fault_regs *regs)
{
	if (address < vma->vm_start || address >= vma->vm_end)
		return VM_FAULT_SIGSEGV;
	regs->error_code = flags;
	return (unsigned int)((address - vma->vm_start) >> PAGE_SHIFT) << 8 | (flags & 0xff);
}

/* do_mmap(): every argument goes into the result. */
TRACEE unsigned long my_do_mmap(unsigned long addr, unsigned long len, unsigned long prot,
				unsigned long flags, long fd, unsigned long pgoff)
{
	return addr + len * 3 + prot * 5 + flags * 7 + (unsigned long)fd * 11 + pgoff * 13;
}

static notrace unsigned int expect_fault(struct vm_area *vma, unsigned long address,
					 unsigned int flags)
{
	if (address < vma->vm_start || address >= vma->vm_end)
		return VM_FAULT_SIGSEGV;
	return (unsigned int)((address - vma->vm_start) >> PAGE_SHIFT) << 8 | (flags & 0xff);
}

static struct vm_area vmas[] = {
	{ "[heap]", 0x555500000000UL, 0x555500021000UL },
	{ "libc.so.6", 0x7f0000000000UL, 0x7f0000200000UL },
};

/* A round: two faults and one mmap.  Returns the number of wrong results. */
static notrace unsigned int round_of_calls(const char *phase, unsigned int i)
{
	static const unsigned long offsets[] = { 0x10, 0x3008, 0x20ff0, 0x1ffff8 };
	struct fault_regs regs = { .ip = 0x401000 + i };
	unsigned int bad = 0;

	if (!quiet)
		printf("%s, round %u:\n", phase, i);
	for (unsigned int k = 0; k < 2; k++) {
		struct vm_area *vma = &vmas[k];
		unsigned long address = vma->vm_start + offsets[(i + k) % 4];
		unsigned int flags = (i & 1 ? FAULT_FLAG_WRITE : 0) | FAULT_FLAG_USER | k << 1;
		unsigned int ret, want = expect_fault(vma, address, flags);

		want_fault.vma = vma;
		want_fault.address = address;
		want_fault.flags = flags;
		want_fault.regs = &regs;
		regs.error_code = ~0UL;
		ret = my_handle_mm_fault(vma, address, flags, &regs);
		if (ret != want || (want != VM_FAULT_SIGSEGV && regs.error_code != flags)) {
			fprintf(stderr, "ftrace-direct-too: my_handle_mm_fault(%s, %#lx, %#x) = %#x, want %#x\n",
				vma->name, address, flags, ret, want);
			bad++;
		}
		if (!quiet)
			printf("  my_handle_mm_fault(%s, %#lx, %#x) = %#x\n", vma->name, address,
			       flags, ret);
	}

	{
		unsigned long a[6] = { 0x7f1000000000UL + (i << 12), 0x4000UL * (i + 1), 3, 0x22,
				       (unsigned long)(long)(i ? 3 + i : -1), i * 2 };
		unsigned long ret, want;

		memcpy(want_mmap, a, sizeof(a));
		want = a[0] + a[1] * 3 + a[2] * 5 + a[3] * 7 + a[4] * 11 + a[5] * 13;
		ret = my_do_mmap(a[0], a[1], a[2], a[3], (long)a[4], a[5]);
		if (ret != want) {
			fprintf(stderr, "ftrace-direct-too: my_do_mmap() = %#lx, want %#lx\n", ret, want);
			bad++;
		}
		if (!quiet)
			printf("  my_do_mmap(%#lx, %#lx, ...) = %#lx\n", a[0], a[1], ret);
	}
	return bad;
}

#define ROUNDS 3u

static struct ftrace_ops direct;	/* my_handle_mm_fault -> my_tramp */
static struct ftrace_ops direct2;	/* my_do_mmap -> my_tramp2 */
static struct ftrace_ops intruder;	/* my_handle_mm_fault again: -EBUSY */

static notrace int attach(struct ftrace_ops *ops, void *func, void (*tramp)(void),
			  const char *what)
{
	int ret = ftrace_set_filter_ip(ops, (unsigned long)func, 0, 0);

	if (ret) {
		fprintf(stderr, "ftrace-direct-too: ftrace_set_filter_ip(%s): %s\n", what,
			strerror(-ret));
		return ret;
	}
	ret = register_ftrace_direct(ops, (unsigned long)tramp);
	if (ret)
		fprintf(stderr, "ftrace-direct-too: register_ftrace_direct(%s): %s\n", what,
			strerror(-ret));
	return ret;
}

static notrace void usage(FILE *out)
{
	fprintf(out, "usage: ftrace-direct-too [--quiet]\n");
}

notrace int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct usft_stats st = { .sz = sizeof(st) };
	unsigned long f0, m0, f_both, m_both, f_one, m_one, f_none, m_none;
	unsigned int bad = 0, i;
	int opt, ret;
	bool ok;

	while ((opt = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (!ftrace_location((unsigned long)my_handle_mm_fault) ||
	    !ftrace_location((unsigned long)my_do_mmap)) {
		fprintf(stderr, "ftrace-direct-too: the traced functions have no patch site\n");
		return 1;
	}

	bad += round_of_calls("not attached", 0);
	f0 = fault_runs;
	m0 = mmap_runs;

	if (attach(&direct, my_handle_mm_fault, my_tramp, "my_handle_mm_fault") ||
	    attach(&direct2, my_do_mmap, my_tramp2, "my_do_mmap"))
		return 1;

	/* one direct trampoline per function, process-wide */
	ret = ftrace_set_filter_ip(&intruder, (unsigned long)my_handle_mm_fault, 0, 0);
	if (!ret)
		ret = register_ftrace_direct(&intruder, (unsigned long)my_tramp2);
	if (ret != -EBUSY) {
		fprintf(stderr, "ftrace-direct-too: second direct on my_handle_mm_fault: %s, want EBUSY\n",
			ret ? strerror(-ret) : "registered");
		bad++;
		if (!ret)
			unregister_ftrace_direct(&intruder, (unsigned long)my_tramp2, true);
	} else if (!quiet) {
		printf("second direct ops on my_handle_mm_fault: EBUSY (one per function)\n");
	}
	ftrace_free_filter(&intruder);

	if (!usft_stat(&st) && !quiet)
		printf("direct sites: %lu patched straight, %lu through the caller\n",
		       st.nr_direct_in_range, st.nr_direct_out_of_range);

	for (i = 1; i <= ROUNDS; i++)
		bad += round_of_calls("both attached", i);
	f_both = fault_runs - f0;
	m_both = mmap_runs - m0;

	ret = unregister_ftrace_direct(&direct, (unsigned long)my_tramp, true);
	if (ret) {
		fprintf(stderr, "ftrace-direct-too: unregister_ftrace_direct(my_tramp): %s\n",
			strerror(-ret));
		return 1;
	}
	bad += round_of_calls("my_tramp detached", ROUNDS + 1);
	f_one = fault_runs - f0 - f_both;
	m_one = mmap_runs - m0 - m_both;

	ret = unregister_ftrace_direct(&direct2, (unsigned long)my_tramp2, true);
	if (ret) {
		fprintf(stderr, "ftrace-direct-too: unregister_ftrace_direct(my_tramp2): %s\n",
			strerror(-ret));
		return 1;
	}
	bad += round_of_calls("both detached", ROUNDS + 2);
	f_none = fault_runs - f0 - f_both - f_one;
	m_none = mmap_runs - m0 - m_both - m_one;

	ok = !bad && !f0 && !m0 && f_both == 2 * ROUNDS && m_both == ROUNDS &&
	     !f_one && m_one == 1 && !f_none && !m_none && !fault_bad_args && !mmap_bad_args;
	printf("ftrace-direct-too: helper runs (my_tramp, my_tramp2): both attached %lu/%u %lu/%u, "
	       "my_tramp detached %lu/0 %lu/1, both detached %lu/0 %lu/0; "
	       "%lu wrong arguments, %u wrong results: %s\n",
	       f_both, 2 * ROUNDS, m_both, ROUNDS, f_one, m_one, f_none, m_none,
	       fault_bad_args + mmap_bad_args, bad, ok ? "OK" : "FAIL");
	return ok ? 0 : 1;
}
