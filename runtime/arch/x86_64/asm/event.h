/* SPDX-License-Identifier: MIT */
/*
 * arch/x86_64/asm/event.h - what ftrace_event_caller (entry.S) reads and
 * writes: offsets in struct usft_tbuf (tracers/ring_buffer.h) and struct
 * trace_clock_state (core/trace_clock.h), the pvclock page's fields
 * (asm/trace_clock.h), the event word layout (tracers/trace_format.h).
 * Checked against the C definitions at build time (ring_buffer.c,
 * trace_clock.c).  Usable from C and from assembly.
 */
#ifndef USFT_X86_64_ASM_EVENT_H
#define USFT_X86_64_ASM_EVENT_H

/* struct usft_tbuf */
#define EVT_TB_HEAD		0
#define EVT_TB_COMMIT		8
#define EVT_TB_LIMIT		16
#define EVT_TB_NEST		32	/* unsigned int nest, then unsigned int reserving */
#define EVT_TB_RESERVING	36
#define EVT_TB_CPU		48
#define EVT_TB_WMASK		240
#define EVT_TB_DATA		248

/* struct trace_clock_state and enum trace_clock_kind */
#define EVT_CLK_C0		0
#define EVT_CLK_T0		8
#define EVT_CLK_MULT		16
#define EVT_CLK_KIND		24
#define EVT_CLK_PVTI		32
#define EVT_CLK_PVOFF		40
#define EVT_KIND_COUNTER	1
#define EVT_KIND_PVCLOCK	2

/* struct arch_pvclock (the pvclock page's struct pvclock_vcpu_time_info) */
#define EVT_PV_VERSION		0
#define EVT_PV_TSC		8
#define EVT_PV_SYS		16
#define EVT_PV_MUL		24
#define EVT_PV_SHIFT		28
#define EVT_PV_FLAGS		29
#define EVT_PV_STABLE		1	/* PVCLOCK_TSC_STABLE_BIT */

/* the event: 3 words; w0 = ts & TS_MASK | cpu << CPU_SHIFT, w1 = ip (48 bits) | type bits */
#define EVT_WORDS		3
#define EVT_TS_MASK		0x000fffffffffffff
#define EVT_CPU_SHIFT		52
#define EVT_CPU_MASK		0xfff
#define EVT_IP_BITS		48
/* the ring line asked for ahead of the event (USFT_TBUF_PREFETCH) */
#define EVT_PREFETCH		2048

#endif /* USFT_X86_64_ASM_EVENT_H */
