// SPDX-License-Identifier: MIT
/*
 * test_inject_arch: the per-arch half of `usft attach` (inject/cli/arch/,
 * inject.h) without a target process where the arch allows it: the call
 * frame the injector builds, the return it recognises, the site bytes it
 * rewrites.  The arch file is compiled into this test so the frame's
 * registers can be read.  On arm64 this runs under qemu-user in the arm64
 * stages, where attaching itself cannot (no ptrace of the emulated
 * process: docs/attach.md); on x86-64 the frame is built for a stopped
 * child, as the return address goes onto its stack through ptrace.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__aarch64__)
#include "arch/arm64.c"
#elif defined(__x86_64__)
#include "arch/x86_64.c"
#endif

static struct inject_regs saved, call;

#if defined(__aarch64__)

Test(inject_arch, arm64_call_frame)
{
	unsigned long args[8] = { 11, 12, 13, 14, 15, 16, 17, 18 };

	memset(&saved, 0, sizeof(saved));
	for (int i = 0; i < 31; i++)
		saved.gpr.regs[i] = 100 + (unsigned long)i;
	saved.gpr.sp = 0x7fff0000fff8UL;	/* not 16-byte aligned */
	saved.gpr.pc = 0x400123;
	saved.gpr.pstate = 0x60000000;
	saved.fp.vregs[3] = 42;
	saved.fp.fpcr = 0x1000000;
	saved.syscallno = 115;			/* in clock_nanosleep */
	cr_assert_eq(inject_arch_call_regs(0, &saved, &call, 0x7f0000001000UL, args, 8,
					   saved.gpr.sp - 512), 0);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(call.gpr.regs[i], args[i], "x%d", i);
	for (int i = 8; i < 30; i++)
		cr_assert_eq(call.gpr.regs[i], saved.gpr.regs[i], "x%d kept", i);
	cr_assert_eq(call.gpr.regs[30], 0, "lr 0: the return faults at pc 0");
	cr_assert_eq(call.gpr.sp, (saved.gpr.sp - 512) & ~15UL, "AAPCS64: sp 16-byte aligned");
	cr_assert_eq(call.gpr.pc, 0x7f0000001000UL);
	cr_assert_eq(call.gpr.pstate, saved.gpr.pstate);
	cr_assert_eq(call.syscallno, -1, "no system call restarted when the call starts");
	cr_assert_eq(call.fp.vregs[3], 42);
	cr_assert_eq(call.fp.fpcr, saved.fp.fpcr);
	/* the saved set is what goes back afterwards: untouched */
	cr_assert_eq(saved.syscallno, 115);
	cr_assert_eq(inject_arch_syscall(&saved), 115);
	cr_assert_eq(inject_arch_pc(&saved), 0x400123);
	cr_assert_eq(inject_arch_sp(&saved), 0x7fff0000fff8UL);
}

Test(inject_arch, arm64_too_many_args)
{
	unsigned long args[9] = { 0 };

	cr_assert_eq(inject_arch_call_regs(0, &saved, &call, 1, args, 9, 0x1000), -EINVAL);
}

Test(inject_arch, arm64_return)
{
	unsigned long ret = 7;

	memset(&call, 0, sizeof(call));
	call.gpr.pc = 0x1234;
	call.gpr.regs[0] = 99;
	cr_assert(!inject_arch_returned(&call, &ret));
	cr_assert_eq(ret, 7);
	call.gpr.pc = 0;
	cr_assert(inject_arch_returned(&call, &ret));
	cr_assert_eq(ret, 99, "the result is x0");
	inject_arch_set_pc(&call, 0x888);
	cr_assert_eq(inject_arch_pc(&call), 0x888);
}

