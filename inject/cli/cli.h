/* SPDX-License-Identifier: MIT */
/* inject/cli/cli.h - shared between the `usft` subcommands. */
#ifndef USFT_CLI_H
#define USFT_CLI_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* exit codes (env(1)/timeout(1) conventions for record) */
enum {
	USFT_EXIT_OK = 0,
	USFT_EXIT_FAIL = 1,		/* report/list/stat: the work failed */
	USFT_EXIT_USAGE = 2,		/* bad command line */
	/* attach, detach, record -P, stat -P: why the process was left alone */
	USFT_EXIT_NOPROC = 3,		/* no such process */
	USFT_EXIT_PERM = 4,		/* not permitted (uid, ptrace EPERM, ptrace_scope) */
	USFT_EXIT_NOSITES = 5,		/* no patchable functions */
	USFT_EXIT_ARCH = 6,		/* another architecture */
	USFT_EXIT_STATIC = 7,		/* no dynamic loader / libc (static binary) */
	USFT_EXIT_TRACED = 8,		/* already traced by a debugger */
	USFT_EXIT_GONE = 9,		/* exited or exec'd during the attach */
	USFT_EXIT_NOCTL = 10,		/* no control socket (not attached) */
	USFT_EXIT_RECORD_FAIL = 125,	/* record: usft itself failed */
	USFT_EXIT_NOEXEC = 126,		/* record: PROG found but not runnable */
	USFT_EXIT_NOTFOUND = 127,	/* record: PROG not found */
};

/* where the preload shim is looked for (the build sets these) */
#ifndef USFT_PRELOAD_NAME
#define USFT_PRELOAD_NAME "libusft-preload.so"
#endif
#ifndef USFT_BIN_TO_LIB
#define USFT_BIN_TO_LIB "../lib"
#endif
#ifndef USFT_INSTALL_LIBDIR
#define USFT_INSTALL_LIBDIR "/usr/local/lib"
#endif

/* ---- cli.c: shared by every command ------------------------------------ */

/* the usage of @cmd, or the command list (@cmd NULL or unknown) */
void usft_usage(FILE *out, const char *cmd);
/* "usft CMD: <message>" and the --help hint; Return: USFT_EXIT_USAGE */
int usft_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* getopt_long()'s '?' (unknown option) or ':' (its value missing), said
 * once (run getopt with opterr = 0); Return: USFT_EXIT_USAGE */
int usft_bad_option(const char *cmd, int c, char **argv);
/*
 * A decimal number for option @opt of @cmd in [min, max]; Return: false
 * after the usage error that names the option, the value and the range
 * (*rc: its exit code).
 */
bool usft_cli_number(const char *cmd, const char *opt, const char *arg, long long min,
		     long long max, const char *what, long long *out, int *rc);
/* PATH search like execvp(); Return: 0 or -1 with errno */
int usft_find_program(const char *prog, char *out, size_t len);
/* @p exists and can be read */
bool usft_readable(const char *p);
/* libusft-preload.so for this usft (USFT_PRELOAD, next to us, ../lib,
 * installed); Return: 0 or -1 */
int usft_find_preload(char *out, size_t len);

/* ---- the commands (usft.c dispatches) ---------------------------------- */

int usft_cmd_record(int argc, char **argv);	/* record.c */
int usft_cmd_list(int argc, char **argv);	/* list.c */
/*
 * deps.c: @prog (the real path, [0]) and the shared objects it loads, found
 * by reading files only (the loader's search rules).  Return: 0 or -errno.
 */
int usft_list_objects(const char *prog, char ***objs, size_t *nobjs);
/* @path opened with libelf (an ELF file); Return: 0 (elf_end, close) or -errno */
struct Elf;
int usft_cli_elf_open(const char *path, int *fd, struct Elf **elf);
/*
 * Why a program recorded nothing (list.c, from its files): it has no
 * patchable functions, or it is stripped, or they were not called.
 */
const char *usft_no_sites_reason(const char *path, const char *prog);

/* output.c: the trace file of `usft record` */
struct usft_out {
	char path[PATH_MAX];	/* the file, absolute (after --follow-symlink) */
	char name[PATH_MAX];	/* the same as the user wrote it, for messages */
	char tmp[PATH_MAX];	/* written there, renamed to @path; "" when direct */
	bool direct;		/* not a regular file: written as it is */
	bool existed;
};
/* Return: 0, or -1 after a message (a symlink not followed, a directory, ...) */
int usft_out_prepare(const char *output, bool follow_symlink, struct usft_out *o);
const char *usft_out_write_path(const struct usft_out *o);
void usft_out_abort(struct usft_out *o);		/* the program never ran */
/* complete: rename, or drop an empty file unless @keep_empty (*empty); Return: 0 or -1 */
int usft_out_commit(struct usft_out *o, bool keep_empty, bool *empty);
void usft_record_summary(const struct usft_out *o, const char *prog, const char *progpath,
			 bool empty, bool lossless);
/*
 * usft_prog_interp() - @path's PT_INTERP into @interp ("" if none).
 * Return: 1 dynamically linked, 0 an ELF program without an interpreter
 * (static or static-pie: LD_PRELOAD cannot reach it), -1 not an ELF program.
 */
