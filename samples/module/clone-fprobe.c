// SPDX-License-Identifier: MIT
/*
 * clone-fprobe - a module in the style of the kernel's samples/fprobe: an
 * fprobe with an entry and an exit handler on the function named by the
 * `symbol` parameter (kernel_clone() by default), printing the first calls
 * with the return value and, with stackdump=1, a stack trace.
 *
 *   ./clone-fprobe symbol=handle_mm_fault stackdump=1
 */
#define pr_fmt(fmt) "%s: " fmt, __func__

#include <usft/module.h>
#include <usft/fprobe.h>
#include <usft/ftrace_regs.h>

#define BACKTRACE_DEPTH 16
#define MAX_SYMBOL_LEN 512

static struct fprobe sample_probe;
static unsigned long nhit, nret;

static char symbol[MAX_SYMBOL_LEN] = "kernel_clone";
module_param_string(symbol, symbol, sizeof(symbol), 0644);
MODULE_PARM_DESC(symbol, "Probed symbol(s), given by comma separated symbols or a wildcard pattern.");

static char nosymbol[MAX_SYMBOL_LEN] = "";
module_param_string(nosymbol, nosymbol, sizeof(nosymbol), 0644);
MODULE_PARM_DESC(nosymbol, "Not-probed symbols, given by a wildcard pattern.");

static bool stackdump;
module_param(stackdump, bool, 0644);
MODULE_PARM_DESC(stackdump, "Enable stackdump.");

static unsigned int nr_print = 3;
module_param(nr_print, uint, 0644);
MODULE_PARM_DESC(nr_print, "Calls printed (the others are counted).");

static void show_backtrace(void)
{
	unsigned long stacks[BACKTRACE_DEPTH];
	unsigned int len;

	len = stack_trace_save(stacks, BACKTRACE_DEPTH, 2);
	stack_trace_print(stacks, len, 24);
}

static int sample_entry_handler(struct fprobe *fp, unsigned long ip, unsigned long ret_ip,
				struct ftrace_regs *fregs, void *data)
{
	unsigned long n = __atomic_add_fetch(&nhit, 1, __ATOMIC_RELAXED);

	(void)fp;
	(void)fregs;
	(void)data;
	if (n <= nr_print) {
		pr_info("Enter <%pS> ip = 0x%p, called from %pS\n", (void *)ip, (void *)ip,
			(void *)ret_ip);
		if (stackdump)
			show_backtrace();
	}
	return 0;
}

static void sample_exit_handler(struct fprobe *fp, unsigned long ip, unsigned long ret_ip,
				struct ftrace_regs *fregs, void *data)
{
	unsigned long n = __atomic_add_fetch(&nret, 1, __ATOMIC_RELAXED);

	(void)fp;
	(void)data;
	if (n <= nr_print)
		pr_info("Return from <%pS> ip = 0x%p to rip = 0x%p (%pS), retval %ld\n",
			(void *)ip, (void *)ip, (void *)ret_ip, (void *)ret_ip,
			(long)ftrace_regs_get_return_value(fregs));
}

static int __init fprobe_init(void)
{
	char *p, *symbuf = NULL;
	const char **syms;
	int ret, count, i;

	sample_probe.entry_handler = sample_entry_handler;
	sample_probe.exit_handler = sample_exit_handler;

	if (strchr(symbol, '*')) {
		/* a wildcard: the filter API takes it as is */
		ret = register_fprobe(&sample_probe, symbol, nosymbol[0] ? nosymbol : NULL);
		goto out;
	} else if (!strchr(symbol, ',')) {
		symbuf = symbol;
		ret = register_fprobe_syms(&sample_probe, (const char **)&symbuf, 1);
		goto out;
	}

	/* comma separated symbols */
	symbuf = kstrdup(symbol, GFP_KERNEL);
	if (!symbuf)
		return -ENOMEM;
	p = symbuf;
	count = 1;
	while ((p = strchr(++p, ',')) != NULL)
		count++;
	pr_info("%d symbols found\n", count);

	syms = kcalloc(count, sizeof(char *), GFP_KERNEL);
	if (!syms) {
		kfree(symbuf);
		return -ENOMEM;
	}
	p = symbuf;
	for (i = 0; i < count; i++)
		syms[i] = strsep(&p, ",");

	ret = register_fprobe_syms(&sample_probe, syms, count);
	kfree(syms);
	kfree(symbuf);
out:
	if (ret < 0)
		pr_err("register_fprobe failed, returned %d\n", ret);
	else
		pr_info("Planted fprobe at %s\n", symbol);
	return ret;
}

static void __exit fprobe_exit(void)
{
	pr_info("fprobe at %s unregistered. %lu hits, %lu returns, %lu missed\n",
		symbol, nhit, nret, sample_probe.nmissed);
	unregister_fprobe(&sample_probe);
	/* the module's own check: every entry seen had its return */
	BUG_ON(!nhit || nhit != nret);
}

module_init(fprobe_init)
module_exit(fprobe_exit)

MODULE_AUTHOR("usft");
MODULE_DESCRIPTION("an fprobe with entry and exit handlers on kernel_clone()");
MODULE_LICENSE("MIT");
