/* SPDX-License-Identifier: MIT */
/*
 * tracers/trace_format.h - the trace file (usft.dat) and the event words the
 * per-thread ring buffers hold.  Shared by the recorder (libusft-preload.so)
 * and the reader (`usft report`).
 *
 * A file is a sequence of chunks, each written with one write() on an
 * O_APPEND descriptor, so the processes of one recording (fork, exec) can
 * share the file:
 *
 *   struct usft_chunk_hdr  (32 bytes, little-endian host order)
 *   payload                (size bytes, a multiple of 8)
 *
 * A SESSION chunk starts a process image (a pid's chunks up to its next
 * SESSION, e.g. after exec, belong to it).  Timestamps in events are
 * nanoseconds relative to the session's base_ns (CLOCK_MONOTONIC line).
 */
#ifndef USFT_TRACE_FORMAT_H
#define USFT_TRACE_FORMAT_H

#include <stdint.h>

#define USFT_TRACE_MAGIC	"USFT"
#define USFT_TRACE_VERSION	1
#define USFT_TRACE_DEFAULT_FILE	"usft.dat"

/*
 * What the recorder accepts (USFT_BUFFER_SIZE, USFT_MAX_THREADS,
 * USFT_MAX_DEPTH; `usft record` checks -b and --max-graph-depth against
 * the same numbers before it starts the program).  A ring is a power of
 * two of bytes; the pool reserves max_threads of them (MAP_NORESERVE).
 */
#define USFT_RING_MIN_BYTES	4096ULL
#define USFT_RING_MAX_BYTES	(16ULL << 30)
#define USFT_MIN_THREADS	4U
#define USFT_MAX_THREADS	65536U
#define USFT_MAX_GRAPH_DEPTH	1024	/* FGRAPH_STACK_DEPTH: deeper is never recorded */

enum usft_chunk_type {
	USFT_CHUNK_SESSION = 1,	/* text lines "key=value\n" (tracer, comm, base_ns, ...) */
	USFT_CHUNK_EVENTS = 2,	/* tid; arg = events lost just before these; event words */
	USFT_CHUNK_TASK = 3,	/* tid; payload = thread name (NUL padded) */
	USFT_CHUNK_SYMS = 4,	/* struct usft_sym_rec records */
	USFT_CHUNK_PROFILE = 5,	/* struct usft_prof_rec records */
	USFT_CHUNK_END = 6,	/* text lines: events, lost, threads, drained_bytes, ... */
	/*
	 * arg = lo; payload = one uint64_t, hi: the object mapped at [lo, hi)
	 * is gone (dlclose).  SYMS given before this chunk for addresses in
	 * that range name the events before it only; a later object at the same
	 * addresses gets SYMS of its own after it.
	 */
	USFT_CHUNK_UNMAP = 7,
	/*
	 * text lines: how a process ended, written by the `usft record` that
	 * waited for it: "status=exited\ncode=N\n", "status=killed\nsignal=N\n
	 * signame=SIGSEGV\ncore=0|1\n"; "status=unknown" for a process that
	 * died without finishing the trace and that usft did not reap.
	 */
	USFT_CHUNK_EXIT = 8,
	/*
	 * Nothing: what a process left of a chunk it died inside the write of
	 * (a short write, other processes' chunks after it), made a chunk by
	 * the `usft record` that salvaged it, which appended the whole chunk
	 * again from the rings.  Readers skip it.
	 */
	USFT_CHUNK_PAD = 9,
};

struct usft_chunk_hdr {
	char magic[4];
	uint16_t version;
	uint16_t type;
	uint32_t pid;
	uint32_t tid;
	uint64_t size;		/* payload bytes */
	uint64_t arg;
};

/* SYMS: an address (function site or return address) and what it is */
struct usft_sym_rec {
	uint64_t addr;
	uint64_t offset;	/* addr - function start */
	uint32_t namelen;	/* 0: unknown */
	uint32_t pad;
	/* char name[namelen], then NUL padding to 8 bytes */
};

/* PROFILE: one function of one process (threads merged) */
struct usft_prof_rec {
	uint64_t addr;
	uint64_t hits;
	uint64_t time_ns;	/* total, children included (kernel graph-time) */
	double time_sq;		/* sum of squared durations, ns^2 */
	uint32_t namelen;
	uint32_t pad;
	/* char name[namelen], NUL padding to 8 bytes */
};

/*
 * Event words.  Word 0 of every event: timestamp and CPU; word 1: the
 * function (its site address), the depth and the type; FUNC adds word 2.
 *   w0 = ts_rel[51:0] | cpu[63:52]            (cpu 0xfff: unknown)
 *   w1 = ip[47:0] | depth[59:48] | type[63:60]
 *   w2 = parent ip                            (FUNC)
 *        return time, 52 bits                 (GRAPH_LEAF*)
 */
#define EV_TS_MASK		((1ULL << 52) - 1)
#define EV_CPU_SHIFT		52
#define EV_CPU_UNKNOWN		0xfffU
#define EV_IP_MASK		((1ULL << 48) - 1)
#define EV_DEPTH_SHIFT		48
#define EV_DEPTH_MAX		0xfffU
#define EV_TYPE_SHIFT		60

