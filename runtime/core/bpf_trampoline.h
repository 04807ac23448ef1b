/* SPDX-License-Identifier: MIT */
/*
 * core/bpf_trampoline.h - what the trampoline manager hands the arch JIT
 * (kernel: struct btf_func_model, struct bpf_tramp_links, BPF_TRAMP_F_*).
 */
#ifndef USFT_CORE_BPF_TRAMPOLINE_H
#define USFT_CORE_BPF_TRAMPOLINE_H

#include <usft/trampoline.h>
#include "core/internal.h"
#include "elf/dwarf.h"	/* struct usft_func_model */

/* include/linux/bpf.h BPF_TRAMP_F_* (subset used here) */
#define BPF_TRAMP_F_RESTORE_REGS	BIT(0)
#define BPF_TRAMP_F_CALL_ORIG		BIT(1)
#define BPF_TRAMP_F_SKIP_FRAME		BIT(2)
#define BPF_TRAMP_F_IP_ARG		BIT(3)

struct tramp_prog {
	usft_tramp_prog_t prog;
	void *cookie;
	unsigned long *misses;
};

struct tramp_desc {
	unsigned long flags;
	struct usft_func_model model;
	unsigned long body;		/* the original, past its site */
	unsigned long tpoff;		/* TLS offset of usft_task */
	unsigned long image_id;		/* pushed on usft_task.orig_stack around the original */
	struct tramp_prog *progs[3];
	int nr[3];
};


/**
 * arch_prepare_bpf_trampoline() - generate the image for @d into @buf as if
 * it ran at @at.  Return: its size, or -E2BIG (over @cap) / -EOPNOTSUPP.
 * @ip_after_call / @ip_epilogue: offsets of the patchable NOP after the call
 * of the original and of the epilogue (CALL_ORIG only).
 * @data_off / @nr_data: the image's data words, triples (callback, cookie,
 * miss counter) per callback, which retirement points at a stub.  Where the
 * arch defines ARCH_TRAMP_DATA_TWIN, the code reads them at the same offset
 * in the image's data twin (mem/execmem.h), and the core moves them there.
 */
int arch_prepare_bpf_trampoline(const struct tramp_desc *d, unsigned char *buf, size_t cap,
				unsigned long at, size_t *ip_after_call, size_t *ip_epilogue,
				size_t *data_off, int *nr_data);

/** arch_bpf_tramp_skip_fexit() - queue ip_after_call -> jmp ip_epilogue. */
int arch_bpf_tramp_skip_fexit(unsigned long ip_after_call, unsigned long ip_epilogue);

/**
 * arch_bpf_tramp_retire() - @image (@size bytes) is let go; called before
 * the grace period.  Return: 0 when something was written (a text batch
 * to flush), else non-zero.
 */
int arch_bpf_tramp_retire(unsigned long image, size_t size);

/** arch_bpf_tramp_has_jmp() - DYNAMIC_FTRACE_WITH_JMP */
bool arch_bpf_tramp_has_jmp(void);

#endif
