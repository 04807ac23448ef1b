// SPDX-License-Identifier: MIT
/*
 * softirq.c - soft interrupts (kernel/softirq.c).  An interrupt handler
 * does the urgent part and raises a softirq for the rest; on the way out
 * of the interrupt, irq_exit() runs every pending softirq:
 *
 *   timer_interrupt()
 *     irq_enter()
 *     hrtimer_interrupt() ...  raise_softirq(TIMER_SOFTIRQ), (RCU_SOFTIRQ)
 *     irq_exit()
 *       invoke_softirq()
 *         __do_softirq()
 *           run_timer_softirq()
 *           rcu_core()
 */
#include "toykernel.h"

static _Thread_local unsigned int softirq_pending;
static _Thread_local int in_irq;
static unsigned long softirq_count[TOY_MAX_CPUS][NR_SOFTIRQS];

__toy static void run_timer_softirq(void)
{
	/* expire the timer wheel: toykernel's only timer is the tick itself */
	barrier();
}

__toy static void tasklet_action(void)
{
	barrier();
}

__toy static void net_rx_action(void)
{
	barrier();
}

static void (*const softirq_vec[NR_SOFTIRQS])(void) = {
	[HI_SOFTIRQ] = tasklet_action,
	[TIMER_SOFTIRQ] = run_timer_softirq,
	[NET_RX_SOFTIRQ] = net_rx_action,
	[TASKLET_SOFTIRQ] = tasklet_action,
	[RCU_SOFTIRQ] = rcu_core,
};

__toy void raise_softirq(unsigned int nr)
{
	softirq_pending |= 1u << nr;
}

__toy static void __do_softirq(void)
{
	unsigned int pending = softirq_pending;
	int cpu = this_rq ? this_rq->cpu : 0;

	softirq_pending = 0;
	for (unsigned int nr = 0; pending; nr++, pending >>= 1) {
		if (!(pending & 1))
			continue;
		softirq_count[cpu][nr]++;
		softirq_vec[nr]();
	}
}

__toy static void invoke_softirq(void)
{
	__do_softirq();
	barrier();
}

__toy void irq_enter(void)
{
	preempt_disable();
	in_irq++;
}

__toy void irq_exit(void)
{
	in_irq--;
	if (!in_irq && softirq_pending)
		invoke_softirq();
	preempt_enable_no_resched();
}
