// SPDX-License-Identifier: MIT
/*
 * arch/arm64/text_poke.c - cross-modifying a running program's text on
 * arm64 (kernel: aarch64_insn_patch_text_nosync(), ftrace_modify_code()).
 *
 * After the one-time MOV X9, X30 every site change swaps one aligned
 * 32-bit instruction between NOP and BL (or BL and BL): both are in the
 * architecture's list of instructions that may be modified while another
 * thread executes them (ARM ARM "Concurrent modification and execution of
 * instructions"), so a thread sees the old or the new one, never a mix.
 * Each write is followed by __builtin___clear_cache() (DC CVAU, DSB ISH,
 * IC IVAU, DSB ISH, ISB); once per batch every thread passes a
 * context-synchronisation event (membarrier PRIVATE_EXPEDITED_SYNC_CORE,
 * core/text.c) before anything that the old code could reach is reused.
 * Pages are opened RWX through usft_text_open() for the batch only.
 */
#include <string.h>
#include "core/internal.h"
#include "core/text.h"
#include "mem/execmem.h"
#include "insn.h"

static unsigned long nr_written;	/* since the last arm64_patch_finish() */

int arm64_patch_insn(unsigned long pc, uint32_t old, uint32_t new)
{
	uint32_t cur;

	if (pc & 3)
		return -EINVAL;
	cur = a64_read(pc);
	if (cur != old)
		return -EINVAL;
	if (cur == new)
		return 0;
	if (usft_text_open(pc, AARCH64_INSN_SIZE))
		return -EPERM;
	USFT_TEXT_STEP();
	if (usft_text_write(pc, &new, AARCH64_INSN_SIZE))
		return -EPERM;
	USFT_TEXT_STEP();
	__builtin___clear_cache((char *)pc, (char *)pc + AARCH64_INSN_SIZE);
	nr_written++;
	usft_counters.nr_sites_written++;
	return 0;
}

int arm64_write_literal(unsigned long addr, unsigned long val)
{
	if (addr & 7)
		return -EINVAL;
	if (__atomic_load_n((unsigned long *)addr, __ATOMIC_RELAXED) == val)
		return 0;
	if (usft_text_open(addr, 8))
		return -EPERM;
	/* a data word for ldr: ordered before the BL written after it */
	if (usft_text_write(addr, &val, 8))
		return -EPERM;
	USFT_TEXT_STEP();
	nr_written++;
	return 0;
}

int arm64_patch_finish(void)
{
	int ret = usft_text_close_all();

	if (nr_written) {
		usft_sync_core();
		nr_written = 0;
	}
	return ret;
}

/*
 * @sync false: the caller syncs once for several copies before anything
 * branches to them (ftrace_replace_code()'s first pass).
 */
int arm64_text_copy(unsigned long dst, const void *src, size_t len, bool sync)
{
	int ret = usft_text_open(dst, len);

	if (!ret)
		ret = usft_text_write(dst, src, len);
	if (!ret) {
		__builtin___clear_cache((char *)dst, (char *)dst + len);
	}
	ret |= usft_text_close_all();
	if (sync)
		usft_sync_core();
	return ret ? -EPERM : 0;
}

/*
 * A new window is a fresh anonymous mapping: all zero, and the zero word is
 * UDF #0, which traps (the kernel fills with BRK; either stops a stray jump).
 */
void execmem_fill_trapping_insns(void *ptr, size_t size)
{
	(void)ptr;
	(void)size;
}

/*
 * arm64 writes no trap into a site (an aligned 32-bit NOP <-> BL swap), so
 * a thread that blocks SIGTRAP is safe on either write route.
 */
int ftrace_arch_text_check(void)
{
	return 0;
}
