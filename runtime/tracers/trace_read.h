/* SPDX-License-Identifier: MIT */
/*
 * tracers/trace_read.h - reading a trace file back (`usft report`, the
 * summary of `usft record`) and printing it in the kernel's text formats
 * (trace_output.c) or as Chrome trace-event JSON (trace_json.c).
 */
#ifndef USFT_TRACE_READ_H
#define USFT_TRACE_READ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "trace_format.h"

/* reader-only pseudo event: @aux events of this thread were lost here */
#define EV_LOST 15
/*
 * reader-only pseudo event: one frame of the EV_STACK just before it (the
 * readers split a stack into its header and one of these per frame, same
 * time and thread): @aux the address, the depth field its index
 */
#define EV_STACK_FRAME 14

struct usft_rsym {
	uint64_t addr;
	uint64_t offset;
	char *name;		/* NULL: unknown */
	uint32_t epoch;		/* UNMAP chunks of the session before it */
};

struct usft_rtask {
	int tid;
	uint32_t seq;		/* order of the TASK chunks (the last name wins) */
	char comm[16];
};

struct usft_rprof {
	uint64_t addr;
	uint64_t hits;
	uint64_t time_ns;
	double time_sq;
	char *name;
};

/* one process image: a SESSION chunk and what followed it for that pid */
struct usft_rsession {
	int pid, ppid;
	bool forked;		/* SESSION says forked=1: a fork child's */
	int parent;		/* then its parent's session, -1: not in the file */
	uint16_t parent_epoch;	/* the parent's UNMAP count at the fork */
	char *tracer, *comm, *exe, *cmdline, *clock, *unmatched, *version;
	uint64_t base_ns;
	int nr_cpus;
	struct usft_rsym *syms;
	size_t nsyms, symcap;
	bool syms_sorted;
	uint16_t epoch;		/* UNMAP chunks read so far (saturating) */
	struct usft_rtask *tasks;
	size_t ntasks, taskcap;
	struct usft_rprof *prof;
	size_t nprof;
	uint64_t events, lost;	/* counted while reading */
	uint64_t no_slot;	/* events dropped for want of a ring (END) */
	uint64_t salvaged;	/* events usft record recovered from its rings after its death */
	uint64_t end_events;	/* the last END's events= (usft_trace_open() counts with it) */
	bool values;		/* SESSION values=1: EV_DATA (arguments) may follow events */
	bool ended;		/* an END chunk was seen */
	char *text;		/* the SESSION chunk as written (key=value lines: usft info) */
	/* how it ended (EXIT): "exited 0", "killed by SIGSEGV (core dumped)"; NULL unknown */
	char *exit_status;
	int exit_signal;	/* the signal that killed it, 0 none */
};

struct usft_revent {
	uint64_t ts;		/* absolute ns (CLOCK_MONOTONIC line) */
	uint64_t w1;		/* ip | depth | type, as in the file (EV_PRINT: depth 0) */
	uint64_t aux;		/* FUNC: parent ip; EV_LOST: count; EV_PRINT: its text (usft_rev_text()) */
	uint32_t tid;
	uint32_t seq;		/* file order */
	uint32_t sess;		/* index in usft_trace.sess (a file may hold 10^5 processes) */
	uint16_t cpu;
	uint16_t epoch;		/* the session's UNMAP chunks before it: which names hold */
};

/* w1 of the EV_STACK_FRAME pseudo event for frame @k at @addr */
static inline uint64_t usft_stack_frame_w1(uint64_t addr, unsigned int k)
{
	return usft_ev_w1(addr, k, EV_STACK_FRAME);
}

static inline unsigned int usft_rev_type(const struct usft_revent *e)
{
	return (unsigned int)(e->w1 >> EV_TYPE_SHIFT);
}

static inline uint64_t usft_rev_ip(const struct usft_revent *e)
{
	return e->w1 & EV_IP_MASK;
}

/* an EV_PRINT's text (the reader's copy, NUL-terminated; "" if none) */
static inline const char *usft_rev_text(const struct usft_revent *e)
{
	return e->aux ? (const char *)(uintptr_t)e->aux : "";
}

static inline unsigned int usft_rev_depth(const struct usft_revent *e)
{
	return (unsigned int)((e->w1 >> EV_DEPTH_SHIFT) & EV_DEPTH_MAX);
}

/* -A/-R values of one event (EV_DATA, trace_args.h), as text */
#define USFT_RVAL_PRINT	0x100	/* kind of an EV_PRINT's text, kept here in a loaded trace */
struct usft_rvalue {
	uint32_t seq;		/* the event's */
	uint32_t kind;		/* enum usft_data_kind, or USFT_RVAL_PRINT */
	char *text;		/* "1, 0x7ffd1234, \"abc\"" */
};

struct usft_trace {
	struct usft_rsession *sess;
	size_t nsess, sesscap;
	struct usft_revent *ev;
	size_t nev, evcap;
	struct usft_rvalue *vals;	/* ascending seq */
	size_t nvals, valcap;
	uint64_t events, lost;	/* totals */
	bool truncated;		/* the file ends inside a chunk */
	bool sorted;
	/* usft_trace_open(): events stay in the file, read by an iterator */
	struct usft_rindex *index;
	bool sess_values;	/* a SESSION says values=1 (usft_trace_has_values()) */
};

