// SPDX-License-Identifier: MIT
/*
 * Linked into every benchmark of a cross build: before main() runs, say
 * loudly when the binary runs under emulation (qemu-user), where timings
 * mean nothing (no caches, no branch predictor, a JIT in between).
 *
 * qemu-user 7.x shows a guest the host's /proc/cpuinfo (an arm64 kernel's
 * has "CPU implementer" lines), and a registered qemu binfmt handler for
 * our own architecture means nothing runs natively here.
 * USFT_BENCH_EMULATED=0/1 overrides the guess.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool file_has(const char *path, const char *needle)
{
	char line[512];
	bool found = false;
	FILE *f = fopen(path, "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

static bool emulated(void)
{
	const char *o = getenv("USFT_BENCH_EMULATED");

	if (o && *o)
		return *o == '1';
#if defined(__aarch64__)
	if (!file_has("/proc/cpuinfo", "CPU implementer"))
		return true;
	return file_has("/proc/sys/fs/binfmt_misc/qemu-aarch64", "enabled");
#else
	return false;
#endif
}

__attribute__((constructor)) static void usft_bench_emulation_note(void)
{
	if (!emulated())
		return;
	printf("# NOTE: running under emulation (qemu-user): these timings mean nothing;\n"
	       "# NOTE: run this benchmark natively on arm64 hardware (docs/arm64.md)\n");
	fflush(stdout);
	fprintf(stderr, "usft bench: running under emulation (qemu-user): timings mean nothing\n");
}
