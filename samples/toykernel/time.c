// SPDX-License-Identifier: MIT
/*
 * time.c - the periodic tick and the clocks (kernel/time/tick-sched.c,
 * timekeeping.c, timer.c, kernel/sched/clock.c).  Each CPU thread takes
 * toy_hz ticks a second (default 1000, the kernel's CONFIG_HZ_1000):
 *
 *   timer_interrupt()
 *     irq_enter()
 *     hrtimer_interrupt()
 *       tick_sched_timer()
 *         tick_do_update_jiffies64()   CPU 0 only: jiffies, wall time
 *           update_wall_time()
 *             timekeeping_advance()
 *         update_process_times()
 *           run_local_timers()         raise_softirq(TIMER_SOFTIRQ)
 *           rcu_sched_clock_irq()
 *           scheduler_tick()
 *     irq_exit()                       the softirqs run here
 *
 * and a task's sleep (kernel/time/hrtimer.c):
 *
 *   sys_nanosleep()
 *     hrtimer_nanosleep()
 *       hrtimer_start_range_ns()
 *       do_nanosleep()
 *         schedule()                     the CPU runs another task meanwhile
 *       hrtimer_try_to_cancel()
 */
#include <time.h>
#include "toykernel.h"

atomic_ulong jiffies;
static unsigned long wall_time_ns;

static unsigned long read_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (unsigned long)ts.tv_sec * 1000000000ul + (unsigned long)ts.tv_nsec;
}

__toy unsigned long ktime_get(void)
{
	return read_clock(CLOCK_MONOTONIC);
}

/* the scheduler's clock: fast, per CPU, not synchronised (a TSC read in the kernel) */
__toy unsigned long sched_clock(void)
{
	return read_clock(CLOCK_MONOTONIC_RAW);
}

__toy unsigned long local_clock(void)
{
	return sched_clock();
}

__toy static void timekeeping_advance(void)
{
	wall_time_ns = read_clock(CLOCK_REALTIME);
}

__toy static void update_wall_time(void)
{
	timekeeping_advance();
	barrier();
}

__toy static void tick_do_update_jiffies64(void)
{
	atomic_fetch_add(&jiffies, 1);
	update_wall_time();
}

__toy static void run_local_timers(void)
{
	raise_softirq(TIMER_SOFTIRQ);
}

__toy static void update_process_times(void)
{
	run_local_timers();
	rcu_sched_clock_irq();
	scheduler_tick();
}

__toy static void tick_sched_timer(void)
{
	if (this_rq->cpu == 0)
		tick_do_update_jiffies64();
	update_process_times();
}

__toy static void hrtimer_interrupt(void)
{
	tick_sched_timer();
	barrier();
}

struct hrtimer {
	unsigned long expires;		/* ns, ktime_get() time */
	bool active;
};

__toy static void hrtimer_start_range_ns(struct hrtimer *t, unsigned long delta_ns)
{
	t->expires = ktime_get() + delta_ns;
	t->active = true;
}

__toy static int hrtimer_try_to_cancel(struct hrtimer *t)
{
	int was_active = t->active;

	t->active = false;
	return was_active;
}

__toy static long do_nanosleep(struct hrtimer *t)
{
	/* a toy: the task gives its CPU away once; the tick is its wake-up */
	schedule();
	return t->expires > ktime_get() ? (long)(t->expires - ktime_get()) : 0;
}

__toy static long hrtimer_nanosleep(unsigned long ns)
{
	struct hrtimer t = { 0 };
	long left;

	hrtimer_start_range_ns(&t, ns);
	left = do_nanosleep(&t);
	hrtimer_try_to_cancel(&t);
	return left;
}

__toy long sys_nanosleep(unsigned long ns)
{
	return hrtimer_nanosleep(ns);
}

__toy void timer_interrupt(void)
{
	irq_enter();
	hrtimer_interrupt();
	irq_exit();
}
