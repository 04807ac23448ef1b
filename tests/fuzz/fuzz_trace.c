// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the trace file reader (`usft report`, the summary of `usft
 * record`) and both printers over whatever it accepted.  The input is the
 * file: a memfd, so the reader's size checks see a regular file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "trace_read.h"

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
		usft_trace_free(&t);
	}
	close(fd);
	return 0;
}
