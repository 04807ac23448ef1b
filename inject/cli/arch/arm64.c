// SPDX-License-Identifier: MIT
/*
 * inject/cli/arch/arm64.c - the arm64 part of `usft attach` (inject.h):
 * NT_PRSTATUS (x0-x30, sp, pc, pstate), NT_FPREGSET (v0-v31, fpsr, fpcr)
 * and NT_ARM_SYSTEM_CALL (the syscall-restart state), an AAPCS64 call frame,
 * and no site rewriting (the compiler's two NOPs are already the runtime's
 * disabled form: each is one instruction, no thread can be inside one).
 *
 * Call frame: sp = the thread's sp - scratch, aligned to 16; x0-x7 the
 * arguments; x30 (lr) = 0 so the return faults (SIGSEGV at pc 0, seen by
 * the tracer and never delivered); the system call number -1 so that
 * resuming restarts nothing.  Nothing is written into the target's text, so
 * no cache maintenance is needed here; the runtime does its own after it
 * patches (runtime/arch/arm64).
 */
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/uio.h>
#include "inject.h"

#ifndef NT_ARM_SYSTEM_CALL
#define NT_ARM_SYSTEM_CALL 0x404
#endif

/*
 * glibc's <sys/user.h> layouts of NT_PRSTATUS and NT_FPREGSET (the uapi
 * user_pt_regs / user_fpsimd_state): <asm/ptrace.h> would be the runtime's
 * own arch header on this include path.
 */
struct inject_regs {
	struct user_regs_struct gpr;
	struct user_fpsimd_struct fp;
	int syscallno;
};

size_t inject_arch_regs_size(void)
{
	return sizeof(struct inject_regs);
}

unsigned short inject_arch_machine(void)
{
	return EM_AARCH64;
}

static int regset(pid_t tid, int get, long type, void *p, size_t len)
{
	struct iovec iov = { p, len };

	return ptrace(get ? PTRACE_GETREGSET : PTRACE_SETREGSET, tid, (void *)type, &iov) ? -errno : 0;
}

int inject_arch_save(pid_t tid, struct inject_regs *r)
{
	int ret = regset(tid, 1, NT_PRSTATUS, &r->gpr, sizeof(r->gpr));

	if (!ret)
		ret = regset(tid, 1, NT_FPREGSET, &r->fp, sizeof(r->fp));
	if (!ret)
		ret = regset(tid, 1, NT_ARM_SYSTEM_CALL, &r->syscallno, sizeof(r->syscallno));
	return ret;
}

int inject_arch_restore(pid_t tid, const struct inject_regs *r)
{
	int ret = regset(tid, 0, NT_FPREGSET, (void *)&r->fp, sizeof(r->fp));

	if (!ret)
		ret = regset(tid, 0, NT_PRSTATUS, (void *)&r->gpr, sizeof(r->gpr));
	if (!ret)
		ret = regset(tid, 0, NT_ARM_SYSTEM_CALL, (void *)&r->syscallno, sizeof(r->syscallno));
	return ret;
}

unsigned long inject_arch_pc(const struct inject_regs *r)
{
	return r->gpr.pc;
}

unsigned long inject_arch_sp(const struct inject_regs *r)
{
	return r->gpr.sp;
}

long inject_arch_syscall(const struct inject_regs *r)
{
	return r->syscallno;
}

void inject_arch_set_pc(struct inject_regs *r, unsigned long pc)
{
	r->gpr.pc = pc;
}

int inject_arch_call_regs(pid_t tid, const struct inject_regs *saved, struct inject_regs *call,
			  unsigned long fn, const unsigned long *args, int nargs, unsigned long sp)
{
	(void)tid;
	if (nargs > 8)
		return -EINVAL;
	*call = *saved;
	for (int i = 0; i < nargs; i++)
		call->gpr.regs[i] = args[i];
	call->gpr.regs[30] = 0;
	call->gpr.sp = sp & ~15UL;
	call->gpr.pc = fn;
	call->syscallno = -1;
	return 0;
}

int inject_arch_set_call(pid_t tid, const struct inject_regs *r)
{
	int ret = regset(tid, 0, NT_PRSTATUS, (void *)&r->gpr, sizeof(r->gpr));

	if (!ret)
		ret = regset(tid, 0, NT_ARM_SYSTEM_CALL, (void *)&r->syscallno, sizeof(r->syscallno));
	return ret;
}

bool inject_arch_returned(const struct inject_regs *r, unsigned long *ret)
{
	if (r->gpr.pc != 0)
		return false;
	*ret = r->gpr.regs[0];
	return true;
}

int inject_arch_site_len(void)
{
	return 8;
}

int inject_arch_site_nop(const unsigned char *cur, unsigned char *out)
{
	(void)cur;
	(void)out;
	return 0;
}
