// SPDX-License-Identifier: MIT
/* libFuzzer: the ELF/section reader on corrupt and truncated objects. */
#include <stdint.h>
#include "elf/elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usft_elf_info info;

	if (usft_elf_read_mem(data, size, &info) == 0) {
		for (size_t i = 0; i < info.nr_syms; i++)
			(void)usft_elf_find_sym(&info, info.syms[i].addr);
		usft_elf_free(&info);
	}
	return 0;
}
