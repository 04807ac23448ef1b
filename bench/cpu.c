// SPDX-License-Identifier: MIT
/*
 * bench/cpu.c - the machine line every benchmark prints first: figures
 * from two machines are never compared without saying which is which.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cpu.h"

#define notrace __attribute__((patchable_function_entry(0, 0)))

/* value of the first "KEY<spaces>: value" line of /proc/cpuinfo */
static notrace int cpuinfo_field(const char *key, char *buf, size_t len)
{
	char line[256];
	size_t k = strlen(key);
	FILE *f = fopen("/proc/cpuinfo", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, key, k) || !colon || strspn(line + k, " \t") != (size_t)(colon - line) - k)
			continue;
		colon += 1 + strspn(colon + 1, " \t");
		colon[strcspn(colon, "\n")] = 0;
		snprintf(buf, len, "%s", colon);
		found = 1;
	}
	fclose(f);
	return found;
}

notrace void bench_cpu_model(char *buf, size_t len)
{
	char impl[32], part[32];

	if (cpuinfo_field("model name", buf, len))
		return;
	/* arm64: no model name, the implementer and part numbers */
	if (cpuinfo_field("CPU implementer", impl, sizeof(impl)) &&
	    cpuinfo_field("CPU part", part, sizeof(part))) {
		snprintf(buf, len, "arm64 implementer %s part %s", impl, part);
		return;
	}
	snprintf(buf, len, "unknown");
}

notrace void bench_print_cpu(FILE *out, const char *prog)
{
	char model[160], load[64] = "?";
	FILE *f = fopen("/proc/loadavg", "re");

	if (f) {
		if (fgets(load, sizeof(load), f)) {
			char *sp = load;

			/* the three averages only */
			for (int i = 0; i < 3 && sp; i++)
				sp = strchr(sp + 1, ' ');
			if (sp)
				*sp = 0;
		}
		fclose(f);
	}
	load[strcspn(load, "\n")] = 0;
	bench_cpu_model(model, sizeof(model));
	fprintf(out, "# %s: cpu: %s, %ld cpus online, load average %s\n", prog, model,
		sysconf(_SC_NPROCESSORS_ONLN), load);
}
