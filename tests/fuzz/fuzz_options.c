// SPDX-License-Identifier: MIT
/* libFuzzer: the USFT_OPTIONS parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usft_options saved = usft_opts;
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	(void)usft_options_parse(s);
	usft_opts = saved;
	free(s);
	return 0;
}
