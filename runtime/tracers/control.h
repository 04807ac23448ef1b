/* SPDX-License-Identifier: MIT */
/*
 * tracers/control.h - the control channel of a traced process: the wire
 * format shared by the runtime's server (tracers/control.c) and its
 * clients (`usft attach/record -P/stat -P/detach`, a tracefs).  docs/attach.md
 * describes it for other clients.
 *
 * One Unix SOCK_SEQPACKET socket per process, <dir>/<pid>.sock with <dir>
 * $XDG_RUNTIME_DIR/usft, else /run/usft, else /tmp/usft-<uid> (mode 0700
 * directories, 0600 socket); peers are checked with SO_PEERCRED (the
 * process's own uid, or root).
 *
 * Every message is one packet: a header, then @len bytes of text.
 *   request: magic, version, op, flags 0, status 0, len, text
 *   reply:   the same op; status 0 or a negative errno; text (a result, or
 *            for an error the reason); a long reply is several packets, all
 *            but the last with USFT_CTL_MORE in flags.
 * A packet that is not exactly a header plus @len bytes, a bad magic or
 * version, an unknown op: status -EPROTO, and the connection is closed.
 */
#ifndef USFT_CONTROL_H
#define USFT_CONTROL_H

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define USFT_CTL_MAGIC		0x43465355u	/* "USFC" read as little-endian */
#define USFT_CTL_VERSION	1
#define USFT_CTL_MAX_TEXT	65536		/* request text and reply packet text */
#define USFT_CTL_MORE		1		/* flags: more reply packets follow */

struct usft_ctl_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t op;
	uint32_t flags;
	int32_t status;
	uint32_t len;
	uint32_t reserved;	/* 0 */
};

enum usft_ctl_op {
	/* -> "usft-control 1\npid=..\nversion=..\ntracer=..\nrecording=0|1\n..." */
	USFT_CTL_HELLO = 1,
	/* text: a file name (below) -> its contents */
	USFT_CTL_READ = 2,
	/* text: "NAME\nVALUE" -> nothing; an empty VALUE clears */
	USFT_CTL_WRITE = 3,
	/* start recording with what was written; text: "" or "detach_on_close" */
	USFT_CTL_START = 4,
	/* end the recording: trace file complete, every site back to its NOP */
	USFT_CTL_STOP = 5,
	/* STOP if recording, then the server goes: socket removed, thread gone */
	USFT_CTL_DETACH = 6,
	/*
	 * The tracefs (`usft mount`, tracers/trace_array.c, docs/tracefs.md):
	 * READ and WRITE of "tracefs/PATH" (WRITE takes every line of VALUE
	 * and replaces, as a write after an O_TRUNC open), and:
	 */
	/* text: "tracefs/PATH\nVALUE" -> nothing: a write that adds (O_APPEND, or a later write) */
	USFT_CTL_APPEND = 7,
	/* text: "tracefs/PATH\nMAX" -> at most MAX bytes consumed from PATH's trace_pipe, maybe none */
	USFT_CTL_PIPE = 8,
	/* text: "NAME" -> nothing: mkdir / rmdir instances/NAME */
	USFT_CTL_MKDIR = 9,
	USFT_CTL_RMDIR = 10,
	/* text: "tracefs/PATH" -> nothing: PATH opened with O_TRUNC (trace: cleared) */
	USFT_CTL_TRUNC = 11,
	/*
	 * text: as PIPE -> as PIPE, but the reply waits until that trace_pipe
	 * has something (kernel: a blocking trace_pipe read), an error, or the
	 * client's next request (which takes its place: the wait gets no reply)
	 * or hang-up.  The control thread serves the other clients meanwhile.
	 */
	USFT_CTL_PIPE_WAIT = 12,
	USFT_CTL_NR_OPS,
	/*
	 * Not a request: one packet the server sends unasked to the client
	 * that STARTed with detach_on_close, when the recording ended inside
	 * the process (a finish trigger); text "finish".  Clients skip it
	 * while they wait for a reply.
	 */
	USFT_CTL_ENDED = 0x100,
	/*
	 * Not a request either.  START with detach_on_close may carry one
	 * descriptor (SCM_RIGHTS): a SOCK_SEQPACKET socket of the recorder's.
	 * A child the process forks while recorded sends on it, before it
	 * records anything, one packet of this op with text "pid=N\n" and
	 * two descriptors: the memfd of its own rings and a pidfd of itself
	 * (only the memfd where pidfd_open() fails).  STOP closes the socket.
	 */
	USFT_CTL_CHILD = 0x101,
};