enum usft_ev_type {
	EV_PAD = 0,		/* never written; a reader stops at it */
	EV_FUNC = 1,		/* function tracer: 3 words */
	EV_GRAPH_ENT = 2,	/* function_graph entry: 2 words */
	EV_GRAPH_RET = 3,	/* function_graph return: 2 words */
	EV_GRAPH_GONE = 4,	/* a frame left without returning (longjmp...): 2 words */
	EV_GRAPH_LEAF = 5,	/* entry and return of a leaf: 3 words, w2 = return time */
	EV_GRAPH_LEAF_GONE = 6,	/* the same, left without returning */
	/*
	 * Values of the event just before it in the same ring (trace_args.h):
	 * w0 = payload words [15:0] | enum usft_data_kind [23:16]; w1 = ip,
	 * depth and type as the event it belongs to; then the payload.  Not an
	 * event of its own: neither counted nor lost on its own.
	 */
	EV_DATA = 7,
	/*
	 * A stack trace (the stacktrace command, --trigger FUNC:stacktrace):
	 * w1 = the function it was taken at | frame count in the depth field |
	 * type; then one word per frame, the function itself first, then the
	 * return addresses above it.  An event of its own: 2 + count words.
	 */
	EV_STACK = 8,
	/*
	 * A line of text (__trace_puts(), trace_printk(): the kernel's
	 * TRACE_PRINT): w0 and w1 as any event, with the text's length in
	 * words (its NUL included, zero-padded to 8 bytes) in w1's depth
	 * field; then the text.  At most EV_PRINT_MAX_WORDS words.
	 */
	EV_PRINT = 9,
};

#define EV_PRINT_MAX_WORDS	128	/* 1024 bytes: the kernel's TRACE_BUF_SIZE */

static inline unsigned int usft_ev_words(unsigned int type)
{
	switch (type) {
	case EV_FUNC:
	case EV_GRAPH_LEAF:
	case EV_GRAPH_LEAF_GONE:
		return 3;
	case EV_GRAPH_ENT:
	case EV_GRAPH_RET:
	case EV_GRAPH_GONE:
		return 2;
	default:
		return 0;
	}
}

#define EV_DATA_WORDS_MASK	0xffffULL
#define EV_DATA_KIND_SHIFT	16

/* the words of the event whose first two words are @w0, @w1 (0: not an event) */
static inline unsigned int usft_ev_len(uint64_t w0, uint64_t w1)
{
	unsigned int type = (unsigned int)(w1 >> EV_TYPE_SHIFT);

	if (type == EV_DATA)
		return 2 + (unsigned int)(w0 & EV_DATA_WORDS_MASK);
	if (type == EV_STACK)
		return 2 + (unsigned int)((w1 >> EV_DEPTH_SHIFT) & EV_DEPTH_MAX);
	if (type == EV_PRINT) {
		unsigned int n = (unsigned int)(w1 >> EV_DEPTH_SHIFT) & EV_DEPTH_MAX;

		return n && n <= EV_PRINT_MAX_WORDS ? 2 + n : 0;
	}
	return usft_ev_words(type);
}

static inline uint64_t usft_ev_w0(uint64_t ts_rel, unsigned int cpu)
{
	return (ts_rel & EV_TS_MASK) | ((uint64_t)(cpu & EV_CPU_UNKNOWN) << EV_CPU_SHIFT);
}

static inline uint64_t usft_ev_w1(uint64_t ip, unsigned int depth, unsigned int type)
{
	return (ip & EV_IP_MASK) | ((uint64_t)(depth > EV_DEPTH_MAX ? EV_DEPTH_MAX : depth)
				    << EV_DEPTH_SHIFT) | ((uint64_t)type << EV_TYPE_SHIFT);
}

/*
 * Shared rings (crash-safe recording, ring_buffer.h): the file a process's
 * slot headers and rings are mapped from, MAP_SHARED, in the directory
 * `usft record` names (USFT_RING_DIR), "rings.PID.XXXXXX":
 *
 *   [0, 4096)            struct usft_ring_file
 *   [hdr_off, ...)       nr_slots struct usft_tbuf (the build's layout:
 *                        tbuf_size and version say which)
 *   [data_off, ...)      nr_slots rings of ring_bytes
 *
 * The process marks it ended and removes it once its trace is complete; a
 * file left there belongs to a process that died first, and `usft record`
 * appends what the rings still hold to the trace (inject/cli/salvage.c).
 */
#define USFT_RING_MAGIC		"USFTRING"
#define USFT_RING_VERSION	1
#define USFT_RING_FILE_PREFIX	"rings."

enum usft_ring_state { USFT_RING_LIVE = 1, USFT_RING_ENDED = 2 };

struct usft_ring_file {
	char magic[8];
	uint32_t version;
	uint32_t state;		/* enum usft_ring_state */
	uint32_t pid;
	uint32_t tbuf_size;	/* sizeof(struct usft_tbuf) of the writer's build */
	uint64_t nr_slots;
	uint64_t ring_bytes;
	uint64_t hdr_off;
	uint64_t data_off;
	/* the writer's totals so far (its END chunk, had it lived) */
	uint64_t events;
	uint64_t lost;
	uint64_t no_slot;
	uint64_t threads;
};

#endif /* USFT_TRACE_FORMAT_H */
