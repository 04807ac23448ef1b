// SPDX-License-Identifier: MIT
/*
 * locking.c - the lock family (kernel/locking/spinlock.c, mutex.c,
 * kernel/printk's console lock).  Each is a real lock: the CPU threads and
 * kthreadd contend on the run queues, the slab caches and the toy inodes.
 *
 *   spin_lock()
 *     raw_spin_lock()
 *       _raw_spin_lock()
 *         preempt_disable()
 *   spin_unlock()
 *     raw_spin_unlock()
 *       _raw_spin_unlock()
 *         preempt_enable()   preempt_schedule() when a tick asked to resched
 */
#include <sched.h>
#include "toykernel.h"

static _Thread_local int preempt_count;
static DEFINE_MUTEX(console_mutex);

__toy void preempt_disable(void)
{
	preempt_count++;
	barrier();
}

__toy void preempt_enable(void)
{
	barrier();
	if (--preempt_count == 0 && this_rq && this_rq->need_resched)
		preempt_schedule();
}

/* the way out of an interrupt: the return path, not this, reschedules */
__toy void preempt_enable_no_resched(void)
{
	barrier();
	preempt_count--;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__)
	__asm__ __volatile__("pause");
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

__toy void _raw_spin_lock(spinlock_t *l)
{
	preempt_disable();
	while (atomic_exchange_explicit(&l->locked, 1, memory_order_acquire)) {
		while (atomic_load_explicit(&l->locked, memory_order_relaxed))
			cpu_relax();
	}
}

__toy void _raw_spin_unlock(spinlock_t *l)
{
	atomic_store_explicit(&l->locked, 0, memory_order_release);
	preempt_enable();
}

__toy void raw_spin_lock(spinlock_t *l)
{
	_raw_spin_lock(l);
	barrier();
}

__toy void raw_spin_unlock(spinlock_t *l)
{
	_raw_spin_unlock(l);
	barrier();
}

/* spinlock_t wraps a raw_spinlock_t in the kernel: spin_lock() is raw_spin_lock() on it */
__toy void spin_lock(spinlock_t *l)
{
	raw_spin_lock(l);
	barrier();
}

__toy void spin_unlock(spinlock_t *l)
{
	raw_spin_unlock(l);
	barrier();
}

__toy int spin_trylock(spinlock_t *l)
{
	preempt_disable();
	if (!atomic_exchange_explicit(&l->locked, 1, memory_order_acquire))
		return 1;
	preempt_enable();
	return 0;
}

/* a contended mutex sleeps: here in pthread_mutex_lock(), which is not traced */
__toy static void __mutex_lock_slowpath(struct mutex *m)
{
	pthread_mutex_lock(&m->m);
	barrier();
}

__toy void mutex_lock(struct mutex *m)
{
	if (pthread_mutex_trylock(&m->m))
		__mutex_lock_slowpath(m);
	barrier();
}

__toy void mutex_unlock(struct mutex *m)
{
	pthread_mutex_unlock(&m->m);
	barrier();
}

__toy int mutex_trylock(struct mutex *m)
{
	return pthread_mutex_trylock(&m->m) == 0;
}

/* printk() takes the console lock to hand its line to the consoles */
__toy void console_lock(void)
{
	mutex_lock(&console_mutex);
	barrier();
}

__toy void console_unlock(void)
{
	mutex_unlock(&console_mutex);
	barrier();
}
