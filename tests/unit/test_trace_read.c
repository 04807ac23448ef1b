// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_trace_read.c - the counts-only pass of the trace reader
 * (usft_trace_read_fd(..., false): `usft record`'s summary) on hand-built
 * files.  A regular file's EVENTS payloads are skipped and each ended
 * session's count is its END chunk's events=; a pipe is read through.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "trace_format.h"
#include "trace_read.h"

static void chunk(int fd, unsigned int type, const void *payload, size_t size, uint64_t arg)
{
	struct usft_chunk_hdr h = { .version = USFT_TRACE_VERSION, .type = (uint16_t)type,
				    .pid = 42, .tid = 42, .size = size, .arg = arg };

	memcpy(h.magic, USFT_TRACE_MAGIC, 4);
	cr_assert_eq(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
	if (size)
		cr_assert_eq(write(fd, payload, size), (ssize_t)size);
}

static void text_chunk(int fd, unsigned int type, const char *text)
{
	char buf[256] = "";
	size_t n = (strlen(text) + 7) & ~7UL;

	cr_assert_lt(n, sizeof(buf));
	memcpy(buf, text, strlen(text));
	chunk(fd, type, buf, n, 0);
}

/* a session, one EVENTS chunk of @words event words, an END saying @end_events */
static void trace_file(int fd, const uint64_t *words, size_t nwords, unsigned long end_events)
{
	char end[64];

	text_chunk(fd, USFT_CHUNK_SESSION, "tracer=function\ncomm=t\nbase_ns=0\n");
	chunk(fd, USFT_CHUNK_EVENTS, words, nwords * 8, 1);
	snprintf(end, sizeof(end), "events=%lu\nlost=1\n", end_events);
	text_chunk(fd, USFT_CHUNK_END, end);
}

/* three function events (3 words each) */
static void three_events(uint64_t *w)
{
	for (int i = 0; i < 3; i++) {
		w[3 * i] = usft_ev_w0(100 + i, 0);
		w[3 * i + 1] = usft_ev_w1(0x1000 + 16 * i, 0, EV_FUNC);
		w[3 * i + 2] = 0x2000;
	}
}

Test(trace_read_counts, a_regular_file_counts_from_its_end_chunk)
{
	/* payload words the END does not agree with: the count is END's */
	static uint64_t w[4096];
	struct usft_trace t;
	int fd = memfd_create("t", MFD_CLOEXEC);

	cr_assert_geq(fd, 0);
	three_events(w);
	trace_file(fd, w, sizeof(w) / 8, 7);
	lseek(fd, 0, SEEK_SET);
	cr_assert_eq(usft_trace_read_fd(fd, &t, false), 0);
	cr_expect_eq(t.events, 7, "events %llu: not END's 7", (unsigned long long)t.events);
	cr_expect_eq(t.lost, 1);
	cr_expect_eq(t.nsess, 1);
	cr_expect(t.sess[0].ended);
	usft_trace_free(&t);
	/* loading reads the events themselves */
	lseek(fd, 0, SEEK_SET);
	cr_assert_eq(usft_trace_read_fd(fd, &t, true), 0);
	cr_expect_eq(t.events, 3, "loaded events %llu", (unsigned long long)t.events);
	usft_trace_free(&t);
	close(fd);
}

Test(trace_read_counts, agrees_with_loading_on_a_consistent_file)
{
	uint64_t w[9];
	struct usft_trace a, b;
	int fd = memfd_create("t", MFD_CLOEXEC);

	cr_assert_geq(fd, 0);
	three_events(w);
	trace_file(fd, w, 9, 3);
	lseek(fd, 0, SEEK_SET);
	cr_assert_eq(usft_trace_read_fd(fd, &a, false), 0);
	lseek(fd, 0, SEEK_SET);
	cr_assert_eq(usft_trace_read_fd(fd, &b, true), 0);
	cr_expect_eq(a.events, b.events);
	cr_expect_eq(a.lost, b.lost);
	usft_trace_free(&a);
	usft_trace_free(&b);
	close(fd);
}

Test(trace_read_counts, a_pipe_is_read_through)
{
	uint64_t w[9];
	struct usft_trace t;
	int p[2];

	cr_assert_eq(pipe(p), 0);
	three_events(w);
	trace_file(p[1], w, 9, 7);	/* fits the pipe's buffer */
	close(p[1]);
	cr_assert_eq(usft_trace_read_fd(p[0], &t, false), 0);
	cr_expect_eq(t.events, 3, "a pipe cannot skip: events %llu", (unsigned long long)t.events);
	usft_trace_free(&t);
	close(p[0]);
}

/* ---- a fork child's names (SESSION forked=1), PAD chunks ------------------ */

static void chunk_of(int fd, uint32_t pid, unsigned int type, const void *payload, size_t size,
		     uint64_t arg)
{
	struct usft_chunk_hdr h = { .version = USFT_TRACE_VERSION, .type = (uint16_t)type,
				    .pid = pid, .tid = pid, .size = size, .arg = arg };

	memcpy(h.magic, USFT_TRACE_MAGIC, 4);
	cr_assert_eq(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
	if (size)
		cr_assert_eq(write(fd, payload, size), (ssize_t)size);
}

static void session_of(int fd, uint32_t pid, uint32_t ppid, bool forked)
{
	char buf[256] = "";
	size_t n;

	snprintf(buf, sizeof(buf), "tracer=function\ncomm=t\nbase_ns=0\npid=%u\nppid=%u\n%s",
		 pid, ppid, forked ? "forked=1\n" : "");
	n = (strlen(buf) + 7) & ~7UL;
	chunk_of(fd, pid, USFT_CHUNK_SESSION, buf, n, 0);
}

/* SYMS: "work" at 0x1000 */
static void syms_of(int fd, uint32_t pid)
{
	struct {
		struct usft_sym_rec r;
		char name[8];
	} s = { { 0x1000, 0, 4, 0 }, "work" };

	chunk_of(fd, pid, USFT_CHUNK_SYMS, &s, sizeof(s), 0);
}

/*
 * parent 10 names 0x1000; child 11 (SESSION with or without forked=1, an
 * UNMAP or not) has one event at 0x1000 and names nothing.  Return: the
 * child's session index; *@t loaded.
 */
static unsigned int fork_file(struct usft_trace *t, bool forked, bool unmap, bool pad)
{
	uint64_t w[3] = { usft_ev_w0(5, 0), usft_ev_w1(0x1000, 0, EV_FUNC), 0x2000 };
	uint64_t hi = 0x3000;
	int fd = memfd_create("t", MFD_CLOEXEC);

	cr_assert_geq(fd, 0);
	session_of(fd, 10, 1, false);
	syms_of(fd, 10);
	session_of(fd, 11, 10, forked);
	if (pad) {
		/* what a salvage leaves of a short write: any size, skipped */
		char junk[20];

		memset(junk, 0xff, sizeof(junk));
		chunk_of(fd, 11, USFT_CHUNK_PAD, junk, sizeof(junk), 0);
	}
	if (unmap)
		chunk_of(fd, 11, USFT_CHUNK_UNMAP, &hi, sizeof(hi), 0x1000);
	chunk_of(fd, 11, USFT_CHUNK_EVENTS, w, sizeof(w), 0);
	lseek(fd, 0, SEEK_SET);
	cr_assert_eq(usft_trace_read_fd(fd, t, true), 0);
	close(fd);
	cr_assert_eq(t->nsess, 2);
	cr_assert_eq(t->sess[1].pid, 11);
	return 1;
}

Test(trace_read_fork, a_fork_child_gets_its_parents_names)
{
	struct usft_trace t;
	unsigned int s = fork_file(&t, true, false, false);
	const char *n = usft_trace_sym(&t, s, 0, 0x1000, NULL);

	cr_expect(n && !strcmp(n, "work"), "the child's 0x1000 is %s, not its parent's work",
		  n ? n : "(unnamed)");
	cr_expect_null(usft_trace_sym(&t, s, 0, 0x1010, NULL), "an address nobody named");
	usft_trace_free(&t);
}

Test(trace_read_fork, not_without_forked_1)
{
	/* an exec'd image with the same ppid is not its parent's address space */
	struct usft_trace t;
	unsigned int s = fork_file(&t, false, false, false);

	cr_expect_null(usft_trace_sym(&t, s, 0, 0x1000, NULL));
	usft_trace_free(&t);
}

Test(trace_read_fork, not_after_the_child_unmapped)
{
	struct usft_trace t;
	unsigned int s = fork_file(&t, true, true, false);

	cr_expect_null(usft_trace_sym(&t, s, 1, 0x1000, NULL));
	usft_trace_free(&t);
}

Test(trace_read_fork, a_pad_chunk_is_skipped)
{
	struct usft_trace t;
	unsigned int s = fork_file(&t, true, false, true);

	cr_expect_eq(t.events, 1, "%llu events", (unsigned long long)t.events);
	cr_expect(!t.truncated);
	cr_expect_not_null(usft_trace_sym(&t, s, 0, 0x1000, NULL));
	usft_trace_free(&t);
}
