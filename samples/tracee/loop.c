// SPDX-License-Identifier: MIT
/*
 * loop N [time]: N calls of one empty function (default 20,000,000).  Used
 * by the 20M-call e2e test (which never looks at time) and by
 * compare-uftrace.sh, which passes "time" and reads the "ns_per_call" line
 * this then prints on stderr: the CPU time of the calling thread in the
 * call loop alone (start-up, writing the trace file and time spent waiting
 * for a busy machine's CPUs are not counted), and the wall time as well.
 * loop N time EVERY: a 1 ms pause after every EVERY calls (a producer the
 * writer keeps up with whatever the machine's load: e2e_ring_give_back).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "tracee.h"

TRACEE long work(long x)
{
	KEEP();
	return x + 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000000L, v = 0;
	long every = argc > 3 ? atol(argv[3]) : 0;
	struct timespec a, b, wa, wb;

	clock_gettime(CLOCK_MONOTONIC, &wa);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	for (long i = 0; i < n; i++) {
		v = work(v);
		if (every > 0 && !((i + 1) % every))
			usleep(1000);
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	clock_gettime(CLOCK_MONOTONIC, &wb);
	printf("calls = %ld\n", v);
	if (argc > 2)
		fprintf(stderr, "ns_per_call=%.2f\nwall_ns_per_call=%.2f\n",
			((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)(n ? n : 1),
			((wb.tv_sec - wa.tv_sec) * 1e9 + (wb.tv_nsec - wa.tv_nsec)) / (double)(n ? n : 1));
	return 0;
}
