// SPDX-License-Identifier: MIT
/* libFuzzer: usft_glob_match() on arbitrary pattern/string pairs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 2);
	const char *pat, *str;
	size_t split;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = buf[size + 1] = 0;
	/* pattern \0 string */
	split = strnlen(buf, size);
	pat = buf;
	str = split < size ? buf + split + 1 : "";
	(void)usft_glob_match(pat, str);
	(void)usft_glob_match(str, pat);
	free(buf);
	return 0;
}
