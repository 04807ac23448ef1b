// SPDX-License-Identifier: MIT
/*
 * odd-tramp - the mistake <usft/module.h>'s ASM_RET exists to prevent, kept
 * as a test: two trampolines in one asm() block, the first ending in a bare
 * one-byte "ret", so the second starts at an odd address, which a direct
 * call reads as the jmp bit.  register_ftrace_direct() must refuse it with
 * -EINVAL and say why, so this module's init fails (x86-64 only: arm64
 * instructions are 4 bytes, and no trampoline can be odd).
 */
#include <usft/module.h>
#include <usft/ftrace.h>

void my_odd_func(void);

void my_odd_func(void)
{
}

extern void my_even_tramp(void *);
extern void my_odd_tramp(void *);

asm (
"	.pushsection	.text, \"ax\", @progbits\n"
"	.p2align	4\n"
"	.type		my_even_tramp, @function\n"
"   my_even_tramp:"
"	nop\n"
"	nop\n"
"	ret\n"			/* the bug: not ASM_RET */
"	.size		my_even_tramp, .-my_even_tramp\n"
"	.type		my_odd_tramp, @function\n"
"	.globl		my_odd_tramp\n"
"   my_odd_tramp:"
"	pushq %rbp\n"
"	movq %rsp, %rbp\n"
"	pushq %rdi\n"
"	call my_odd_func\n"
"	popq %rdi\n"
"	leave\n"
	ASM_RET
"	.size		my_odd_tramp, .-my_odd_tramp\n"
"	.popsection\n"
);

static struct ftrace_ops direct;

static int __init odd_tramp_init(void)
{
	unsigned long addr = (unsigned long)my_odd_tramp;
	int ret;

	/* the compiler takes function addresses to be even: make it look */
	__asm__("" : "+r"(addr));
	ret = ftrace_set_filter_ip(&direct, (unsigned long)wake_up_process, 0, 0);
	if (ret)
		return ret;
	if (!(addr & 1)) {
		pr_err("odd-tramp: my_odd_tramp is even (%px): the assembler padded it\n",
		       (void *)addr);
		return -EPERM;
	}
	return register_ftrace_direct(&direct, addr);
}

static void __exit odd_tramp_exit(void)
{
	unregister_ftrace_direct(&direct, (unsigned long)my_odd_tramp, true);
}

module_init(odd_tramp_init);
module_exit(odd_tramp_exit);

MODULE_DESCRIPTION("an odd direct trampoline, refused");
MODULE_LICENSE("MIT");
