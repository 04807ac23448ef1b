/* SPDX-License-Identifier: MIT */
/*
 * tracers/tracer.h - the built-in tracers as seen by the preload shim
 * (kernel/trace/trace.h: struct tracer).  Each tracer is an ordinary user
 * of the core API: the function tracer is one ftrace_ops, function_graph
 * and the profiler are one fgraph_ops each.
 */
#ifndef USFT_TRACER_H
#define USFT_TRACER_H

#include <stdbool.h>
#include <stddef.h>
#include <usft/fgraph.h>
#include <usft/ftrace.h>
#include "ring_buffer.h"

enum usft_tracer_kind {
	USFT_TRACER_NOP,
	USFT_TRACER_FUNCTION,
	USFT_TRACER_GRAPH,
	USFT_TRACER_PROFILE,
};

/* what USFT_* variables (or a program) ask for */
struct usft_trace_opts {
	const char *tracer;		/* function | function_graph | profile | nop */
	const char *filter;		/* globs, whitespace separated (-l) */
	const char *notrace_list;	/* globs (-n) */
	const char *graph_funcs;	/* function names (-g): graph only below them */
	const char *graph_notrace;	/* function names (-N): not them nor below them */
	int max_depth;			/* function_graph depth limit, 0 = none */
	const char *output;		/* trace file */
	size_t buffer_size;		/* ring bytes per thread */
	unsigned int max_threads;	/* ring slots (threads alive at once) */
	const char *clock;		/* auto | mono | counter */
	bool append;			/* do not truncate the file */
	bool prefault;			/* fault in the first thread's ring at start */
	bool quiet;
	bool reusable;			/* rings for every tracer: later sessions (attach) */
	bool lossless;			/* a full ring makes the thread wait for the writer */
	const char *ring_dir;		/* shared (crash-safe) rings in a file there; NULL: private */
	bool ring_anon;			/* no ring_dir: shared rings in a memfd (control.c) */
	size_t ring_keep;		/* larger rings give written pages back; 0: the default */
	const char *args_spec;		/* -A: "GLOB@arg1,arg2;..." (trace_args.c) */
	const char *retval_spec;	/* -R: "GLOB@retval;..." */
	bool funcgraph_retval;		/* every return value, the kernel's option */
	const char *triggers;		/* -T tokens: function_graph takes the depth=N ones */
};

/* one tracer (kernel struct tracer) */
struct usft_tracer {
	const char *name;
	enum usft_tracer_kind kind;
	int (*init)(const struct usft_trace_opts *o);	/* register */
	void (*reset)(void);				/* unregister */
	void (*refilter)(void);				/* after dlopen */
};

extern const struct usft_tracer usft_function_tracer;
extern const struct usft_tracer usft_graph_tracer;
extern const struct usft_tracer usft_profile_tracer;

/* state the hot paths read */
extern int usft_tracing_on;			/* kernel tracing_on */
extern unsigned long long usft_trace_base;	/* session base (ns) */

/* trace_record.c: the session */
int usft_tracer_start(const struct usft_trace_opts *o);
void usft_tracer_drain(void);		/* everything so far + a snapshot (exec) */
void usft_tracer_flush(void);		/* events and names so far (dlclose) */
void usft_tracer_stop(void);		/* final: exit, _exit */
void usft_tracer_after_dlopen(void);	/* pick up a new object's functions */
void usft_tracer_unmapped(unsigned long lo, unsigned long hi);	/* dlclose unloaded it */
bool usft_tracer_active(void);
/* the top level's tracing_on as the probe commands see it (traced threads may call) */
bool usft_record_tracing_is_on(void);
void usft_record_tracing_set(bool on);
/* the probe commands' tracing_on and stack dump: the recording's and the trace arrays' */
void usft_tr_ops_install(void);	/* on: only while a session is open */
void usft_tracer_end(void);		/* stop + unregister: the process goes on (detach) */
const char *usft_tracer_name(void);	/* the session's tracer, "nop" when none */

/* control.c: the control channel (control.h, docs/attach.md) */
int usft_control_start(void);
void usft_control_exit(void);
void usft_control_exec(bool begin);	/* around an exec: the socket goes, and back if it failed */
/* a finish trigger ended the recording: its `usft record -P` is told (USFT_CTL_ENDED) */
void usft_control_session_ended(void);
void usft_control_set_conf(const struct usft_trace_opts *o);
/* called by a DETACH request before its reply (the shim: GOT entries back), or NULL */
extern void (*usft_control_detach_hook)(void);

/* trace_functions.c helpers shared by the tracers */
int usft_apply_filters(struct ftrace_ops *ops, const struct usft_trace_opts *o);
/* after dlopen(): Return: whether the filter now selects something */
bool usft_reapply_filters(struct ftrace_ops *ops);
int usft_resolve_graph_funcs(const char *names);
bool usft_graph_func_match(unsigned long ip);
/* -N (set_graph_notrace): the same, for the functions whose subtree is not recorded */
int usft_resolve_graph_notrace(const char *names);
bool usft_graph_notrace_match(unsigned long ip);
void usft_free_graph_funcs(void);

/* trace_args.c: -A/-R values for function_graph (trace_args.h is the payload) */
struct args_ent;
#define USFT_ARGS_MAX_WORDS	160	/* payload words of one EV_DATA at most */
int usft_args_init(const struct usft_trace_opts *o);
void usft_args_reset(void);
bool usft_args_any(void);
extern bool usft_args_all_retval;
const struct args_ent *usft_args_find(unsigned long ip);
bool usft_args_ent_has_args(const struct args_ent *e);
bool usft_args_ent_has_ret(const struct args_ent *e);
unsigned int usft_args_encode(const struct args_ent *e, struct ftrace_regs *fregs, bool ret,
			      uint64_t *out);
unsigned int usft_args_encode_raw_ret(struct ftrace_regs *fregs, uint64_t *out);

/* trace_profile.c: fold the table of a slot whose thread exited into the result */
void usft_profile_merge_slot(struct usft_tbuf *b);
/* every function so far: exited threads plus the live tables (writer only) */
void usft_profile_snapshot(void (*fn)(const struct usft_prof_ent *e, void *arg), void *arg);
void usft_profile_reset(void);

#endif /* USFT_TRACER_H */
