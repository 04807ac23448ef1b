// SPDX-License-Identifier: MIT
/*
 * tracers/trace_triggers.c - the triggers of a recording (trace_triggers.h,
 * docs/tracers.md "Triggers"):
 *  - FUNC:traceon[:N] / FUNC:traceoff[:N] (the kernel's commands) and
 *    uftrace's FUNC@trace_on / FUNC@trace_off: probes of the probe core
 *    on the recording's tracing_on;
 *  - FUNC@finish: a probe that ends the recording (below);
 *  - FUNC@depth=N: function_graph looks the function up at entry
 *    (usft_graph_depth_match(), trace_functions_graph.c);
 *  - SIG@ACTION (--signal): a signal hook of the core (usft_signal_hook():
 *    the program's own handler still runs as it would).
 *
 * finish: the recording's tracing_on goes off at once (async-signal-safe:
 * it may be a signal's), and a semaphore post wakes the "usft-finish"
 * thread, which ends the session as a control-channel STOP does (file
 * complete, every site back to its NOP): a callback or a handler cannot
 * unregister anything itself.  The thread exists only while a finish
 * trigger does; a forked child starts one of its own.  Under `usft record
 * PROG` it then tells the recorder (finish_notify()), which returns while
 * the program goes on.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <usft/ftrace_probe.h>
#include <usft/usft.h>
#include "trace_triggers.h"
#include "tracer.h"

#ifndef _NSIG
#define _NSIG 65
#endif

/* what usft_triggers_stop() undoes */
static struct {
	char **undo;		/* "!FUNC:cmd[:N]" for the probe core */
	size_t n_undo;
	bool finish_probe;
	unsigned int sig_actions[_NSIG];	/* hooked signals: USFT_TRIG_* */
	bool finish_thread;
	bool atfork_done;
	pthread_mutex_t lock;	/* start and stop: the control thread's and usft-finish's */
} T = { .lock = PTHREAD_MUTEX_INITIALIZER };

static sem_t finish_sem;
static int finish_state;	/* 0 idle, 1 asked (a trigger fired), 2 thread to quit */
/* `usft record PROG`: the pipe that tells it the recording finished (-1: none) */
static int finish_fd = -1;
static dev_t finish_dev;
static ino_t finish_ino;

/* ---- finish -------------------------------------------------------------- */

/* a callback or a signal handler: atomics and sem_post() only, errno kept */
static void finish_request(void)
{
	int e = errno;

	usft_record_tracing_set(false);
	if (!__atomic_exchange_n(&finish_state, 1, __ATOMIC_ACQ_REL) &&
	    __atomic_load_n(&T.finish_thread, __ATOMIC_ACQUIRE))
		sem_post(&finish_sem);
	errno = e;
}

/*
 * The session ended by a finish trigger and the file is complete: one byte
 * to `usft record`, which then returns while the program goes on (uftrace's
 * daemon case).  Only into the pipe it handed over (a program may have
 * closed that descriptor and opened something else under its number).
 */
static void finish_notify(void)
{
	struct stat st;
	char b = 'f';

	if (finish_fd >= 0 && !fstat(finish_fd, &st) && st.st_dev == finish_dev &&
	    st.st_ino == finish_ino && write(finish_fd, &b, 1) < 0)
		return;
}

static void *finish_main(void *arg)
{
	usft_self_begin();
	prctl(PR_SET_NAME, "usft-finish", 0, 0, 0);
	while (sem_wait(&finish_sem) && errno == EINTR)
		;
	if (__atomic_load_n(&finish_state, __ATOMIC_ACQUIRE) == 1) {
		/* as a control-channel STOP: this thread is gone after it */
		usft_triggers_stop();
		usft_tracer_end();
		finish_notify();
		usft_control_session_ended();
	}
	usft_self_end();
	return arg;
}

/*
 * usft_triggers_finish_fd() - USFT_FINISH_FD="N:DEV:INO" (`usft record`):
 * the write end of its pipe, moved out of the program's way (a high
 * close-on-exec number; N is closed, so the program's numbering is its
 * own).  Fork children keep it; an exec'd image finds N closed or another
 * file and ignores it.
 */
