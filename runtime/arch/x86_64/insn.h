/* SPDX-License-Identifier: MIT */
/* arch/x86_64/insn.h - encoders and the INT3 batch patcher (x86-private). */
#ifndef USFT_X86_INSN_H
#define USFT_X86_INSN_H

#include <stdbool.h>
#include <stddef.h>

#define CALL_INSN_OPCODE	0xe8
#define JMP32_INSN_OPCODE	0xe9
#define JMP8_INSN_OPCODE	0xeb
#define INT3_INSN_OPCODE	0xcc
#define X86_NOP5		"\x0f\x1f\x44\x00\x00"

/* rel32 reach: the displacement from ip+5 must fit in an int32 */
static inline bool x86_rel32_ok(unsigned long ip, unsigned long target)
{
	long d = (long)(target - (ip + 5));

	return d == (long)(int)d;
}

/* call/jmp rel32 at @ip to @target into @buf[5]; false when out of reach */
bool x86_encode_branch(unsigned char *buf, unsigned long ip, unsigned long target, bool jmp);

void x86_poke_init(void);
/* queue one site for the next x86_poke_flush(); @relocate: old bytes are
 * several instructions (gcc's 1-byte NOPs), move threads stopped inside. */
int x86_poke_queue(unsigned long addr, const unsigned char *newb, int len, bool relocate);
/* the INT3 protocol over every queued site (gcc NOPs: without a trap, and a
 * rendezvous). Return: 0, -EBUSY (gcc NOPs and a thread the rendezvous
 * cannot move: nothing written) or -EPERM. */
int x86_poke_flush(void);
/* gcc NOP runs converted by the constructor (early_nops.c), said at init */
void x86_early_nops_report(void);
/*
 * copy into not-yet-used trampoline memory; @sync: serialise every thread
 * after it (not needed when the copy only becomes reachable through the
 * INT3 batch that follows: its syncs, and the serialising return from the
 * emulation handler, cover it).  Return 0/-EPERM.
 */
int x86_text_copy(unsigned long dst, const void *src, size_t len, bool sync);

#endif
