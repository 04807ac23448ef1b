// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the DWARF readers on corrupt objects.  The input is written
 * to a temporary file (the readers take a path); the model of a few
 * addresses is asked for, and the table of functions that take no vector
 * argument is read and searched.
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
	unsigned long *nv;
	size_t nr, cur = 0;
	FILE *f;

	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/usft-fuzz-dwarf-%d", (int)getpid());
	f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	for (unsigned long a = 0; a < 0x3000; a += 0x400)
		(void)usft_dwarf_func_model(path, NULL, a, &m);
	if (!usft_dwarf_novec_table(path, NULL, &nv, &nr)) {
		for (size_t i = 1; i < nr; i++)
			if (nv[i - 1] >= nv[i])
				abort();	/* sorted, one entry per address */
		for (unsigned long a = 0; a < 0x3000; a += 0x100)
			(void)usft_dwarf_novec_lookup(nv, nr, a, &cur);
		free(nv);
	}
	return 0;
}
