/* SPDX-License-Identifier: MIT */
/*
 * tracers/trace_triggers.h - `usft record -T/--trigger` and `--signal`
 * (docs/tracers.md, "Triggers"): the parser the command and the runtime
 * share (trace_trigger_parse.c) and the runtime's side (trace_triggers.c).
 *
 * A trigger token is either the kernel's set_ftrace_filter command,
 * "FUNC:traceon[:N]", "FUNC:traceoff[:N]", "FUNC:stacktrace[:N]", handed
 * to the probe core as written, or uftrace's "FUNC@ACTION[,ACTION]..."
 * with the actions trace_on (traceon), trace_off (traceoff), finish and
 * depth=N.  A signal trigger is uftrace's "SIG@ACTION[,ACTION]" with
 * trace_on, trace_off and finish; SIG is a name (SIGUSR1, USR1,
 * SIGRTMIN+N, SIGRTMAX-N) or a number.
 */
#ifndef USFT_TRACE_TRIGGERS_H
#define USFT_TRACE_TRIGGERS_H

#include <stdbool.h>
#include <stddef.h>

#define USFT_TRIG_TRACEON	1u
#define USFT_TRIG_TRACEOFF	2u
#define USFT_TRIG_FINISH	4u
#define USFT_TRIG_DEPTH		8u

struct usft_trigger {
	char func[256];		/* FUNC (a glob), or the signal as written */
	bool kernel;		/* FUNC:cmd[:N]: for the probe core, as written */
	unsigned int actions;	/* USFT_TRIG_*, uftrace's form */
	int depth;		/* depth=N */
	int sig;		/* a signal trigger's number */
};

/* one -T token; Return: 0, or -EINVAL with the reason and the fix in @why */
int usft_trigger_parse(const char *tok, struct usft_trigger *t, char *why, size_t wlen);
/* one --signal token; the same */
int usft_signal_trigger_parse(const char *tok, struct usft_trigger *t, char *why, size_t wlen);
/* every token of @list (white space between them) with @parse; Return: as @parse */
int usft_trigger_list_check(const char *list, bool signals, bool graph, char *why, size_t wlen);

/* trace_triggers.c (the runtime, a recording open) */
int usft_triggers_start(const char *triggers, const char *signals, char *why, size_t wlen);
void usft_triggers_stop(void);
/* USFT_FINISH_FD (`usft record`): where a finish trigger says it ended */
void usft_triggers_finish_fd(const char *spec);
/* function_graph's depth=N: resolve (@triggers NULL: again, after dlopen), look up, free */
int usft_graph_depth_resolve(const char *triggers);
int usft_graph_depth_match(unsigned long ip);
void usft_graph_depth_free(void);

#endif /* USFT_TRACE_TRIGGERS_H */
