/* SPDX-License-Identifier: MIT */
/* bench/cpu.h - every benchmark names the machine its figures come from. */
#ifndef USFT_BENCH_CPU_H
#define USFT_BENCH_CPU_H

#include <stddef.h>
#include <stdio.h>

/* the CPU model as /proc/cpuinfo names it ("AMD EPYC", "Intel(R) Xeon(R) ...") */
void bench_cpu_model(char *buf, size_t len);

/*
 * "# PROG: cpu: MODEL, N cpus online, load average L1 L5 L15" on @out:
 * the first line of every benchmark's output.
 */
void bench_print_cpu(FILE *out, const char *prog);

#endif
