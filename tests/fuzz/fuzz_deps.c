// SPDX-License-Identifier: MIT
/*
 * libFuzzer: `usft list`'s dependency reader (inject/cli/deps.c) on an
 * arbitrary file: its dynamic section, the DT_NEEDED names, RPATH/RUNPATH
 * lists with $ORIGIN, searched on this machine's real directories (read
 * only).  The input is written to a private file first (the reader takes
 * a path, as `usft list -f` does).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	char **objs;
	size_t n;
	FILE *f;

	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/usft-fuzz-deps-%d", (int)getpid());
	f = fopen(path, "we");
	if (!f)
		return 0;
	if (fwrite(data, 1, size, f) != size) {
		fclose(f);
		return 0;
	}
	fclose(f);
	if (!usft_list_objects(path, &objs, &n)) {
		for (size_t i = 0; i < n; i++)
			free(objs[i]);
		free(objs);
	}
	unlink(path);
	return 0;
}