void usft_triggers_finish_fd(const char *spec)
{
	unsigned long long dev, ino;
	struct stat st;
	int n, fd;

	if (!spec || sscanf(spec, "%d:%llu:%llu", &n, &dev, &ino) != 3 || n < 0 ||
	    fstat(n, &st) || !S_ISFIFO(st.st_mode) || st.st_dev != dev || st.st_ino != ino)
		return;
	fd = fcntl(n, F_DUPFD_CLOEXEC, 512);
	if (fd < 0)
		return;
	close(n);
	finish_fd = fd;
	finish_dev = st.st_dev;
	finish_ino = st.st_ino;
}

static int finish_thread_start(void);

static void finish_atfork_child(void)
{
	bool any = T.finish_probe;

	T.finish_thread = false;	/* the thread stayed with the parent */
	pthread_mutex_init(&T.lock, NULL);
	for (int s = 1; s < _NSIG && !any; s++)
		any = T.sig_actions[s] & USFT_TRIG_FINISH;
	/*
	 * The child's recording (trace_record.c's handler ran first) ends by
	 * the trigger too: a daemon() child is where a server's work runs.
	 */
	if (any && !__atomic_load_n(&finish_state, __ATOMIC_ACQUIRE)) {
		sem_init(&finish_sem, 0, 0);
		finish_thread_start();
	}
}

static int finish_thread_start(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t th;
	int ret;

	if (T.finish_thread)
		return 0;
	if (!T.atfork_done) {
		/* once: a thread told to quit may not have taken its post yet */
		sem_init(&finish_sem, 0, 0);
		pthread_atfork(NULL, NULL, finish_atfork_child);
		T.atfork_done = true;
	}
	__atomic_store_n(&finish_state, 0, __ATOMIC_RELEASE);
	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&th, &attr, finish_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (!ret)
		__atomic_store_n(&T.finish_thread, true, __ATOMIC_RELEASE);
	return ret;
}

static void finish_probe_func(unsigned long ip, unsigned long parent_ip, struct trace_array *tr,
			      struct ftrace_probe_ops *ops, void *data)
{
	finish_request();
}

static struct ftrace_probe_ops finish_ops = { .func = finish_probe_func };

/* ---- signals -------------------------------------------------------------- */

static void signal_trigger(int sig)
{
	unsigned int a = __atomic_load_n(&T.sig_actions[sig], __ATOMIC_RELAXED);

	if (a & USFT_TRIG_TRACEON)
		usft_record_tracing_set(true);
	if (a & USFT_TRIG_TRACEOFF)
		usft_record_tracing_set(false);
	if (a & USFT_TRIG_FINISH)
		finish_request();
}

/* ---- start and stop -------------------------------------------------------- */

static void say(char *why, size_t wlen, const char *fmt, const char *a, const char *b)
{
	size_t used = strlen(why);

	if (used + 3 < wlen)
		snprintf(why + used, wlen - used, "%s", used ? "; " : "");
	used = strlen(why);
	if (used + 1 < wlen)
		snprintf(why + used, wlen - used, fmt, a, b);
}

static void note_undo(const char *tok)
{
	char **u = realloc(T.undo, (T.n_undo + 1) * sizeof(*u));
	char *s = malloc(strlen(tok) + 2);

	if (!u || !s) {
		free(s);
		if (u)
			T.undo = u;
		return;
	}
	T.undo = u;
	s[0] = '!';
	strcpy(s + 1, tok);
	T.undo[T.n_undo++] = s;
}

/* a kernel command token, as the probe core takes it */
static int apply_cmd(const char *tok, const char *shown, char *why, size_t wlen)
{
	int r = usft_ftrace_regex_cmd(NULL, tok, 1);

	if (r == USFT_REGEX_GLOB) {
		say(why, wlen, "--trigger %s%s: no command (want FUNC:traceoff[:N], "
		    "FUNC:traceon[:N], FUNC:stacktrace[:N])", shown, "");
		return -EINVAL;
	}
	if (r < 0) {
		say(why, wlen, "--trigger %s: %s (a known command, and FUNC a patchable function: "
		    "`usft list -f PROG`)", shown, strerror(-r));
		return r;
	}
	note_undo(tok);
	return 0;
}