/*
 * Files (the kernel's tracefs names where it has one):
 *   current_tracer       rw  function | function_graph | profile | nop
 *   set_ftrace_filter    rw  globs (-l)     set_ftrace_notrace  rw  globs (-n)
 *   set_graph_function   rw  functions (-g) max_graph_depth     rw  N
 *   trace_clock          rw  auto | mono | counter
 *   buffer_size_kb       rw  ring KiB per thread
 *   output               rw  absolute path of the trace file (appended to)
 *   tracing_on           rw  0 | 1 while recording (events kept or not)
 *   enabled_functions    r   the kernel's format: "func (refs) R I D O M"
 *   stat                 r   `usft stat` of this process: options and counters
 *   set_graph_notrace    rw  functions (-N): not them nor what they call
 *   argument, retval     rw  -A / -R specs "FUNC@VAL[,VAL]", ';' between specs
 *   options/funcgraph-retval  rw  0 | 1 (--funcgraph-retval)
 *   triggers             rw  -T tokens, white space between: "FUNC:traceoff[:N]",
 *                            "FUNC:traceon[:N]", "FUNC@trace_on|trace_off|finish|depth=N"
 *   signal_triggers      rw  --signal tokens: "SIG@trace_on|trace_off|finish"
 * (these six: usft's, since version 1 of this protocol; a WRITE that does
 * not parse is refused with -EINVAL and the reason; functions are looked up
 * at START, which fails with the reason when one is refused.  STOP removes
 * the triggers and signal hooks again.)
 * Writes other than tracing_on are refused (-EBUSY) while recording.
 */

/*
 * Descriptors on the control socket and the children's socket (SCM_RIGHTS):
 * both sides build and walk their control messages with these.
 */
#define USFT_CTL_MAX_FDS	4

union usft_ctl_cmsg {
	struct cmsghdr c;
	char buf[CMSG_SPACE(USFT_CTL_MAX_FDS * sizeof(int))];
};

/* @m (to be sent) carries the @n descriptors @fds, 1..USFT_CTL_MAX_FDS, in @u */
static inline void usft_ctl_put_fds(struct msghdr *m, union usft_ctl_cmsg *u, const int *fds,
				    int n)
{
	struct cmsghdr *c;

	memset(u, 0, sizeof(*u));
	m->msg_control = u->buf;
	m->msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
	c = CMSG_FIRSTHDR(m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, (size_t)n * sizeof(int));
}

/* @m (to be received into) has room for USFT_CTL_MAX_FDS descriptors in @u */
static inline void usft_ctl_fd_room(struct msghdr *m, union usft_ctl_cmsg *u)
{
	m->msg_control = u->buf;
	m->msg_controllen = sizeof(u->buf);
}

/*
 * The descriptors a received @m carries, in order: the first @max into
 * @fds, the rest closed.  Return: how many are in @fds.
 */
static inline int usft_ctl_take_fds(struct msghdr *m, int *fds, int max)
{
	int n = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		size_t k = c->cmsg_len > CMSG_LEN(0) ? (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) : 0;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t j = 0; j < k; j++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + j * sizeof(int), sizeof(int));
			if (n < max)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

#endif /* USFT_CONTROL_H */
