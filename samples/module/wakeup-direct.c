// SPDX-License-Identifier: MIT
/*
 * wakeup-direct - a module in the style of the kernel's samples/ftrace: a
 * direct trampoline on wake_up_process() that reports every wakeup with
 * trace_printk().  Its only usft-specific lines are the two includes
 * (<linux/module.h>, <linux/sched.h> -> <usft/module.h>; <linux/ftrace.h>
 * -> <usft/ftrace.h>); docs/kernel-samples.md.
 *
 *   pkg-config: cc wakeup-direct.c $(pkg-config --cflags --libs usft-kernel)
 */
#include <usft/module.h>
#include <usft/ftrace.h>

static unsigned long nr_wakeups;

void my_wakeup_func(struct task_struct *p);

void my_wakeup_func(struct task_struct *p)
{
	if (nr_wakeups++ < 4)
		trace_printk("wakeup of %s-%d\n", p->comm, p->pid);
}

extern void my_wakeup_tramp(void *);

#ifdef CONFIG_X86_64
asm (
"	.pushsection	.text, \"ax\", @progbits\n"
"	.type		my_wakeup_tramp, @function\n"
"	.globl		my_wakeup_tramp\n"
"	.p2align	4\n"
"   my_wakeup_tramp:"
	ASM_ENDBR
"	pushq %rbp\n"
"	movq %rsp, %rbp\n"
	CALL_DEPTH_ACCOUNT
"	pushq %rdi\n"
"	call my_wakeup_func\n"
"	popq %rdi\n"
"	leave\n"
	ASM_RET
"	.size		my_wakeup_tramp, .-my_wakeup_tramp\n"
"	.popsection\n"
);
#endif /* CONFIG_X86_64 */

#ifdef CONFIG_ARM64
asm (
"	.pushsection	.text, \"ax\", @progbits\n"
"	.type		my_wakeup_tramp, @function\n"
"	.globl		my_wakeup_tramp\n"
"	.p2align	3\n"
"   my_wakeup_tramp:"
"	hint	34\n"		/* bti c */
"	sub	sp, sp, #32\n"
"	stp	x9, x30, [sp]\n"
"	str	x0, [sp, #16]\n"
"	bl	my_wakeup_func\n"
"	ldp	x30, x9, [sp]\n"
"	ldr	x0, [sp, #16]\n"
"	add	sp, sp, #32\n"
"	ret	x9\n"
"	.size		my_wakeup_tramp, .-my_wakeup_tramp\n"
"	.popsection\n"
);
#endif /* CONFIG_ARM64 */

static struct ftrace_ops direct;

static int __init wakeup_direct_init(void)
{
	int ret;

	ret = ftrace_set_filter_ip(&direct, (unsigned long)wake_up_process, 0, 0);
	if (ret)
		return ret;
	return register_ftrace_direct(&direct, (unsigned long)my_wakeup_tramp);
}

static void __exit wakeup_direct_exit(void)
{
	unregister_ftrace_direct(&direct, (unsigned long)my_wakeup_tramp, true);
	pr_info("wakeup-direct: %lu wakeups seen\n", nr_wakeups);
}

module_init(wakeup_direct_init);
module_exit(wakeup_direct_exit);

MODULE_AUTHOR("usft");
MODULE_DESCRIPTION("a direct trampoline on wake_up_process()");
MODULE_LICENSE("MIT");