static int apply_trigger(const char *tok, char *why, size_t wlen)
{
	struct usft_trigger t;
	char cmd[300], msg[512] = "";
	int r;

	r = usft_trigger_parse(tok, &t, msg, sizeof(msg));
	if (r) {
		say(why, wlen, "--trigger %s%s", msg, "");
		return r;
	}
	if (t.kernel)
		return apply_cmd(tok, tok, why, wlen);
	if ((t.actions & USFT_TRIG_DEPTH) && strcmp(usft_tracer_name(), "function_graph")) {
		say(why, wlen, "--trigger %s: depth=N needs the function_graph tracer%s", tok, "");
		return -EINVAL;
	}
	if (t.actions & (USFT_TRIG_TRACEON | USFT_TRIG_TRACEOFF)) {
		snprintf(cmd, sizeof(cmd), "%s:%s", t.func,
			 t.actions & USFT_TRIG_TRACEON ? "traceon" : "traceoff");
		r = apply_cmd(cmd, tok, why, wlen);
		if (r)
			return r;
	}
	if (t.actions & USFT_TRIG_FINISH) {
		r = finish_thread_start();
		if (!r) {
			r = register_ftrace_function_probe(t.func, NULL, &finish_ops, NULL);
			r = r > 0 ? 0 : r;
		}
		if (r) {
			say(why, wlen, "--trigger %s: %s (FUNC a patchable function: `usft list -f "
			    "PROG`)", tok, strerror(-r));
			return r;
		}
		T.finish_probe = true;
	}
	return 0;
}

static int apply_signal(const char *tok, char *why, size_t wlen)
{
	struct usft_trigger t;
	const char *no = NULL;
	char msg[512] = "";
	int r;

	r = usft_signal_trigger_parse(tok, &t, msg, sizeof(msg));
	if (r) {
		say(why, wlen, "--signal %s%s", msg, "");
		return r;
	}
	if ((t.actions & USFT_TRIG_FINISH) && (r = finish_thread_start())) {
		say(why, wlen, "--signal %s: %s", tok, strerror(-r));
		return r;
	}
	if (T.sig_actions[t.sig]) {
		/* the same signal again: one hook, both tokens' actions */
		__atomic_or_fetch(&T.sig_actions[t.sig], t.actions, __ATOMIC_RELEASE);
		return 0;
	}
	__atomic_store_n(&T.sig_actions[t.sig], t.actions, __ATOMIC_RELEASE);
	r = usft_signal_hook(t.sig, signal_trigger, &no);
	if (r) {
		T.sig_actions[t.sig] = 0;
		say(why, wlen, "--signal %s: %s", tok, no ? no : strerror(-r));
	}
	return r;
}

/*
 * usft_triggers_start() - apply @triggers (-T tokens) and @signals (--signal
 * tokens), white space between tokens, to the open recording.  One that is
 * refused is said in @why ("; " between them) and the others still apply.
 * Return: 0 or the first one's -errno.
 */
int usft_triggers_start(const char *triggers, const char *signals, char *why, size_t wlen)
{
	char *copy, *save = NULL;
	int ret = 0;

	if (wlen)
		why[0] = 0;
	pthread_mutex_lock(&T.lock);
	for (int pass = 0; pass < 2; pass++) {
		const char *list = pass ? signals : triggers;

		if (!list || !*list)
			continue;
		if (!(copy = strdup(list))) {
			ret = -ENOMEM;
			break;
		}
		for (char *tok = strtok_r(copy, " \t\n", &save); tok;
		     tok = strtok_r(NULL, " \t\n", &save)) {
			int r = pass ? apply_signal(tok, why, wlen) : apply_trigger(tok, why, wlen);

			if (r && !ret)
				ret = r;
		}
		free(copy);
	}
	pthread_mutex_unlock(&T.lock);
	return ret;
}

/*
 * usft_triggers_stop() - remove what usft_triggers_start() applied (before
 * the session ends: a detach leaves no probe and no signal hook behind).
 */
