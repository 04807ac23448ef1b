// SPDX-License-Identifier: MIT
/*
 * tracee-modload: loads libtracee-plugin.so when told, for the tracefs's
 * cached ":mod:" filters (tests/e2e/tracefs.py mod).  Prints "ready", then
 * answers each line of stdin with one line:
 *   main     calls main_work() (this program's own traced function): "main N"
 *   load     dlopen()s the plugin and calls plugin_entry(): "loaded N"
 *   call     plugin_entry() again: "call N"
 *   unload   dlclose(): "unloaded"
 * and exits 0 at end of input.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "tracee.h"

TRACEE int main_work(int x)
{
	KEEP();
	return x + 1;
}

int main(void)
{
	int (*entry)(int) = NULL;
	void *h = NULL;
	char line[64];

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "main\n")) {
			printf("main %d\n", main_work(1));
		} else if (!strcmp(line, "load\n") && !h) {
			h = dlopen("libtracee-plugin.so", RTLD_NOW);
			entry = h ? (int (*)(int))dlsym(h, "plugin_entry") : NULL;
			if (!entry) {
				printf("dlopen failed: %s\n", dlerror());
				return 1;
			}
			printf("loaded %d\n", entry(2));
		} else if (!strcmp(line, "call\n") && entry) {
			printf("call %d\n", entry(3));
		} else if (!strcmp(line, "unload\n") && h) {
			dlclose(h);
			h = NULL;
			entry = NULL;
			printf("unloaded\n");
		} else {
			printf("bad command: %s", line);
		}
	}
	return 0;
}