/**
 * usft_trace_read() - parse @path.  With @load_events false only the
 * counters, sessions, names and profiles are kept, and a regular file's
 * events are not read (the counts are its END chunks', as
 * usft_trace_open()'s).  Time and memory are linear in the file's size
 * (pids and tids are hashed or sorted).
 * Return: 0, -errno (open/read), -EINVAL (not a usft trace file),
 * -ENODATA (an empty file: nothing was recorded).
 */
int usft_trace_read(const char *path, struct usft_trace *t, bool load_events);
/* the same from an open descriptor (read from its current offset) */
int usft_trace_read_fd(int fd, struct usft_trace *t, bool load_events);
void usft_trace_free(struct usft_trace *t);
/* order events by time (stable per thread) */
void usft_trace_sort(struct usft_trace *t);

/**
 * usft_trace_open() - @path's sessions, names, tasks, profiles and counts,
 * with its events left in the file: one pass over the chunk headers (the
 * EVENTS payloads are skipped), an index of 16 bytes per EVENTS chunk.
 * usft_trace_iter_new() then streams them.  A file that is not a regular
 * file (a pipe) is read as usft_trace_read(..., true) does.
 * Return: as usft_trace_read().
 */
int usft_trace_open(const char *path, struct usft_trace *t);

/*
 * The events of a trace in time order (ties: session, tid, file order),
 * one at a time, whether they were loaded (usft_trace_read()) or left in
 * the file (usft_trace_open()): memory is one read window and a reorder
 * window of USFT_ITER_REORDER events per thread.  A thread's own events
 * are ordered within that window (a signal handler's events written before
 * the interrupted entry are out of order by a few events; the writer never
 * leaves more).
 */
#define USFT_ITER_REORDER	16
struct usft_trace_iter;
struct usft_trace_iter *usft_trace_iter_new(struct usft_trace *t);
/* the next event, NULL at the end (or a read error: usft_trace_iter_error()) */
const struct usft_revent *usft_trace_iter_next(struct usft_trace_iter *it);
/* the event after the last one returned, of the same thread (NULL: none); _drop_same() skips it */
const struct usft_revent *usft_trace_iter_peek_same(struct usft_trace_iter *it);
void usft_trace_iter_drop_same(struct usft_trace_iter *it);
int usft_trace_iter_error(const struct usft_trace_iter *it);	/* 0 or -errno */
void usft_trace_iter_free(struct usft_trace_iter *it);
/*
 * Only the threads @keep says yes to, from now on: a loaded trace drops
 * the other events, a streamed one the other threads' chunks (unread).
 */
void usft_trace_keep_threads(struct usft_trace *t,
			     bool (*keep)(const struct usft_trace *t, uint32_t sess, uint32_t tid,
					  void *arg), void *arg);

/* an EV_PRINT's text from its @n payload words, malloc'd (NULL: no memory) */
char *usft_print_text_dup(const uint64_t *w, size_t n);

/* trace_stream.c, called by the reader: an EVENTS chunk at @off left in the file */
int usft_rindex_add(struct usft_trace *t, int fd, unsigned int sess, uint32_t tid, uint64_t off,
		    uint16_t epoch);
void usft_rindex_free(struct usft_rindex *x);
/* the events of the sessions no END counted, counted from their chunks */
void usft_rindex_count(struct usft_trace *t);
/* a streamed trace: the values of @e the live iterator decoded, NULL none */
const char *usft_rindex_values(const struct usft_trace *t, const struct usft_revent *e,
			       unsigned int kind);
/* whether any event of @t may have -A/-R values (loaded or streamed) */
bool usft_trace_has_values(const struct usft_trace *t);

/*
 * Set by the command before a read: names are passed through it as they are
 * read (C++ demangling); it returns a malloc'd name to keep, or NULL for the
 * name as written.
 */
extern char *(*usft_trace_name_hook)(const char *name);

/* the name @addr had in @sess at @epoch (an event's; UINT32_MAX: the last) */
const char *usft_trace_sym(struct usft_trace *t, unsigned int sess, uint32_t epoch,
			   uint64_t addr, uint64_t *offset);
const char *usft_trace_comm(struct usft_trace *t, unsigned int sess, int tid);
/* the values of @kind recorded with @e (-A, -R), NULL none */
const char *usft_trace_values(const struct usft_trace *t, const struct usft_revent *e,
			      unsigned int kind);
/* the tracer of the file (of its first session), "nop" if none */
const char *usft_trace_tracer(const struct usft_trace *t);

/* trace_output.c, trace_json.c */
enum usft_print_flags {
	USFT_PRINT_NO_HEADER = 1 << 0,
};
int usft_print_text(FILE *out, struct usft_trace *t, unsigned int flags);
int usft_print_json(FILE *out, struct usft_trace *t, unsigned int flags);
/* a session's profile by total time, heaviest first (the printers' order) */
void usft_prof_sort(struct usft_rsession *s);
/* kernel trace_print_graph_duration(): "1234.567 us " padded */
void usft_format_duration(char *buf, size_t len, uint64_t ns);

#endif /* USFT_TRACE_READ_H */
