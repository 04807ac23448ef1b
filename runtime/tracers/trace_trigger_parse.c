// SPDX-License-Identifier: MIT
/*
 * tracers/trace_trigger_parse.c - the trigger syntax of `usft record
 * -T/--trigger` and `--signal` (trace_triggers.h), shared by the command
 * (checked before the program runs), the control channel (checked when
 * written) and the runtime (applied).  Parses only: nothing is run.
 */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace_triggers.h"

#define MAX_DEPTH_ACTION 1024	/* USFT_MAX_GRAPH_DEPTH */

static const char actions_fn[] = "trace_on, trace_off, finish, depth=N";
static const char actions_sig[] = "trace_on, trace_off, finish";

/* uftrace's actions usft does not have (said by name, not as unknown) */
static bool uftrace_only(const char *a)
{
	static const char *const names[] = { "trace", "recover", "filter", "notrace", "backtrace",
					     "time=", "size=", "read=", "color=", "hide" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]);

		if (names[i][n - 1] == '=' ? !strncmp(a, names[i], n) : !strcmp(a, names[i]))
			return true;
	}
	return false;
}

/* "ACTION[,ACTION]..." after the '@' of @tok */
static int parse_actions(const char *tok, const char *acts, struct usft_trigger *t, bool sig,
			 char *why, size_t wlen)
{
	const char *known = sig ? actions_sig : actions_fn;
	const char *a = acts;

	if (!*a) {
		snprintf(why, wlen, "'%s': no action after '@' (want %s)", tok, known);
		return -EINVAL;
	}
	while (*a) {
		size_t n = strcspn(a, ",");
		char one[64];

		if (!n || n >= sizeof(one)) {
			snprintf(why, wlen, "'%s': bad action list (want ACTION[,ACTION]: %s)", tok,
				 known);
			return -EINVAL;
		}
		memcpy(one, a, n);
		one[n] = 0;
		if (!strcmp(one, "trace_on") || !strcmp(one, "traceon")) {
			t->actions |= USFT_TRIG_TRACEON;
		} else if (!strcmp(one, "trace_off") || !strcmp(one, "traceoff")) {
			t->actions |= USFT_TRIG_TRACEOFF;
		} else if (!strcmp(one, "finish")) {
			t->actions |= USFT_TRIG_FINISH;
		} else if (!sig && !strncmp(one, "depth=", 6)) {
			char *end;
			long d = strtol(one + 6, &end, 10);

			if (!isdigit((unsigned char)one[6]) || *end || d < 1 || d > MAX_DEPTH_ACTION) {
				snprintf(why, wlen, "'%s': depth=N takes 1..%d levels (FUNC is level 1)",
					 tok, MAX_DEPTH_ACTION);
				return -EINVAL;
			}
			t->actions |= USFT_TRIG_DEPTH;
			t->depth = (int)d;
		} else if (uftrace_only(one) || (sig && !strncmp(one, "depth=", 6))) {
			snprintf(why, wlen, "'%s': uftrace's '%s' is not supported %s(usft has: %s)",
				 tok, one, sig ? "for a signal " : "", known);
			return -EINVAL;
		} else {
			snprintf(why, wlen, "'%s': unknown action '%s' (want %s)", tok, one, known);
			return -EINVAL;
		}
		a += n;
		if (*a == ',')
			a++;
	}
	if ((t->actions & USFT_TRIG_TRACEON) && (t->actions & USFT_TRIG_TRACEOFF)) {
		snprintf(why, wlen, "'%s': trace_on and trace_off at once (give one of them)", tok);
		return -EINVAL;
	}
	return 0;
}

static bool bad_chars(const char *s)
{
	for (; *s; s++)
		if (isspace((unsigned char)*s) || !isprint((unsigned char)*s))
			return true;
	return false;
}

int usft_trigger_parse(const char *tok, struct usft_trigger *t, char *why, size_t wlen)
{
	const char *at = strchr(tok, '@'), *colon = strchr(tok, ':');
	size_t n;

	memset(t, 0, sizeof(*t));
	if (!*tok || bad_chars(tok) || strlen(tok) >= sizeof(t->func)) {
		snprintf(why, wlen, "'%s': want FUNC@ACTION (uftrace's: %s) or FUNC:traceon[:N] / "
			 "FUNC:traceoff[:N] / FUNC:stacktrace[:N] (the kernel's)", tok, actions_fn);
		return -EINVAL;
	}
	if (!at) {
		/* the kernel's set_ftrace_filter command: the probe core checks the rest */
		if (!colon || colon == tok || !colon[1]) {
			snprintf(why, wlen, "'%s': want FUNC:traceoff[:N], FUNC:traceon[:N] or "
				 "FUNC:stacktrace[:N] (the kernel's), or FUNC@ACTION (uftrace's: %s)", tok, actions_fn);
			return -EINVAL;
		}
		snprintf(t->func, sizeof(t->func), "%s", tok);
		t->kernel = true;
		return 0;
	}
	n = (size_t)(at - tok);
	if (!n || (colon && colon < at)) {
		snprintf(why, wlen, "'%s': want FUNC@ACTION[,ACTION] with FUNC a function or glob "
			 "(actions: %s)", tok, actions_fn);
		return -EINVAL;
	}
	memcpy(t->func, tok, n);
	t->func[n] = 0;
	return parse_actions(tok, at + 1, t, false, why, wlen);
}

