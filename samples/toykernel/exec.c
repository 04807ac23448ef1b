// SPDX-License-Identifier: MIT
/*
 * exec.c - program execution (fs/exec.c, fs/binfmt_elf.c).  A new child
 * execs first thing: the task keeps its pid and takes the program's name.
 *
 *   sys_execve()
 *     do_execve()
 *       do_execveat_common()
 *         bprm_execve()
 *           exec_binprm()
 *             search_binary_handler()
 *               load_elf_binary()
 *                 begin_new_exec()     the new comm
 */
#include <string.h>
#include "events.h"
#include "toykernel.h"

struct linux_binprm {
	const char *filename;
	struct task_struct *task;
	char buf[128];		/* the file's first bytes, as prepare_binprm() reads them */
};

__toy static int begin_new_exec(struct linux_binprm *bprm)
{
	const char *base = strrchr(bprm->filename, '/');

	base = base ? base + 1 : bprm->filename;
	strncpy(bprm->task->comm, base, sizeof(bprm->task->comm) - 1);
	return 0;
}

__toy static int load_elf_binary(struct linux_binprm *bprm)
{
	if (memcmp(bprm->buf, "\177ELF", 4))
		return -8;	/* -ENOEXEC */
	return begin_new_exec(bprm);
}

__toy static int search_binary_handler(struct linux_binprm *bprm)
{
	return load_elf_binary(bprm);
}

__toy static int exec_binprm(struct linux_binprm *bprm)
{
	int old_pid = bprm->task->pid, ret = search_binary_handler(bprm);

	if (ret >= 0)
		trace_sched_process_exec(bprm->task, old_pid, bprm->filename);
	return ret;
}

__toy static int bprm_execve(struct linux_binprm *bprm)
{
	memcpy(bprm->buf, "\177ELF", 4);
	return exec_binprm(bprm);
}

__toy static int do_execveat_common(struct task_struct *p, const char *filename)
{
	struct linux_binprm *bprm = kmalloc(sizeof(*bprm));
	int ret;

	if (!bprm)
		return -12;	/* -ENOMEM */
	memset(bprm, 0, sizeof(*bprm));
	bprm->filename = filename;
	bprm->task = p;
	ret = bprm_execve(bprm);
	kfree(bprm);
	return ret;
}

__toy int do_execve(struct task_struct *p, const char *filename)
{
	return do_execveat_common(p, filename);
}
