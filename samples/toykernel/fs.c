// SPDX-License-Identifier: MIT
/*
 * fs.c - system calls on a toy file system (fs/read_write.c, fs/locks.c,
 * fs/fcntl.c, kernel/sched/core.c's sched_yield) and the toy tasks'
 * program.  Files are in-memory inodes guarded by a mutex:
 *
 *   do_syscall_64()
 *     sys_read()                       sys_write()
 *       ksys_read()                      ksys_write()
 *         fdget()                          fdget()
 *           rcu_read_lock()                vfs_write()
 *         vfs_read()                         kmalloc()
 *           toyfs_read_iter()                toyfs_write_iter()
 *             mutex_lock()                     mutex_trylock() / mutex_lock()
 *             io_schedule()  (a miss)          mutex_unlock()
 *             mutex_unlock()                 kfree()
 *
 *   sys_fcntl(F_SETLK)
 *     do_fcntl()
 *       fcntl_setlk()
 *         locks_alloc_lock()           the file_lock cache
 *         posix_lock_file()
 *           spin_lock()                the inode's flc_lock
 *         locks_free_lock()
 */
#include <stdio.h>
#include <string.h>
#include "toykernel.h"

#define NR_FILES	4
#define F_SETLK		6
#define TOYFS_SIZE	256

struct inode {
	struct mutex i_rwsem;
	spinlock_t flc_lock;
	unsigned long nr_locks, nr_reads, nr_writes;
	char data[TOYFS_SIZE];
};

struct file {
	struct inode *f_inode;
	unsigned long f_pos;
};

struct file_lock {
	int fl_pid;
	unsigned long fl_start, fl_end;
};

static struct inode inodes[NR_FILES];
static struct file files[NR_FILES];
static struct kmem_cache *filelock_cache;

/* the fd table is read under RCU in the kernel: a lookup never takes a lock */
__toy static struct file *fdget(int fd)
{
	struct file *f = NULL;

	rcu_read_lock();
	if (fd >= 0 && fd < NR_FILES)
		f = &files[fd];
	rcu_read_unlock();
	return f;
}

__toy static long toyfs_read_iter(struct file *f, char *buf, size_t count)
{
	struct inode *inode = f->f_inode;
	size_t n = count < TOYFS_SIZE ? count : TOYFS_SIZE;

	mutex_lock(&inode->i_rwsem);
	/* one read in 16 misses the page cache and waits for the "disk" */
	if (++inode->nr_reads % 16 == 0)
		io_schedule();
	memcpy(buf, inode->data, n);
	mutex_unlock(&inode->i_rwsem);
	f->f_pos += n;
	return (long)n;
}

__toy static long vfs_read(struct file *f, char *buf, size_t count)
{
	return toyfs_read_iter(f, buf, count);
}

__toy static long ksys_read(int fd, char *buf, size_t count)
{
	struct file *f = fdget(fd);

	return f ? vfs_read(f, buf, count) : -9;	/* -EBADF */
}

__toy long sys_read(int fd, char *buf, size_t count)
{
	return ksys_read(fd, buf, count);
}

__toy static long toyfs_write_iter(struct file *f, const char *page, size_t n)
{
	struct inode *inode = f->f_inode;

	if (!mutex_trylock(&inode->i_rwsem))
		mutex_lock(&inode->i_rwsem);
	memcpy(inode->data, page, n);
	inode->nr_writes++;
	mutex_unlock(&inode->i_rwsem);
	return (long)n;
}

__toy static long vfs_write(struct file *f, const char *buf, size_t count)
{
	size_t n = count < TOYFS_SIZE ? count : TOYFS_SIZE;
	char *page = kmalloc(n);	/* copy_from_user() into a kernel buffer */
	long ret;

	if (!page)
		return -12;	/* -ENOMEM */
	memcpy(page, buf, n);
	ret = toyfs_write_iter(f, page, n);
	kfree(page);
	return ret;
}

__toy static long ksys_write(int fd, const char *buf, size_t count)
{
	struct file *f = fdget(fd);

	return f ? vfs_write(f, buf, count) : -9;	/* -EBADF */
}

__toy long sys_write(int fd, const char *buf, size_t count)
{
	return ksys_write(fd, buf, count);
}

