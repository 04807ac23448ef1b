// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the trace file reader (`usft report`, the summary of `usft
 * record`), both printers and the views (summary, call graph, folded,
 * info) over whatever it accepted.  The input is the
 * file: a memfd, so the reader's size checks see a regular file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "trace_read.h"
#include "trace_views.h"

static FILE *sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usft_trace t;
	int fd;

	if (!sink && !(sink = fopen("/dev/null", "w")))
		return 0;
	fd = memfd_create("fuzz_trace", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	/* the summary's pass (no events), then report's */
	lseek(fd, 0, SEEK_SET);
	if (!usft_trace_read_fd(fd, &t, false))
		usft_trace_free(&t);
	lseek(fd, 0, SEEK_SET);
	if (!usft_trace_read_fd(fd, &t, true)) {
		usft_print_text(sink, &t, 0);
		usft_print_json(sink, &t, 0);
		for (int k = USFT_VIEW_SUMMARY; k <= USFT_VIEW_FOLDED; k++) {
			struct usft_view_opts o = { .kind = k, .graph_func = "*", .sort = "self,func",
						    .thresh_ns = k == USFT_VIEW_FOLDED ? 100 : 0,
						    .max_depth = k == USFT_VIEW_GRAPH ? 3 : 0 };
			const char *why;

			usft_print_view(sink, &t, &o, &why);
		}
		usft_print_info(sink, &t, "fuzz");
		usft_trace_free(&t);
	}
	/* the streaming reader (usft report's), values included */
	{
		char path[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (!usft_trace_open(path, &t)) {
			usft_print_text(sink, &t, 0);
			usft_print_json(sink, &t, 0);
			usft_trace_free(&t);
		}
	}
	close(fd);
	return 0;
}
