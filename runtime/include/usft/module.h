/* SPDX-License-Identifier: MIT */
/*
 * usft/module.h - what a kernel module's source expects of <linux/module.h>,
 * <linux/kernel.h>, <linux/sched.h>, <linux/mm.h>, <linux/kthread.h>,
 * <linux/slab.h>, <linux/ktime.h>, <asm/ibt.h>, <asm/nospec-branch.h>...,
 * in one header, so that a sample written for the kernel's samples/ftrace or
 * samples/fprobe builds against usft with only its #include lines changed:
 * every <linux/...> or <asm/...> include becomes <usft/module.h>, and
 * <linux/ftrace.h> (or <linux/fprobe.h>) becomes <usft/ftrace.h> (or
 * <usft/fprobe.h>).
 *
 * The "kernel" is libusft-kernel (`pkg-config --cflags --libs usft-kernel`):
 * it holds the kernel functions samples trace (schedule(), wake_up_process(),
 * handle_mm_fault(), kernel_clone(), ...; built with the patch flags, so each
 * has a site) and a main() that plays insmod and rmmod:
 *
 *   ./sample [name=value ...]     module parameters, as insmod takes them
 *                                 (also from $USFT_MODULE_PARAMS, the same
 *                                 "name=value ..." list, like modprobe.d)
 *
 * main() runs the module_init() function (a non-zero return fails like
 * insmod: message, exit status 1), runs the toy kernel's workload for
 * usft_kernel.run_ms milliseconds (default 300: threads calling schedule(),
 * wake_up_process(), handle_mm_fault() and kernel_clone() in a loop), runs
 * the module_exit() function and exits 0.  docs/kernel-samples.md has the
 * whole contract.
 *
 * Differences that userspace forces (docs/kernel-samples.md lists them):
 * printk() goes to stderr (its level as a "<N>" prefix only when
 * USFT_PRINTK_LEVELS=1; %pS, %ps, %pB print symbols as the kernel's do); trace_printk() goes into the trace being recorded
 * when there is one, and to stderr otherwise; a kthread is a pthread;
 * GFP flags are accepted and ignored.
 */
#ifndef USFT_MODULE_H
#define USFT_MODULE_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include <usft/common.h>
#include <usft/asm/module.h>

USFT_BEGIN_DECLS

/* ------------------------------------------------------------------ */
/* Types and helpers of <linux/types.h>, <linux/compiler.h>, <linux/kernel.h> */

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;
typedef unsigned int gfp_t;
typedef unsigned int vm_fault_t;
typedef s64 ktime_t;

#ifndef __init
#define __init
#endif
#ifndef __exit
#define __exit
#endif
#define __initdata
#define __read_mostly
#define __maybe_unused __attribute__((__unused__))
#define __always_unused __attribute__((__unused__))
#ifndef noinline
#define noinline __attribute__((__noinline__))
#endif
#ifndef __always_inline
#define __always_inline inline __attribute__((__always_inline__))
#endif
#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif
#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
#define EXPORT_SYMBOL(sym)
#define EXPORT_SYMBOL_GPL(sym)
#define THIS_MODULE ((struct module *)0)

struct module;

/* ------------------------------------------------------------------ */
/* Modules: module_init/module_exit, MODULE_*, module_param             */

typedef int (*usft_initcall_t)(void);
typedef void (*usft_exitcall_t)(void);

/* Called by the constructors module_init()/module_exit() expand to. */
void usft_module_set_init(usft_initcall_t fn, const char *file);
void usft_module_set_exit(usft_exitcall_t fn, const char *file);

#define module_init(fn)								\
	static void __attribute__((constructor)) __usft_modinit_##fn(void)	\
	{ usft_module_set_init(fn, __FILE__); }
#define module_exit(fn)								\
	static void __attribute__((constructor)) __usft_modexit_##fn(void)	\
	{ usft_module_set_exit(fn, __FILE__); }

/* Kept in the module's description, printed by `./sample --modinfo`. */
void usft_module_info(const char *tag, const char *value);
#define __USFT_MODINFO(tag, value, uniq)					\
	static void __attribute__((constructor)) __usft_modinfo_##uniq(void)	\
	{ usft_module_info(tag, value); }