/* "SIGRTMIN+N" / "RTMAX-N" (SIG already dropped); Return: the number or -1 */
static int rt_signal(const char *s)
{
	int base, sign;
	char *end;
	long k = 0;

	if (!strncmp(s, "RTMIN", 5)) {
		base = SIGRTMIN;
		sign = 1;
	} else if (!strncmp(s, "RTMAX", 5)) {
		base = SIGRTMAX;
		sign = -1;
	} else {
		return -1;
	}
	s += 5;
	if (*s) {
		if (*s != (sign > 0 ? '+' : '-') || !isdigit((unsigned char)s[1]))
			return -1;
		k = strtol(s + 1, &end, 10);
		if (*end || k > SIGRTMAX - SIGRTMIN)
			return -1;
	}
	return base + sign * (int)k;
}

static int signal_number(const char *name)
{
	const char *s = strncmp(name, "SIG", 3) ? name : name + 3;
	char *end;

	if (isdigit((unsigned char)*name)) {
		long v = strtol(name, &end, 10);

		return *end || v < 1 || v >= NSIG ? -1 : (int)v;
	}
	if (!strncmp(s, "RT", 2))
		return rt_signal(s);
	for (int i = 1; i < SIGRTMIN; i++) {
		const char *abbrev = sigabbrev_np(i);

		if (abbrev && !strcmp(abbrev, s))
			return i;
	}
	return -1;
}

int usft_signal_trigger_parse(const char *tok, struct usft_trigger *t, char *why, size_t wlen)
{
	const char *at = strchr(tok, '@');
	size_t n = at ? (size_t)(at - tok) : 0;

	memset(t, 0, sizeof(*t));
	if (!at || !n || n >= sizeof(t->func) || bad_chars(tok)) {
		snprintf(why, wlen, "'%s': want SIG@ACTION[,ACTION] (e.g. "
			 "'SIGUSR1@trace_off'; actions: %s)", tok, actions_sig);
		return -EINVAL;
	}
	memcpy(t->func, tok, n);
	t->func[n] = 0;
	t->sig = signal_number(t->func);
	if (t->sig < 1) {
		snprintf(why, wlen, "'%s': no signal '%s' (a name as SIGUSR1 or USR1, "
			 "SIGRTMIN+N, or a number)", tok, t->func);
		return -EINVAL;
	}
	/* what the core's usft_signal_hook() refuses, said before the program runs */
	if (t->sig == SIGKILL || t->sig == SIGSTOP || t->sig == SIGSEGV || t->sig == SIGBUS ||
	    t->sig == SIGILL || t->sig == SIGFPE || t->sig == SIGSYS || t->sig == SIGTRAP) {
		snprintf(why, wlen, "'%s': %s cannot be a trigger (%s): use SIGUSR1, SIGUSR2 or "
			 "SIGRTMIN+N", tok, t->func, t->sig == SIGKILL || t->sig == SIGSTOP ?
			 "it cannot be caught" : t->sig == SIGTRAP ? "usft patches text with it" :
			 "a fault: taking it would run the faulting instruction again");
		return -EINVAL;
	}
	return parse_actions(tok, at + 1, t, true, why, wlen);
}

int usft_trigger_list_check(const char *list, bool signals, bool graph, char *why, size_t wlen)
{
	char *copy, *save = NULL;
	int ret = 0;

	if (!list || !*list)
		return 0;
	if (!(copy = strdup(list)))
		return -ENOMEM;
	for (char *tok = strtok_r(copy, " \t\n", &save); tok && !ret;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		struct usft_trigger t;

		ret = signals ? usft_signal_trigger_parse(tok, &t, why, wlen)
			      : usft_trigger_parse(tok, &t, why, wlen);
		if (!ret && (t.actions & USFT_TRIG_DEPTH) && !graph) {
			snprintf(why, wlen, "'%s': depth=N limits the call tree: it needs the "
				 "function_graph tracer (-p function_graph)", tok);
			ret = -EINVAL;
		}
	}
	free(copy);
	return ret;
}
