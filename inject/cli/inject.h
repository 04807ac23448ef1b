/* SPDX-License-Identifier: MIT */
/*
 * inject/cli/inject.h - loading the runtime into a running process with
 * ptrace (inject.c, generic) and the per-architecture part it calls
 * (arch/<arch>.c: register sets, the call frame, site bytes).  How and why
 * it is safe: docs/attach.md.
 */
#ifndef USFT_INJECT_H
#define USFT_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* ---- arch/<arch>.c ---------------------------------------------------- */

/* everything of a stopped thread that a call can change (GPRs, FP/vector
 * state, the syscall-restart state), opaque to the generic code */
struct inject_regs;

size_t inject_arch_regs_size(void);
unsigned short inject_arch_machine(void);		/* the ELF e_machine we inject into */
int inject_arch_save(pid_t tid, struct inject_regs *r);	/* Return: 0 or -errno */
int inject_arch_restore(pid_t tid, const struct inject_regs *r);
unsigned long inject_arch_pc(const struct inject_regs *r);
unsigned long inject_arch_sp(const struct inject_regs *r);
long inject_arch_syscall(const struct inject_regs *r);	/* nr, or -1: not in a system call */
void inject_arch_set_pc(struct inject_regs *r, unsigned long pc);
/*
 * Registers for calling @fn(@args) from @saved: the stack pointer at @sp
 * (16-byte aligned, below everything of the thread's own), a return that
 * traps (to address 0: SIGSEGV), no system call restarted on resume.  May
 * write the return address below @sp through @poke.  Return: 0 or -errno.
 */
int inject_arch_call_regs(pid_t tid, const struct inject_regs *saved, struct inject_regs *call,
			  unsigned long fn, const unsigned long *args, int nargs, unsigned long sp);
/* the call returned (pc 0) and its result */
bool inject_arch_returned(const struct inject_regs *r, unsigned long *ret);
/* set only the GPRs of @r (the call's), not the saved FP state */
int inject_arch_set_call(pid_t tid, const struct inject_regs *r);

/*
 * Site bytes: a site the compiler filled with something the runtime would
 * rewrite into its disabled form before first use (x86-64 gcc: five 1-byte
 * NOPs -> one 5-byte NOP), so that the target's threads never need a
 * relocation signal.  @len bytes at @site; Return: the site's length and
 * the replacement in @out, or 0 (nothing to do).
 */
int inject_arch_site_nop(const unsigned char *cur, unsigned char *out);
int inject_arch_site_len(void);

/* ---- inject.c ----------------------------------------------------------- */

struct inject_result {
	int code;		/* USFT_EXIT_* of the failure, 0 ok */
	char msg[512];		/* what happened and what to do */
};

struct usft_target {
	pid_t pid;
	uid_t uid;
	char exe[4096];
	bool has_runtime;	/* libusft-preload.so mapped already */
	bool has_libusft;	/* libusft.so.* mapped (linked with -lusft) */
	char libc[4096];	/* its libc.so.6, as it sees it */
	unsigned long libc_base;
	unsigned long nr_sites;	/* patchable sites of the objects it maps */
	unsigned long long start_time;	/* /proc/PID/stat starttime (0: unknown) */
};

/* what can be said without touching the process; Return: 0 or an exit code */
int usft_target_probe(pid_t pid, struct usft_target *t, struct inject_result *res);
/* the same without counting the sites (nr_sites 0): for a process that serves already */
int usft_target_check(pid_t pid, struct usft_target *t, struct inject_result *res);
/*
 * Load @lib into the target and call usft_control_start() there.  Threads are
 * stopped with PTRACE_SEIZE + PTRACE_INTERRUPT, one runs the calls, all are
 * released with their registers as they were.  @nop_fix: rewrite the compiler
 * NOPs first (site list of the target, see inject_arch_site_nop()).
 * Return: 0 or an exit code with @res filled.
 */
int usft_inject(struct usft_target *t, const char *lib, struct inject_result *res);
/*
 * Put the compiler's bytes back where usft_inject() rewrote NOPs (after a
 * detach: every site is the disabled NOP again).  Threads stopped meanwhile.
 */
int usft_restore_sites(struct usft_target *t, struct inject_result *res);
/* the process called exec since the probe (its libc is not where it was) */
bool usft_target_execd(const struct usft_target *t);
/* field 22 of /proc/PID/stat: when @pid started, in clock ticks since boot; 0: unknown */
unsigned long long usft_proc_start_time(pid_t pid);
/* /proc/@pid/stat into @buf; Return: its text after the name's ')' (" S ..."), or NULL */
const char *usft_proc_stat(pid_t pid, char *buf, size_t len);
/* @pid exited (gone, or a zombie not reaped yet) */
bool usft_proc_gone(pid_t pid);
/*
 * USFT_ATTACH_TIMES=1: say on stderr how long each step of an attach or a
 * detach took (@what: the step just finished), for bench/attach_live.py.
 */
void usft_attach_step(const char *what);

#endif
