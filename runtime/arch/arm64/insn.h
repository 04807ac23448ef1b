/* SPDX-License-Identifier: MIT */
/*
 * arch/arm64/insn.h - A64 encoders and the text patcher (arm64-private;
 * kernel arch/arm64/include/asm/insn.h, arch/arm64/kernel/patching.c).
 */
#ifndef USFT_ARM64_INSN_H
#define USFT_ARM64_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AARCH64_INSN_SIZE	4
#define A64_NOP			0xd503201fu
#define A64_MOV_X9_X30		0xaa1e03e9u	/* orr x9, xzr, x30 */
#define A64_BTI_C		0xd503245fu
#define A64_BTI_J		0xd503249fu
#define A64_BTI_JC		0xd50324dfu
#define A64_PACIASP		0xd503233fu
#define A64_RET			0xd65f03c0u
#define A64_BRK(imm)		(0xd4200000u | ((uint32_t)(imm) & 0xffff) << 5)

/* BL/B reach: -128 MiB <= target - pc < +128 MiB (kernel reachable_by_bl()) */
#define A64_BRANCH_RANGE	(128L << 20)

static inline bool a64_in_branch_range(unsigned long pc, unsigned long target)
{
	long d = (long)(target - pc);

	return d >= -A64_BRANCH_RANGE && d < A64_BRANCH_RANGE && !(d & 3);
}

static inline uint32_t a64_branch(unsigned long pc, unsigned long target, bool link)
{
	long d = (long)(target - pc);

	return (link ? 0x94000000u : 0x14000000u) | ((uint32_t)(d >> 2) & 0x03ffffffu);
}

static inline bool a64_is_bl(uint32_t insn)
{
	return (insn & 0xfc000000u) == 0x94000000u;
}

static inline bool a64_is_b(uint32_t insn)
{
	return (insn & 0xfc000000u) == 0x14000000u;
}

/* target of a B/BL at @pc */
static inline unsigned long a64_branch_target(unsigned long pc, uint32_t insn)
{
	long imm = (long)(int32_t)(insn << 6) >> 4;	/* sign-extended imm26 * 4 */

	return pc + imm;
}

static inline bool a64_is_bti(uint32_t insn)
{
	return insn == A64_BTI_C || insn == A64_BTI_J || insn == A64_BTI_JC ||
	       insn == 0xd503241fu;	/* bti (no target) */
}

static inline uint32_t a64_read(unsigned long addr)
{
	return __atomic_load_n((const uint32_t *)addr, __ATOMIC_RELAXED);
}

/*
 * Patching (text_poke.c).  Writes take effect at once (one aligned 32-bit
 * store, D-cache clean + I-cache invalidate); the pages stay writable and
 * the cross-thread sync is done once per batch by arm64_patch_finish().
 */
/* compare-then-write: 0, -EINVAL (bytes differ from @old), -EPERM */
int arm64_patch_insn(unsigned long pc, uint32_t old, uint32_t new);
/* one aligned 64-bit store of the CALL_OPS literal (no compare) */
int arm64_write_literal(unsigned long addr, unsigned long val);
/* copy @len bytes into not-yet-used trampoline memory, flush, sync */
int arm64_text_copy(unsigned long dst, const void *src, size_t len, bool sync);
/* the end of a batch: close the pages; SYNC_CORE if anything was written */
int arm64_patch_finish(void);

#endif