__toy static struct file_lock *locks_alloc_lock(void)
{
	return kmem_cache_alloc(filelock_cache);
}

__toy static void locks_free_lock(struct file_lock *fl)
{
	kmem_cache_free(filelock_cache, fl);
}

__toy static int posix_lock_file(struct file *f, struct file_lock *fl)
{
	spin_lock(&f->f_inode->flc_lock);
	f->f_inode->nr_locks++;
	spin_unlock(&f->f_inode->flc_lock);
	return fl->fl_pid ? 0 : -1;
}

__toy static long fcntl_setlk(struct file *f)
{
	struct file_lock *fl = locks_alloc_lock();
	long ret;

	if (!fl)
		return -12;	/* -ENOMEM */
	fl->fl_pid = current->pid;
	fl->fl_start = 0;
	fl->fl_end = TOYFS_SIZE - 1;
	ret = posix_lock_file(f, fl);
	locks_free_lock(fl);	/* a toy: the lock is dropped at once */
	return ret;
}

__toy static long do_fcntl(struct file *f, int cmd)
{
	return cmd == F_SETLK ? fcntl_setlk(f) : -22;	/* -EINVAL */
}

__toy long sys_fcntl(int fd, int cmd)
{
	struct file *f = fdget(fd);

	return f ? do_fcntl(f, cmd) : -9;
}

__toy static void do_sched_yield(void)
{
	schedule();
	barrier();
}

__toy long sys_sched_yield(void)
{
	do_sched_yield();
	return 0;
}

__toy long sys_clone(const char *comm)
{
	return kernel_clone(comm);
}

__toy long sys_vfork(const char *comm)
{
	return _do_fork(comm);
}

__toy long sys_execve(const char *filename)
{
	return do_execve(current, filename);
}

/* a task's "program": one system call per tick, in turn */
enum { NR_read, NR_write, NR_fcntl, NR_sched_yield, NR_nanosleep, NR_clone, NR_vfork, NR_execve };

__toy static long do_syscall_64(struct task_struct *p, int nr)
{
	char buf[64];
	int fd = p->pid % NR_FILES;

	switch (nr) {
	case NR_read:
		return sys_read(fd, buf, sizeof(buf));
	case NR_write:
		snprintf(buf, sizeof(buf), "%s-%d was here\n", p->comm, p->pid);
		return sys_write(fd, buf, strlen(buf) + 1);
	case NR_fcntl:
		return sys_fcntl(fd, F_SETLK);
	case NR_sched_yield:
		return sys_sched_yield();
	case NR_nanosleep:
		return sys_nanosleep(1000000);	/* 1 ms */
	case NR_clone:
		return sys_clone(p->comm);
	case NR_vfork:
		return sys_vfork(p->comm);
	case NR_execve:
		return sys_execve(p->pid % 2 ? "/bin/sh" : "/usr/bin/make");
	}
	return -38;	/* -ENOSYS */
}

#define MAX_TASKS 24

__toy void run_task(struct task_struct *p)
{
	static const int program[] = {
		NR_read, NR_write, NR_fcntl, NR_read, NR_sched_yield, NR_read, NR_nanosleep,
	};
	unsigned long step = p->step++;

	if (p->exit_at && step >= p->exit_at) {
		do_exit();
		return;
	}
	if (step == 0 && p->pid != 1) {
		do_syscall_64(p, NR_execve);	/* a new child execs first */
		return;
	}
	/* every task forks once, as its second call; init keeps forking */
	if ((p->pid == 1 && step % 4 == 0) || step == 1) {
		if (atomic_load(&nr_threads) < MAX_TASKS) {
			do_syscall_64(p, p->pid % 16 == 0 ? NR_vfork : NR_clone);
			return;
		}
		if (p->pid == 1 && step % 1024 == 0)
			printk("init: %d tasks, not forking\n", atomic_load(&nr_threads));
	}
	do_syscall_64(p, program[step % (sizeof(program) / sizeof(program[0]))]);
}

void vfs_init(void)
{
	filelock_cache = kmem_cache_create("file_lock_cache", sizeof(struct file_lock));
	for (int i = 0; i < NR_FILES; i++) {
		pthread_mutex_init(&inodes[i].i_rwsem.m, NULL);
		files[i].f_inode = &inodes[i];
	}
}
