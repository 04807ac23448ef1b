// SPDX-License-Identifier: MIT
/*
 * printk.c - the kernel log (kernel/printk/printk.c).  A line goes into
 * the log buffer under its lock, then whoever gets the console lock
 * hands the buffer to the consoles (stderr, with --console):
 *
 *   printk()
 *     vprintk_emit()
 *       log_store()                    spin_lock(&logbuf_lock)
 *       console_lock()
 *       console_unlock()
 *         call_console_drivers()
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "toykernel.h"

#define LOG_LINES 64

bool toy_console;
static char log_buf[LOG_LINES][96];
static unsigned long log_next, console_seq;
static DEFINE_SPINLOCK(logbuf_lock);

__toy static void log_store(const char *text)
{
	spin_lock(&logbuf_lock);
	snprintf(log_buf[log_next % LOG_LINES], sizeof(log_buf[0]), "[%8.3f] %s",
		 (double)local_clock() / 1e9, text);
	log_next++;
	spin_unlock(&logbuf_lock);
}

__toy static void call_console_drivers(const char *line)
{
	if (toy_console)
		fputs(line, stderr);
}

__toy static void vprintk_emit(const char *fmt, va_list ap)
{
	char text[80];

	vsnprintf(text, sizeof(text), fmt, ap);
	log_store(text);
	console_lock();
	while (console_seq < log_next)
		call_console_drivers(log_buf[console_seq++ % LOG_LINES]);
	console_unlock();
}

__toy int printk(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintk_emit(fmt, ap);
	va_end(ap);
	return 0;
}
