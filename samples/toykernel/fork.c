// SPDX-License-Identifier: MIT
/*
 * fork.c - process creation (kernel/fork.c).  A task forks with
 * sys_clone(); the child is a copy of its parent, put on some CPU's run
 * queue by wake_up_new_task():
 *
 *   sys_clone()
 *     kernel_clone()                   _do_fork() before Linux 5.10
 *       copy_process()
 *         dup_task_struct()
 *           kmem_cache_alloc()         the task_struct cache
 *         alloc_pid()
 *         sched_fork()
 *       wake_up_new_task()
 *         select_task_rq()
 *         enqueue_task_fair()
 */
#include <string.h>
#include "events.h"
#include "toykernel.h"

static struct kmem_cache *task_struct_cachep;
static atomic_int last_pid = 1;
atomic_int nr_threads;
atomic_ulong total_forks;
struct task_struct *init_task;

__toy static int alloc_pid(void)
{
	return atomic_fetch_add(&last_pid, 1) + 1;
}

__toy static struct task_struct *dup_task_struct(const struct task_struct *orig)
{
	struct task_struct *p = kmem_cache_alloc(task_struct_cachep);

	if (p && orig)
		*p = *orig;
	else if (p)
		memset(p, 0, sizeof(*p));
	return p;
}

__toy static void sched_fork(struct task_struct *p)
{
	p->state = TASK_RUNNING;
	p->vruntime = 0;
	p->next = NULL;
}

__toy static struct task_struct *copy_process(const char *comm)
{
	struct task_struct *p = dup_task_struct(current);

	if (!p)
		return NULL;
	p->pid = alloc_pid();
	strncpy(p->comm, comm, sizeof(p->comm) - 1);
	p->comm[sizeof(p->comm) - 1] = '\0';
	/*
	 * a child lives for 4 to 11 system calls: the population turns over
	 * fast, so that kernel_clone() and do_execve() run hundreds of times a
	 * second and a trace window of a few milliseconds sees some
	 */
	p->exit_at = 4 + (unsigned long)p->pid * 37 % 8;
	p->step = 0;
	sched_fork(p);
	atomic_fetch_add(&nr_threads, 1);
	return p;
}

__toy long kernel_clone(const char *comm)
{
	struct task_struct *p = copy_process(comm);

	if (!p)
		return -12;	/* -ENOMEM */
	trace_sched_process_fork(current, p);
	wake_up_new_task(p);
	atomic_fetch_add(&total_forks, 1);
	return p->pid;
}

/* the name kernel_clone() had until Linux 5.10: sys_vfork() still comes this way here */
__toy long _do_fork(const char *comm)
{
	return kernel_clone(comm);
}

__toy void free_task(struct task_struct *p)
{
	atomic_fetch_sub(&nr_threads, 1);
	kmem_cache_free(task_struct_cachep, p);
}

void fork_init(void)
{
	task_struct_cachep = kmem_cache_create("task_struct", sizeof(struct task_struct));
}

/* init, pid 1: the first task, on CPU 0; it never exits */
void init_task_start(void)
{
	struct task_struct *init = copy_process("init");

	init->pid = 1;
	init->exit_at = 0;
	init_task = init;
	wake_up_new_task(init);
}