int usft_prog_interp(const char *path, char *interp, size_t len);
/* usft_libtool_target() - the real program behind a libtool wrapper script
 * @path (.libs/lt-NAME or .libs/NAME).  Return: 0 with @out set, or -1. */
int usft_libtool_target(const char *path, char *out, size_t len);
/* the sites of @path (link-time addresses, malloc'd); Return: 0 or -errno */
int usft_read_sites(const char *path, unsigned long **addrs, size_t *n);

/*
 * salvage.c: crash-safe recording.  usft_rings_dir_make(): a private
 * directory for the rings (USFT_RING_DIR), on tmpfs when one is writable;
 * Return: 0 or -1.  usft_rings_salvage(): the rings of processes that
 * died before finishing the trace go into @trace (NULL: only removed), and
 * @dir is removed; Return: the events recovered.  usft_exit_note() keeps a
 * reaped process's wait status, usft_exits_write() puts them in @trace.
 */
int usft_rings_dir_make(char *dir, size_t len);
unsigned long long usft_rings_salvage(const char *dir, const char *trace);
/* `usft record -P`: the rings file @ring_fd (the process's memfd, sent at
 * START) salvaged into @trace if the process died first; Return: events */
unsigned long long usft_rings_salvage_fd(int ring_fd, const char *trace);
/* whether that file says its process is still recording (not ended cleanly) */
bool usft_rings_fd_live(int ring_fd);
/* no process that runs still records into @dir (a finish trigger ended them) */
bool usft_rings_all_ended(const char *dir);
void usft_exit_note(int pid, int status);
void usft_exits_write(const char *trace);

/* attach.c: the commands that reach a running process */
#include <sys/types.h>
/*
 * procexit.c: how a process that is not our child ended.  usft_pidfd_open():
 * a pidfd of @pid or -1.  usft_proc_exit_status(): waits (2 s at most) for
 * every thread of @pid to be gone, then reads its wait(2) status from its
 * zombie's /proc/PID/stat (@start: its start time, 0: any) or from the
 * pidfd (Linux 6.15); Return: whether *@status is known.
 */
int usft_pidfd_open(pid_t pid);
bool usft_proc_exit_status(pid_t pid, int pidfd, unsigned long long start, int *status);
/* a control connection to @pid, the runtime loaded first if it serves none;
 * Return: the socket, or -(exit code) after a message */
int usft_ctl_attach(const char *cmd, pid_t pid, bool *loaded);
/* one request (control.h), the whole reply text in *@out (malloc'd);
 * Return: its status, or -EPIPE/-EPROTO/-ETIMEDOUT for the connection */
int usft_ctl_request(int fd, int op, const char *text, char **out);
/* the same, for a reply that may wait (PIPE_WAIT): @stop() true ends the
 * wait with -EINTR, the connection then to be closed */
int usft_ctl_request_until(int fd, int op, const char *text, char **out, bool (*stop)(void));
int usft_parse_pid(const char *cmd, const char *s, pid_t *pid);
/* inject/tracefs/mount.c: `usft mount PID DIR` */
int usft_cmd_mount(int argc, char **argv);
/*
 * mount the tracefs of the control connection @fd to @pid on @dir, serve it
 * until it is unmounted (in a daemon unless @foreground); @ready_fd >= 0:
 * one byte written there (and closed) once mounted.  Return: exit code
 */
int usft_mount_tracefs(int fd, pid_t pid, const char *dir, bool foreground, int ready_fd);
/* @dir is a directory (else a message); Return: 0 or USFT_EXIT_USAGE */
int usft_tracefs_dir_ok(const char *cmd, const char *dir);
/*
 * inject/tracefs/automount.c: `record --mount DIR`, `attach PID --mount DIR`.
 * usft_tracefs_automount(): a child of this usft serves @pid's tracefs on
 * @dir once @pid's control socket answers (@wait_ms at most); returns once
 * it is mounted.  Return: the server's pid, or -1 after a message.
 * usft_tracefs_autounmount(): unmount it (the process left untraced by the
 * tracefs, as after fusermount3 -u) and reap the server; -1: nothing.
 */
pid_t usft_tracefs_automount(const char *cmd, pid_t pid, const char *dir, long wait_ms, bool quiet);
void usft_tracefs_autounmount(pid_t server);
/* the control socket of @pid if it serves one (never attaches); Return: fd or -errno */
int usft_ctl_connect(pid_t pid);
struct usft_record_args {
	const char *tracer, *filter, *notrace_list, *graph, *clock;
	long long depth, bufkb;
	const char *output;		/* -o as given */
	bool follow_symlink;
	double duration;		/* seconds, 0: until ^C or exit */
	bool quiet;
	const char *mount;		/* --mount DIR, or NULL */
	/* carried over the control channel (docs/attach.md): -N, -A, -R, -T, --signal */
	const char *graph_notrace, *args, *retval, *triggers, *signals;
	bool funcgraph_retval;
};
int usft_record_pid(const char *pid, const struct usft_record_args *a);
int usft_cmd_attach(int argc, char **argv);
int usft_cmd_detach(int argc, char **argv);
int usft_stat_pid(const char *pid);

#endif