#define __USFT_MODINFO_U(tag, value, line) __USFT_MODINFO(tag, value, line)
#define MODULE_AUTHOR(s)	__USFT_MODINFO_U("author", s, __COUNTER__)
#define MODULE_DESCRIPTION(s)	__USFT_MODINFO_U("description", s, __COUNTER__)
#define MODULE_LICENSE(s)	__USFT_MODINFO_U("license", s, __COUNTER__)
#define MODULE_VERSION(s)	__USFT_MODINFO_U("version", s, __COUNTER__)
#define MODULE_ALIAS(s)		__USFT_MODINFO_U("alias", s, __COUNTER__)
#define MODULE_PARM_DESC(name, s) __USFT_MODINFO_U("parm:" #name, s, __COUNTER__)

/* the value types module_param() takes (the kernel's param_ops_<type>) */
enum usft_param_type {
	USFT_PARAM_byte, USFT_PARAM_short, USFT_PARAM_ushort, USFT_PARAM_int,
	USFT_PARAM_uint, USFT_PARAM_long, USFT_PARAM_ulong, USFT_PARAM_ullong,
	USFT_PARAM_bool, USFT_PARAM_invbool, USFT_PARAM_charp, USFT_PARAM_string,
	/* "bool" is <stdbool.h>'s macro for _Bool: a type passed on by one macro arrives so */
	USFT_PARAM__Bool = USFT_PARAM_bool,
};

/*
 * usft_module_param() - register a parameter; @size is the variable's size
 * (checked against @type), or for a string the buffer's length.
 */
void usft_module_param(const char *name, void *var, enum usft_param_type type, size_t size);

