// SPDX-License-Identifier: MIT
/*
 * sched-direct-modify - a module in the style of the kernel's samples/ftrace:
 * two direct trampolines in one asm() block, attached in turn to schedule()
 * by a kthread that calls modify_ftrace_direct() every few milliseconds
 * while the toy kernel's workers keep calling schedule().
 *
 * The trampolines follow each other in one section, so the first one's
 * ASM_RET decides the second one's address: the kernel's ASM_RET is
 * "ret; int3" (2 bytes), and so is <usft/module.h>'s; a bare "ret" would
 * make my_sched_tramp2 odd, which reads as the jmp bit.  The module checks
 * at exit that both trampolines ran.
 */
#include <usft/module.h>
#include <usft/ftrace.h>

static unsigned long hits[2];
static unsigned int flip_ms = 5;
module_param(flip_ms, uint, 0444);
MODULE_PARM_DESC(flip_ms, "milliseconds between two modify_ftrace_direct() calls");

void my_sched_func1(void);
void my_sched_func2(void);

void my_sched_func1(void)
{
	__atomic_add_fetch(&hits[0], 1, __ATOMIC_RELAXED);
}

void my_sched_func2(void)
{
	__atomic_add_fetch(&hits[1], 1, __ATOMIC_RELAXED);
}

extern void my_sched_tramp1(void *);
extern void my_sched_tramp2(void *);

#ifdef CONFIG_X86_64
asm (
"	.pushsection	.text, \"ax\", @progbits\n"
"	.p2align	4\n"
"	.type		my_sched_tramp1, @function\n"
"	.globl		my_sched_tramp1\n"
"   my_sched_tramp1:"
	ASM_ENDBR
"	pushq %rbp\n"
"	movq %rsp, %rbp\n"
	CALL_DEPTH_ACCOUNT
"	pushq %rdi\n"		/* also keeps rsp 16-byte aligned for the C call */
"	call my_sched_func1\n"
"	popq %rdi\n"
"	leave\n"
	ASM_RET
"	.size		my_sched_tramp1, .-my_sched_tramp1\n"
"	.type		my_sched_tramp2, @function\n"
"	.globl		my_sched_tramp2\n"
"   my_sched_tramp2:"
	ASM_ENDBR
"	pushq %rbp\n"
"	movq %rsp, %rbp\n"
	CALL_DEPTH_ACCOUNT
"	pushq %rdi\n"		/* also keeps rsp 16-byte aligned for the C call */
"	call my_sched_func2\n"
"	popq %rdi\n"
"	leave\n"
	ASM_RET
"	.size		my_sched_tramp2, .-my_sched_tramp2\n"
"	.popsection\n"
);
#endif /* CONFIG_X86_64 */

#ifdef CONFIG_ARM64
asm (
"	.pushsection	.text, \"ax\", @progbits\n"
"	.p2align	3\n"
"	.type		my_sched_tramp1, @function\n"
"	.globl		my_sched_tramp1\n"
"   my_sched_tramp1:"
"	hint	34\n"		/* bti c */
"	sub	sp, sp, #16\n"
"	stp	x9, x30, [sp]\n"
"	bl	my_sched_func1\n"
"	ldp	x30, x9, [sp]\n"
"	add	sp, sp, #16\n"
"	ret	x9\n"
"	.size		my_sched_tramp1, .-my_sched_tramp1\n"
"	.type		my_sched_tramp2, @function\n"
"	.globl		my_sched_tramp2\n"
"   my_sched_tramp2:"
"	hint	34\n"		/* bti c */
"	sub	sp, sp, #16\n"
"	stp	x9, x30, [sp]\n"
"	bl	my_sched_func2\n"
"	ldp	x30, x9, [sp]\n"
"	add	sp, sp, #16\n"
"	ret	x9\n"
"	.size		my_sched_tramp2, .-my_sched_tramp2\n"
"	.popsection\n"
);
#endif /* CONFIG_ARM64 */

static unsigned long my_tramp = (unsigned long)my_sched_tramp1;
static unsigned long tramps[2] = {
	(unsigned long)my_sched_tramp1,
	(unsigned long)my_sched_tramp2,
};

static struct ftrace_ops direct;
static struct task_struct *flip_tsk;
static int flip_err;

static int flip_thread(void *arg)
{
	int t = 0, ret;

	(void)arg;
	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		schedule_timeout(msecs_to_jiffies(flip_ms));
		t ^= 1;
		ret = modify_ftrace_direct(&direct, tramps[t]);
		if (!ret)
			my_tramp = tramps[t];
		else
			flip_err = ret;
		WARN_ON_ONCE(ret);
	}
	return 0;
}

static int __init sched_direct_modify_init(void)
{
	int ret;

	ret = ftrace_set_filter_ip(&direct, (unsigned long)schedule, 0, 0);
	if (ret)
		return ret;
	ret = register_ftrace_direct(&direct, my_tramp);
	if (!ret)
		flip_tsk = kthread_run(flip_thread, NULL, "direct-flip");
	return ret;
}

static void __exit sched_direct_modify_exit(void)
{
	kthread_stop(flip_tsk);
	unregister_ftrace_direct(&direct, my_tramp, true);
	pr_info("sched-direct-modify: tramp1 %lu hits, tramp2 %lu hits, modify errors %d\n",
		hits[0], hits[1], flip_err);
	/* the module's own check: both trampolines ran, no modify failed */
	BUG_ON(!hits[0] || !hits[1] || flip_err);
}

module_init(sched_direct_modify_init);
module_exit(sched_direct_modify_exit);

MODULE_AUTHOR("usft");
MODULE_DESCRIPTION("modify_ftrace_direct() on schedule() from a kthread");
MODULE_LICENSE("MIT");
