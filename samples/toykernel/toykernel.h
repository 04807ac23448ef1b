/* SPDX-License-Identifier: MIT */
/*
 * samples/toykernel/toykernel.h - a toy kernel to trace.
 *
 * toykernel is an ordinary program whose functions carry the names, and
 * whose call trees have the shape, of the Linux kernel's: one thread per
 * CPU runs a timer tick, a scheduler with run queues, system calls on a toy
 * file system, a slab allocator, soft interrupts and RCU callbacks; its
 * toy tasks fork, exec and exit.  Built with the patch flags
 * and run under usft, `echo function > current_tracer` in its tracefs
 * shows what the same command shows on a kernel.
 *
 * Every function the tracer should see is marked __toy: kept out of line
 * and out of interprocedural optimisation, so the call tree in a trace is
 * the one written in these files.  The file names follow the kernel's
 * (sched.c ~ kernel/sched/core.c, slab.c ~ mm/slab.c, ...).
 */
#ifndef TOYKERNEL_H
#define TOYKERNEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>

#if defined(__clang__)
#define __toy __attribute__((noinline, used))
#else
#define __toy __attribute__((noinline, noipa, used))
#endif
/* a compiler barrier: keeps a call from becoming a tail jump */
#define barrier() __asm__ __volatile__("" ::: "memory")

#define TOY_MAX_CPUS	8
#define TOY_COMM_LEN	16

/* locking.c: the kernel's lock family, each a real lock */
typedef struct { atomic_int locked; } spinlock_t;
struct mutex { pthread_mutex_t m; };
#define DEFINE_SPINLOCK(x)	spinlock_t x = { 0 }
#define DEFINE_MUTEX(x)		struct mutex x = { PTHREAD_MUTEX_INITIALIZER }

void spin_lock(spinlock_t *l);
void spin_unlock(spinlock_t *l);
int spin_trylock(spinlock_t *l);
void raw_spin_lock(spinlock_t *l);
void raw_spin_unlock(spinlock_t *l);
void mutex_lock(struct mutex *m);
void mutex_unlock(struct mutex *m);
int mutex_trylock(struct mutex *m);
void console_lock(void);
void console_unlock(void);
void preempt_disable(void);
void preempt_enable(void);
void preempt_enable_no_resched(void);

/* rcu.c */
struct rcu_head {
	struct rcu_head *next;
	void (*func)(struct rcu_head *head);
};
void rcu_read_lock(void);
void rcu_read_unlock(void);
void call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *head));
void rcu_sched_clock_irq(void);
void rcu_core(void);

/* slab.c */
struct kmem_cache;
struct kmem_cache *kmem_cache_create(const char *name, size_t size);
void *kmem_cache_alloc(struct kmem_cache *s);
void kmem_cache_free(struct kmem_cache *s, void *obj);
void *kmalloc(size_t size);
void kfree(void *obj);
void kmem_cache_init(void);

/* sched.c: a task and the per-CPU run queue */
enum task_state { TASK_RUNNING, TASK_DEAD };

struct task_struct {
	int pid;
	char comm[TOY_COMM_LEN];
	enum task_state state;
	unsigned long vruntime;		/* ticks run: the fair class picks the least */
	unsigned long exit_at;		/* step at which it calls do_exit(); 0: never */
	unsigned long step;		/* system calls made: run_task()'s program counter */
	struct task_struct *next;	/* run-queue link */
	struct rcu_head rcu;
};

struct rq {
	spinlock_t lock;
	int cpu;
	unsigned int nr_running;
	struct task_struct *tasks;	/* runnable tasks, unordered */
	struct task_struct *curr;
	struct task_struct *idle;
	bool need_resched;
	unsigned long clock;		/* sched_clock() at the last update_rq_clock() */
	unsigned long ticks;
	unsigned long nr_switches;
};

extern int nr_cpu_ids;
extern int toy_hz;
extern atomic_bool toy_stopping;
extern _Thread_local struct rq *this_rq;
extern _Thread_local struct task_struct *current;

void sched_init(int nr_cpus);
struct rq *cpu_rq(int cpu);
void schedule(void);
void schedule_idle(void);
void preempt_schedule(void);
void io_schedule(void);
long schedule_timeout(long ticks);
void scheduler_tick(void);
void sched_tick(void);
void wake_up_new_task(struct task_struct *p);
unsigned long sched_clock(void);
unsigned long local_clock(void);
void do_exit(void);
void cpu_startup_entry(int cpu);

/* time.c */
void timer_interrupt(void);
unsigned long ktime_get(void);
long sys_nanosleep(unsigned long ns);
extern atomic_ulong jiffies;

/* softirq.c */
enum { HI_SOFTIRQ, TIMER_SOFTIRQ, NET_RX_SOFTIRQ, TASKLET_SOFTIRQ, RCU_SOFTIRQ, NR_SOFTIRQS };
void raise_softirq(unsigned int nr);
void irq_enter(void);
void irq_exit(void);

/* fork.c and exec.c */
long kernel_clone(const char *comm);
long _do_fork(const char *comm);
int do_execve(struct task_struct *p, const char *filename);
void fork_init(void);
void init_task_start(void);
void free_task(struct task_struct *p);
extern atomic_int nr_threads;
extern atomic_ulong total_forks;
extern struct task_struct *init_task;	/* pid 1: every task's parent here */

/* signal.c */
#define SIGCHLD 17
void exit_notify(struct task_struct *tsk);
int do_notify_parent(struct task_struct *tsk, int sig);

/* fs.c: system calls on a toy file system */
long sys_read(int fd, char *buf, size_t count);
long sys_write(int fd, const char *buf, size_t count);
long sys_fcntl(int fd, int cmd);
long sys_sched_yield(void);
long sys_clone(const char *comm);
long sys_vfork(const char *comm);
long sys_execve(const char *filename);
void run_task(struct task_struct *p);
void vfs_init(void);

/* printk.c */
extern bool toy_console;
int printk(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
