// SPDX-License-Identifier: MIT
/*
 * tracee-late: loads traced objects while usft is attached, through the
 * paths usft does not route (tests/e2e/attach.py late, docs/attach.md
 * "Objects loaded after the attach").  dlopen() and dlclose() are taken
 * with dlsym() at start, before any attach, so its calls through them
 * never reach usft's shim; its own direct calls are routed once attached.
 * One command a line on stdin, each answered with one line on stdout:
 *   u   dlopen libtracee-reload-b.so through the pointer taken at start,
 *       then call b_entry() 300 times, 1 ms apart: "u ok" (or "u bad ...")
 *   c   dlclose it through the other pointer taken at start: "c ok"
 *   r   dlopen libtracee-reload-a.so directly (routed while attached),
 *       call a_entry() 100 times 1 ms apart, dlclose it: "r ok"
 *   q   exit: "ok bad=B", status 0 when every result was right
 * It prints "ready PID" first, and waits for each line in poll().
 */
#include <dlfcn.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);

static unsigned long bad;

static void calls(void *h, const char *entry, int want, int n)
{
	int (*fn)(int) = h ? (int (*)(int))dlsym(h, entry) : NULL;
	struct timespec ms = { 0, 1000 * 1000 };

	for (int i = 0; i < n; i++) {
		if (!fn || fn(1) != want) {
			bad++;
			return;
		}
		nanosleep(&ms, NULL);
	}
}

int main(void)
{
	dlopen_fn open_p = (dlopen_fn)dlsym(RTLD_DEFAULT, "dlopen");
	dlclose_fn close_p = (dlclose_fn)dlsym(RTLD_DEFAULT, "dlclose");
	char line[64];
	void *hb = NULL;

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	/* waits in poll(), where an attach can load the runtime (not in read()) */
	for (;;) {
		struct pollfd p = { 0, POLLIN, 0 };

		if (poll(&p, 1, -1) < 0 || !fgets(line, sizeof(line), stdin) || line[0] == 'q')
			break;
		if (line[0] == 'u') {
			if (!hb)
				hb = open_p("libtracee-reload-b.so", RTLD_NOW);
			calls(hb, "b_entry", 21, 300);
			printf("u %s\n", hb && !bad ? "ok" : "bad");
		} else if (line[0] == 'c') {
			if (hb)
				close_p(hb);
			hb = NULL;
			printf("c ok\n");
		} else if (line[0] == 'r') {
			void *ha = dlopen("libtracee-reload-a.so", RTLD_NOW);

			calls(ha, "a_entry", 11, 100);
			if (ha)
				dlclose(ha);
			printf("r %s\n", ha && !bad ? "ok" : "bad");
		}
		fflush(stdout);
	}
	printf("ok bad=%lu\n", bad);
	return bad ? 1 : 0;
}
