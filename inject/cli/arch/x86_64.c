// SPDX-License-Identifier: MIT
/*
 * inject/cli/arch/x86_64.c - the x86-64 part of `usft attach` (inject.h):
 * the general registers plus the whole XSAVE area (x87, SSE, AVX, ...),
 * a System V call frame, and the gcc NOP form of a site.
 *
 * Call frame: %rsp = the thread's %rsp - 128 (red zone) - scratch, aligned
 * to 16, then the return address 0 pushed, so %rsp is 8 mod 16 at the entry
 * of the function as after a call; arguments in %rdi, %rsi, %rdx, %rcx,
 * %r8, %r9; %rax 0 (no vector arguments); orig_rax -1 so that resuming
 * restarts no system call.  The return to 0 faults: SIGSEGV, seen by the
 * tracer first and never delivered.
 */
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include "inject.h"

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif
#define XSTATE_MAX 16384

struct inject_regs {
	struct user_regs_struct gpr;
	size_t xlen;
	unsigned char xstate[XSTATE_MAX] __attribute__((aligned(64)));
};

size_t inject_arch_regs_size(void)
{
	return sizeof(struct inject_regs);
}

unsigned short inject_arch_machine(void)
{
	return EM_X86_64;
}

int inject_arch_save(pid_t tid, struct inject_regs *r)
{
	struct iovec iov = { r->xstate, sizeof(r->xstate) };

	if (ptrace(PTRACE_GETREGS, tid, NULL, &r->gpr))
		return -errno;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov)) {
		/* no XSAVE: the legacy FXSAVE area */
		iov.iov_len = sizeof(struct user_fpregs_struct);
		if (ptrace(PTRACE_GETFPREGS, tid, NULL, r->xstate))
			return -errno;
		r->xlen = 0;
		return 0;
	}
	r->xlen = iov.iov_len;
	return 0;
}

int inject_arch_restore(pid_t tid, const struct inject_regs *r)
{
	struct iovec iov = { (void *)r->xstate, r->xlen };

	if (r->xlen) {
		if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &iov))
			return -errno;
	} else if (ptrace(PTRACE_SETFPREGS, tid, NULL, (void *)r->xstate)) {
		return -errno;
	}
	if (ptrace(PTRACE_SETREGS, tid, NULL, (void *)&r->gpr))
		return -errno;
	return 0;
}

unsigned long inject_arch_pc(const struct inject_regs *r)
{
	return r->gpr.rip;
}

unsigned long inject_arch_sp(const struct inject_regs *r)
{
	return r->gpr.rsp;
}

long inject_arch_syscall(const struct inject_regs *r)
{
	return (long)r->gpr.orig_rax;
}

void inject_arch_set_pc(struct inject_regs *r, unsigned long pc)
{
	r->gpr.rip = pc;
}

int inject_arch_call_regs(pid_t tid, const struct inject_regs *saved, struct inject_regs *call,
			  unsigned long fn, const unsigned long *args, int nargs, unsigned long sp)
{
	unsigned long long *a[6];

	if (nargs > 6)
		return -EINVAL;
	call->gpr = saved->gpr;
	a[0] = &call->gpr.rdi;
	a[1] = &call->gpr.rsi;
	a[2] = &call->gpr.rdx;
	a[3] = &call->gpr.rcx;
	a[4] = &call->gpr.r8;
	a[5] = &call->gpr.r9;
	for (int i = 0; i < nargs; i++)
		*a[i] = args[i];
	sp &= ~15UL;
	sp -= 8;
	if (ptrace(PTRACE_POKEDATA, tid, (void *)sp, (void *)0))
		return -errno;
	call->gpr.rsp = sp;
	call->gpr.rip = fn;
	call->gpr.rax = 0;
	call->gpr.orig_rax = (unsigned long long)-1;
	/* a clear direction flag, as the ABI requires at a call */
	call->gpr.eflags &= ~0x400ULL;
	return 0;
}

int inject_arch_set_call(pid_t tid, const struct inject_regs *r)
{
	return ptrace(PTRACE_SETREGS, tid, NULL, (void *)&r->gpr) ? -errno : 0;
}

bool inject_arch_returned(const struct inject_regs *r, unsigned long *ret)
{
	if (r->gpr.rip != 0)
		return false;
	*ret = r->gpr.rax;
	return true;
}

/* the runtime's disabled site: nopl 0x0(%rax,%rax,1) */
static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

int inject_arch_site_len(void)
{
	return 5;
}

int inject_arch_site_nop(const unsigned char *cur, unsigned char *out)
{
	static const unsigned char gcc[5] = { 0x90, 0x90, 0x90, 0x90, 0x90 };

	if (memcmp(cur, gcc, 5))
		return 0;
	memcpy(out, nop5, 5);
	return 5;
}