Test(inject_arch, arm64_sites)
{
	/* two NOPs: already the runtime's disabled form, nothing to rewrite */
	static const unsigned char nops[8] = { 0x1f, 0x20, 0x03, 0xd5, 0x1f, 0x20, 0x03, 0xd5 };
	unsigned char out[16];

	cr_assert_eq(inject_arch_site_len(), 8);
	cr_assert_eq(inject_arch_site_nop(nops, out), 0);
	cr_assert_eq(inject_arch_machine(), EM_AARCH64);
	cr_assert_eq(inject_arch_regs_size(), sizeof(struct inject_regs));
}

#elif defined(__x86_64__)

/* a child stopped under ptrace: its stack takes the frame's return address */
static pid_t stopped_child(void)
{
	int st;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (!pid) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSTOPPED(st));
	return pid;
}

Test(inject_arch, x86_64_call_frame)
{
	unsigned long args[6] = { 11, 12, 13, 14, 15, 16 }, sp;
	pid_t pid = stopped_child();
	long word;

	cr_assert_eq(inject_arch_save(pid, &saved), 0);
	saved.gpr.eflags |= 0x400;	/* DF set where the thread stopped */
	sp = inject_arch_sp(&saved) - 512 - 3;
	cr_assert_eq(inject_arch_call_regs(pid, &saved, &call, 0x7f0000001000UL, args, 6, sp), 0);
	cr_assert_eq(call.gpr.rdi, 11);
	cr_assert_eq(call.gpr.rsi, 12);
	cr_assert_eq(call.gpr.rdx, 13);
	cr_assert_eq(call.gpr.rcx, 14);
	cr_assert_eq(call.gpr.r8, 15);
	cr_assert_eq(call.gpr.r9, 16);
	cr_assert_eq(call.gpr.rip, 0x7f0000001000UL);
	cr_assert_eq(call.gpr.rsp % 16, 8, "%%rsp is 8 mod 16 at a function's entry");
	cr_assert_leq(call.gpr.rsp, sp);
	cr_assert_eq(call.gpr.rax, 0, "no vector arguments");
	cr_assert_eq(call.gpr.orig_rax, (unsigned long long)-1, "no system call restarted");
	cr_assert_eq(call.gpr.eflags & 0x400, 0, "the ABI wants DF clear at a call");
	cr_assert_eq(call.gpr.rbx, saved.gpr.rbx);
	errno = 0;
	word = ptrace(PTRACE_PEEKDATA, pid, (void *)call.gpr.rsp, NULL);
	cr_assert_eq(errno, 0);
	cr_assert_eq(word, 0, "the return address is 0: the return faults");
	cr_assert_eq(inject_arch_call_regs(pid, &saved, &call, 1, args, 7, sp), -EINVAL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(inject_arch, x86_64_return)
{
	unsigned long ret = 7;

	memset(&call, 0, sizeof(call));
	call.gpr.rip = 0x1234;
	call.gpr.rax = 99;
	cr_assert(!inject_arch_returned(&call, &ret));
	cr_assert_eq(ret, 7);
	call.gpr.rip = 0;
	cr_assert(inject_arch_returned(&call, &ret));
	cr_assert_eq(ret, 99, "the result is %%rax");
}

Test(inject_arch, x86_64_sites)
{
	static const unsigned char gcc[5] = { 0x90, 0x90, 0x90, 0x90, 0x90 };
	static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	static const unsigned char call5[5] = { 0xe8, 0x10, 0x20, 0x30, 0x40 };
	unsigned char out[16];

	cr_assert_eq(inject_arch_site_len(), 5);
	cr_assert_eq(inject_arch_site_nop(gcc, out), 5);
	cr_assert_arr_eq(out, nop5, 5, "gcc's five 1-byte NOPs become the runtime's nop5");
	cr_assert_eq(inject_arch_site_nop(nop5, out), 0, "already the disabled form");
	cr_assert_eq(inject_arch_site_nop(call5, out), 0, "an enabled site is not touched");
	cr_assert_eq(inject_arch_machine(), EM_X86_64);
}

#endif
