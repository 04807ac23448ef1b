/* first.c - lab 1: watch usft patch the entry of one function. */
#include <stdio.h>
#include <usft/ftrace.h>
#include <usft/usft.h>
#ifdef WITH_CAPSTONE
#include <capstone/capstone.h>
#endif

static unsigned long calls;

/* the callback: notrace, so it has no site of its own */
static notrace void count(unsigned long ip, unsigned long parent_ip,
			  struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	calls++;
}

/* the traced function: noinline, so calls really reach its entry */
__attribute__((noinline)) int work(int x)
{
	return x * 2;
}

static notrace void show(const char *when)
{
	unsigned long ip = ftrace_location((unsigned long)work);
	unsigned char b[16];
	int n = usft_site_bytes(ip, b, 5);
	struct usft_stats st = { .sz = sizeof(st) };

	usft_stat(&st);
	printf("%-16s site %s+%lu:", when, "work", ip - (unsigned long)work);
	for (int i = 0; i < n; i++)
		printf(" %02x", b[i]);
#ifdef WITH_CAPSTONE
	csh cs;
	cs_insn *insn;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) == CS_ERR_OK) {
		if (cs_disasm(cs, b, n, ip, 1, &insn) == 1) {
			printf("   %s %s", insn->mnemonic, insn->op_str);
			cs_free(insn, 1);
		}
		cs_close(&cs);
	}
#endif
	printf("   (enabled sites %lu, trampolines %lu)\n", st.nr_enabled, st.nr_trampolines);
}

int main(void)
{
	static struct ftrace_ops ops = { .func = count };
	int sum = 0;

	show("before");
	ftrace_set_filter(&ops, (unsigned char *)"work", -1, 1);
	register_ftrace_function(&ops);
	show("registered");
	for (int i = 0; i < 1000; i++)
		sum += work(i);
	unregister_ftrace_function(&ops);
	show("unregistered");
	for (int i = 0; i < 1000; i++)
		sum += work(i);
	printf("work() ran 2000 times, the callback counted %lu (sum %d)\n", calls, sum);
	return calls == 1000 ? 0 : 1;
}
