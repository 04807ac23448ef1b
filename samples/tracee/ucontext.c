// SPDX-License-Identifier: MIT
/*
 * Coroutines: makecontext()/swapcontext() with the coroutine's stack in
 * main()'s frame (above the frames that switch to it).  The coroutine
 * yields back twice and then returns, which resumes main's context
 * through uc_link (glibc's own setcontext, not the program's call).
 * "asm": a stack switch by hand-written assembly that no wrapper sees;
 * usft may lose those frames but must not stop the program.
 * "churn": 5000 short coroutines one after another, each yields once and
 * returns (their shadow stacks must come back).
 */
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include "tracee.h"

static ucontext_t main_ctx, co_ctx;

TRACEE int co_leaf(int x)
{
	KEEP();
	return x + 1;
}

TRACEE void co_body(int n)
{
	int sum = 0;

	for (int i = 0; i < n; i++) {
		sum += co_leaf(i);
		swapcontext(&co_ctx, &main_ctx);	/* yield */
	}
	printf("coroutine done: %d\n", co_leaf(sum));
}

TRACEE void resume(void)
{
	swapcontext(&main_ctx, &co_ctx);
	KEEP();
}

TRACEE int after(int x)
{
	KEEP();
	return x * 3;
}

/* ---- a switch that is not swapcontext ---- */

void switch_call(void (*fn)(void), void *stack_top);
#if defined(__x86_64__)
__asm__(".text\n"
	".globl switch_call\n"
	".type switch_call, @function\n"
	"switch_call:\n"
	"	push %rbx\n"
	"	mov %rsp, %rbx\n"
	"	mov %rsi, %rsp\n"
	"	and $-16, %rsp\n"
	"	call *%rdi\n"
	"	mov %rbx, %rsp\n"
	"	pop %rbx\n"
	"	ret\n"
	".size switch_call, .-switch_call\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl switch_call\n"
	".type switch_call, %function\n"
	"switch_call:\n"
	"	stp x29, x30, [sp, #-32]!\n"
	"	mov x29, sp\n"
	"	str x19, [sp, #16]\n"
	"	mov x19, sp\n"
	"	and x1, x1, #-16\n"
	"	mov sp, x1\n"
	"	blr x0\n"
	"	mov sp, x19\n"
	"	ldr x19, [sp, #16]\n"
	"	ldp x29, x30, [sp], #32\n"
	"	ret\n"
	".size switch_call, .-switch_call\n");
#endif

static int on_other;

TRACEE void other_stack_fn(void)
{
	on_other = co_leaf(41);
}

TRACEE void hand_switch(char *stack, size_t size)
{
	switch_call(other_stack_fn, stack + size);
	KEEP();
}

TRACEE void short_body(int i)
{
	co_leaf(i);
	swapcontext(&co_ctx, &main_ctx);
}

static int churn(char *stack, size_t size)
{
	for (int i = 0; i < 5000; i++) {
		getcontext(&co_ctx);
		co_ctx.uc_link = &main_ctx;
		co_ctx.uc_stack.ss_sp = stack;
		co_ctx.uc_stack.ss_size = size;
		makecontext(&co_ctx, (void (*)(void))short_body, 1, i);
		resume();
		resume();
	}
	printf("churn done\n");
	return 0;
}

int main(int argc, char **argv)
{
	char stack[64 * 1024];

	if (argc > 1 && !strcmp(argv[1], "churn"))
		return churn(stack, sizeof(stack));
	if (argc > 1 && !strcmp(argv[1], "asm")) {
		hand_switch(stack, sizeof(stack));
		printf("other stack: %d, after: %d\n", on_other, after(2));
		return 0;
	}
	getcontext(&co_ctx);
	co_ctx.uc_link = &main_ctx;
	co_ctx.uc_stack.ss_sp = stack;
	co_ctx.uc_stack.ss_size = sizeof(stack);
	makecontext(&co_ctx, (void (*)(void))co_body, 1, 2);
	for (int i = 0; i < 3; i++)
		resume();
	printf("after: %d\n", after(2));
	return 0;
}
