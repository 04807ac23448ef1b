// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the DWARF function-model reader on corrupt objects.  The
 * input is written to a temporary file (the reader takes a path) and the
 * model of a few addresses is asked for.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "elf/dwarf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	struct usft_func_model m;
	FILE *f;

	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/usft-fuzz-dwarf-%d", (int)getpid());
	f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	for (unsigned long a = 0; a < 0x3000; a += 0x400)
		(void)usft_dwarf_func_model(path, a, &m);
	return 0;
}