#define module_param_named(name, var, type, perm)				\
	static void __attribute__((constructor)) __usft_param_##name(void)	\
	{ usft_module_param(#name, &(var), USFT_PARAM_##type, sizeof(var)); }
#define module_param(name, type, perm)						\
	static void __attribute__((constructor)) __usft_param_##name(void)	\
	{ usft_module_param(#name, &(name), USFT_PARAM_##type, sizeof(name)); }
#define module_param_string(name, string, len, perm)				\
	static void __attribute__((constructor)) __usft_param_##name(void)	\
	{ usft_module_param(#name, (string), USFT_PARAM_string, (len)); }

/* ------------------------------------------------------------------ */
/* printk                                                              */

#define KERN_SOH	"\001"
#define KERN_EMERG	KERN_SOH "0"
#define KERN_ALERT	KERN_SOH "1"
#define KERN_CRIT	KERN_SOH "2"
#define KERN_ERR	KERN_SOH "3"
#define KERN_WARNING	KERN_SOH "4"
#define KERN_NOTICE	KERN_SOH "5"
#define KERN_INFO	KERN_SOH "6"
#define KERN_DEBUG	KERN_SOH "7"
#define KERN_CONT	KERN_SOH "c"

int printk(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int vprintk(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#ifndef pr_fmt
#define pr_fmt(fmt) fmt
#endif
#define pr_emerg(fmt, ...)	printk(KERN_EMERG pr_fmt(fmt), ##__VA_ARGS__)
#define pr_alert(fmt, ...)	printk(KERN_ALERT pr_fmt(fmt), ##__VA_ARGS__)
#define pr_crit(fmt, ...)	printk(KERN_CRIT pr_fmt(fmt), ##__VA_ARGS__)
#define pr_err(fmt, ...)	printk(KERN_ERR pr_fmt(fmt), ##__VA_ARGS__)
#define pr_warn(fmt, ...)	printk(KERN_WARNING pr_fmt(fmt), ##__VA_ARGS__)
#define pr_notice(fmt, ...)	printk(KERN_NOTICE pr_fmt(fmt), ##__VA_ARGS__)
#define pr_info(fmt, ...)	printk(KERN_INFO pr_fmt(fmt), ##__VA_ARGS__)
#define pr_cont(fmt, ...)	printk(KERN_CONT fmt, ##__VA_ARGS__)
/* pr_debug prints only with USFT_PRINTK_DEBUG=1 (dynamic debug "+p") */
#define pr_debug(fmt, ...)	printk(KERN_DEBUG pr_fmt(fmt), ##__VA_ARGS__)

/* the address of this point of the code (the kernel's include/linux/instruction_pointer.h) */
#ifndef _THIS_IP_
#define _THIS_IP_	({ __label__ __here; __here: (unsigned long)&&__here; })
#endif
#ifndef _RET_IP_
#define _RET_IP_	((unsigned long)__builtin_return_address(0))
#endif

/*
 * trace_printk() - a line into the trace being kept: a print event in the
 * recording of `usft record` (shown as `func: text`, or as a comment under
 * function_graph) and in the top level of a `usft mount` tracefs, as the
 * kernel's trace_printk() writes into the ring buffer (__trace_puts() of
 * <usft/ftrace.h>).  When no trace takes it, the line goes to stderr as
 * `comm-pid: text`.  Formats with the kernel's vsnprintf (%pS...); not for
 * hot paths.  trace_puts() is the same without formatting.
 */
int __trace_printk(unsigned long ip, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define trace_printk(fmt, ...)	__trace_printk(_THIS_IP_, fmt, ##__VA_ARGS__)
int usft_trace_puts(unsigned long ip, const char *str);
#define trace_puts(str)		usft_trace_puts(_THIS_IP_, str)

/* WARN*: print the condition and a backtrace, go on (panic_on_warn unset). */
bool usft_warn(bool cond, bool once_flag, int *once, const char *expr, const char *file, int line);
#define WARN_ON(c) usft_warn(!!(c), false, NULL, #c, __FILE__, __LINE__)
#define WARN_ON_ONCE(c) ({ static int __once; usft_warn(!!(c), true, &__once, #c, __FILE__, __LINE__); })
#define WARN(c, fmt, ...) ({ bool __c = !!(c); if (__c) printk(KERN_WARNING fmt, ##__VA_ARGS__); \
			     WARN_ON(__c); })
void usft_bug(const char *expr, const char *file, int line) __attribute__((noreturn));
#define BUG() usft_bug("BUG()", __FILE__, __LINE__)
#define BUG_ON(c) do { if (unlikely(c)) usft_bug(#c, __FILE__, __LINE__); } while (0)

/* ------------------------------------------------------------------ */
/* Tasks, the scheduler and kthreads (<linux/sched.h>, <linux/kthread.h>) */

#define TASK_COMM_LEN		16
#define TASK_RUNNING		0x0000
#define TASK_INTERRUPTIBLE	0x0001
#define TASK_UNINTERRUPTIBLE	0x0002
#define MAX_SCHEDULE_TIMEOUT	((long)(~0UL >> 1))
#define HZ			250

/* a thread of the process: a toy kernel's task */
struct task_struct {
	volatile long __state;
	pid_t pid;			/* the thread id */
	pid_t tgid;			/* the process id */
	char comm[TASK_COMM_LEN];
	void *usft_private;		/* libusft-kernel's; do not touch */
};

/* the calling thread's task (made on first use for any thread) */
struct task_struct *get_current(void);
#define current get_current()
#define set_current_state(s) WRITE_ONCE(current->__state, (s))
#define __set_current_state(s) WRITE_ONCE(current->__state, (s))

/* Traced functions of the toy kernel (libusft-kernel; each has a site). */
void schedule(void);
long schedule_timeout(long timeout);
int wake_up_process(struct task_struct *p);
int try_to_wake_up(struct task_struct *p, unsigned int state, int wake_flags);

struct task_struct *kthread_create_on_node(int (*fn)(void *data), void *data, int node,
					   const char *namefmt, ...)
	__attribute__((format(printf, 4, 5)));
#define NUMA_NO_NODE (-1)
#define kthread_create(fn, data, fmt, ...) \
	kthread_create_on_node(fn, data, NUMA_NO_NODE, fmt, ##__VA_ARGS__)
#define kthread_run(fn, data, fmt, ...) ({					\
	struct task_struct *__k = kthread_create(fn, data, fmt, ##__VA_ARGS__);	\
	if (!IS_ERR(__k))							\
		wake_up_process(__k);						\
	__k; })
bool kthread_should_stop(void);
int kthread_stop(struct task_struct *k);

void msleep(unsigned int msecs);
unsigned long msleep_interruptible(unsigned int msecs);
void usleep_range(unsigned long min, unsigned long max);
void cond_resched(void);
static inline unsigned long msecs_to_jiffies(unsigned int m) { return (m * HZ + 999) / 1000; }
static inline unsigned int jiffies_to_msecs(unsigned long j) { return (unsigned int)(j * 1000 / HZ); }
int smp_processor_id(void);
#define raw_smp_processor_id() smp_processor_id()

/* ERR_PTR & co (<linux/err.h>) */
#define MAX_ERRNO 4095
static inline void *ERR_PTR(long error) { return (void *)error; }
static inline long PTR_ERR(const void *ptr) { return (long)ptr; }
static inline bool IS_ERR(const void *ptr) { return (unsigned long)ptr >= (unsigned long)-MAX_ERRNO; }
static inline bool IS_ERR_OR_NULL(const void *ptr) { return !ptr || IS_ERR(ptr); }

/* ------------------------------------------------------------------ */
/* Memory (<linux/slab.h>, <linux/vmalloc.h>, <linux/mm.h>)             */

#define GFP_KERNEL	0x0cc0u
#define GFP_ATOMIC	0x0820u
#define __GFP_ZERO	0x0100u

/* slab-like allocators of the toy kernel (traced: kmalloc and kfree have sites) */
void *kmalloc(size_t size, gfp_t flags);
void *kzalloc(size_t size, gfp_t flags);
void *kcalloc(size_t n, size_t size, gfp_t flags);
void *kmalloc_array(size_t n, size_t size, gfp_t flags);
void kfree(const void *p);
char *kstrdup(const char *s, gfp_t flags);
void *vmalloc(unsigned long size);
void *vzalloc(unsigned long size);
void vfree(const void *p);

struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
	unsigned long vm_flags;
};
struct pt_regs;
#define FAULT_FLAG_WRITE	0x01u
#define FAULT_FLAG_USER		0x40u
vm_fault_t handle_mm_fault(struct vm_area_struct *vma, unsigned long address,
			   unsigned int flags, struct pt_regs *regs);

/* fork (<linux/sched/task.h>) */
struct kernel_clone_args {
	u64 flags;
	int exit_signal;
	unsigned long stack;
	unsigned long stack_size;
};
pid_t kernel_clone(struct kernel_clone_args *args);

/* ------------------------------------------------------------------ */
/* Time (<linux/ktime.h>, <linux/timekeeping.h>)                        */

#define NSEC_PER_USEC	1000L
#define NSEC_PER_MSEC	1000000L
#define NSEC_PER_SEC	1000000000L
ktime_t ktime_get(void);
u64 ktime_get_ns(void);
static inline ktime_t ktime_sub(ktime_t a, ktime_t b) { return a - b; }
static inline ktime_t ktime_add(ktime_t a, ktime_t b) { return a + b; }
static inline s64 ktime_to_ns(ktime_t k) { return k; }
static inline s64 ktime_to_us(ktime_t k) { return k / NSEC_PER_USEC; }
static inline s64 ktime_to_ms(ktime_t k) { return k / NSEC_PER_MSEC; }

/* ------------------------------------------------------------------ */
/* Stack traces and symbols (<linux/stacktrace.h>, <linux/kallsyms.h>)   */

#define KSYM_NAME_LEN 512
#define KSYM_SYMBOL_LEN 600
unsigned int stack_trace_save(unsigned long *store, unsigned int size, unsigned int skipnr);
void stack_trace_print(const unsigned long *trace, unsigned int nr_entries, int spaces);
/* "name+0xoff/0xsize" of @address, as the kernel's sprint_symbol() */
int sprint_symbol(char *buffer, unsigned long address);
unsigned long kallsyms_lookup_name(const char *name);

USFT_END_DECLS

#endif /* USFT_MODULE_H */
