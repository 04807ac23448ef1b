// SPDX-License-Identifier: MIT
/*
 * kernel/fork.c - the toy kernel's process creation: kernel_clone() and
 * copy_process(), built with the patch flags.  Nothing is forked: a
 * task_struct is allocated from the toy slab, given the next pid, and freed
 * again by release_task() (the child "exits" at once).
 */
#include <usft/module.h>

#include "kernel.h"

static int last_pid = 1000;

static noinline struct task_struct *copy_process(struct kernel_clone_args *args)
{
	struct task_struct *p = kzalloc(sizeof(*p), GFP_KERNEL);

	if (!p)
		return ERR_PTR(-ENOMEM);
	p->pid = __atomic_add_fetch(&last_pid, 1, __ATOMIC_RELAXED);
	p->tgid = p->pid;
	p->__state = TASK_RUNNING;
	memcpy(p->comm, current->comm, sizeof(p->comm));
	(void)args;
	return p;
}

static noinline void release_task(struct task_struct *p)
{
	kfree(p);
}

pid_t kernel_clone(struct kernel_clone_args *args)
{
	struct task_struct *p = copy_process(args);
	pid_t pid;

	if (IS_ERR(p))
		return (pid_t)PTR_ERR(p);
	pid = p->pid;
	release_task(p);
	return pid;
}