void usft_triggers_stop(void)
{
	pthread_mutex_lock(&T.lock);
	for (size_t i = 0; i < T.n_undo; i++) {
		usft_ftrace_regex_cmd(NULL, T.undo[i], 1);
		free(T.undo[i]);
	}
	free(T.undo);
	T.undo = NULL;
	T.n_undo = 0;
	if (T.finish_probe)
		unregister_ftrace_function_probe_func(NULL, NULL, &finish_ops);
	T.finish_probe = false;
	for (int s = 1; s < _NSIG; s++) {
		if (T.sig_actions[s]) {
			usft_signal_unhook(s);
			__atomic_store_n(&T.sig_actions[s], 0, __ATOMIC_RELEASE);
		}
	}
	if (__atomic_exchange_n(&T.finish_thread, false, __ATOMIC_ACQ_REL)) {
		/* not from the thread itself (state 1 there): let it go */
		int st = 0;

		if (__atomic_compare_exchange_n(&finish_state, &st, 2, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			sem_post(&finish_sem);
	}
	pthread_mutex_unlock(&T.lock);
}

/* ---- depth=N (function_graph) ------------------------------------------------ */

/*
 * The functions of depth=N triggers with their N, sorted by address; a
 * re-resolve publishes a new table, the old ones are freed with the last
 * (after the graph ops is unregistered: no reader left).
 */
struct depth_ent {
	unsigned long ip;
	int depth;
};
struct depth_set {
	struct depth_set *old;
	size_t n;
	struct depth_ent e[];
};
static struct depth_set *depth_set;
static char *depth_list;

static int cmp_ent(const void *a, const void *b)
{
	const struct depth_ent *x = a, *y = b;

	return (x->ip > y->ip) - (x->ip < y->ip);
}

/* Return: the functions found, -1 when no token has depth=N (nothing to look up) */
int usft_graph_depth_resolve(const char *triggers)
{
	char *copy, *save = NULL;
	struct depth_set *set = NULL;
	size_t n = 0, cap = 0;
	bool any = false;

	if (triggers) {
		free(depth_list);
		depth_list = strdup(triggers);
	}
	if (!depth_list || !(copy = strdup(depth_list)))
		return -1;
	for (char *tok = strtok_r(copy, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		struct usft_trigger t;
		char msg[8];
		int r;

		if (usft_trigger_parse(tok, &t, msg, sizeof(msg)) || !(t.actions & USFT_TRIG_DEPTH))
			continue;
		any = true;
		r = usft_match_sites(t.func, -1, NULL, 0);
		if (r <= 0)
			continue;
		if (n + (size_t)r > cap) {
			struct depth_set *g;

			cap = n + (size_t)r;
			g = realloc(set, sizeof(*set) + cap * sizeof(set->e[0]));
			if (!g)
				break;
			set = g;
		}
		{
			unsigned long *ips = malloc((size_t)r * sizeof(*ips));

			if (!ips)
				break;
			r = usft_match_sites(t.func, -1, ips, (size_t)r);
			for (int i = 0; i < r && n < cap; i++)
				set->e[n++] = (struct depth_ent){ ips[i], t.depth };
			free(ips);
		}
	}
	free(copy);
	if (!set)
		return any ? 0 : -1;
	/* the same function twice: the later token wins (a stable sort keeps order) */
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (set->e[j].ip == set->e[i].ip) {
				set->e[i].depth = set->e[j].depth;
				set->e[j] = set->e[--n];
				j--;
			}
	qsort(set->e, n, sizeof(set->e[0]), cmp_ent);
	set->n = n;
	set->old = depth_set;
	__atomic_store_n(&depth_set, set, __ATOMIC_RELEASE);
	return (int)n;
}

/* in the entry callback: N of the depth=N trigger on @ip, 0 if none */
int usft_graph_depth_match(unsigned long ip)
{
	const struct depth_set *set = __atomic_load_n(&depth_set, __ATOMIC_ACQUIRE);
	struct depth_ent key = { ip, 0 };
	const struct depth_ent *e;

	if (!set)
		return 0;
	e = bsearch(&key, set->e, set->n, sizeof(key), cmp_ent);
	return e ? e->depth : 0;
}

void usft_graph_depth_free(void)
{
	struct depth_set *set = depth_set;

	__atomic_store_n(&depth_set, NULL, __ATOMIC_RELEASE);
	while (set) {
		struct depth_set *o = set->old;

		free(set);
		set = o;
	}
	free(depth_list);
	depth_list = NULL;
}
