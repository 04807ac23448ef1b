// SPDX-License-Identifier: MIT
/*
 * usft-bench-trigger - seed 002 ("bpf trampoline support jmp mode") and the
 * kernel's bench_trigger replayed: a driver loop calls a target function;
 * a counting callback is attached as fentry, fexit or fmod_ret, in call
 * mode and in jmp mode.  Reported: million calls per second (including the
 * driver loop, as bench_trigger does), cases interleaved round by round,
 * medians; the jmp/call and fentry/direct ratios paired within each round.
 * Twice: with the result dropped (section=trigger, the kernel's driver)
 * and summed (section=trigger_acc).
 *
 * fentry images never call the original, so jmp mode falls back to call
 * mode for them, as in the kernel (fentry_jmp == fentry_call by design).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <usft/ftrace.h>
#include <usft/trampoline.h>
#include <usft/usft.h>
#include "cpu.h"

#if defined(__clang__)
#define TRACEE __attribute__((noinline, used))
#else
#define TRACEE __attribute__((noinline, noipa, used))
#endif

TRACEE long trig_target(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static unsigned long hits;
extern const char bench_empty_tramp[];
static struct ftrace_ops direct_ops;

static notrace unsigned long count_prog(const unsigned long *ctx, void *cookie)
{
	hits++;
	return 0;
}

struct tcase {
	const char *name;
	int kind;	/* -1: nothing attached */
	int mode;
	double mps[32];
	double acc[32];
};

static notrace double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile long sink;

/*
 * The driver of the kernel's bench_trigger: call, drop the result (stored,
 * never read back, so no value is carried from one call to the next).
 */
static notrace __attribute__((noinline)) double drive(long n)
{
	long (*volatile fn)(long) = trig_target;
	double t0 = now_s();

	for (long i = 0; i < n; i++)
		sink = fn(i);
	if (sink != n) {
		fprintf(stderr, "usft-bench-trigger: wrong result\n");
		exit(1);
	}
	return n / (now_s() - t0) / 1e6;
}

/*
 * The same, summing the results in a register the compiler keeps across
 * the call (gcc 12 -O2 picks rbp): whatever the path saves and restores
 * that register through memory (a frame pointer push, a C callback's
 * prologue) adds a store-to-load forwarding to the loop's one dependency
 * chain.  Reported as section=trigger_acc beside the kernel's method.
 */
static notrace __attribute__((noinline)) double drive_acc(long n)
{
	long (*volatile fn)(long) = trig_target;
	long acc = 0;
	double t0 = now_s();

	for (long i = 0; i < n; i++)
		acc += fn(i);
	if (acc != n * (n - 1) / 2 + n) {
		fprintf(stderr, "usft-bench-trigger: wrong results\n");
		exit(1);
	}
	return n / (now_s() - t0) / 1e6;
}

static notrace int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* median over rounds of a[r] / b[r] */
static notrace double paired_ratio(const double *a, const double *b, int rounds)
{
	double r[32];

	for (int i = 0; i < rounds; i++)
		r[i] = a[i] / b[i];
	qsort(r, rounds, sizeof(double), cmpd);
	return r[rounds / 2];
}

int main(int argc, char **argv)
{
	struct tcase cases[] = {
		{ "base", -1 },
		{ "direct", -2 },	/* a bare direct call to an empty trampoline */
		{ "fentry_call", USFT_TRAMP_FENTRY, USFT_TRAMP_MODE_CALL },
		{ "fentry_jmp", USFT_TRAMP_FENTRY, USFT_TRAMP_MODE_JMP },
		{ "fexit_call", USFT_TRAMP_FEXIT, USFT_TRAMP_MODE_CALL },
		{ "fexit_jmp", USFT_TRAMP_FEXIT, USFT_TRAMP_MODE_JMP },
		{ "fmodret_call", USFT_TRAMP_FMODRET, USFT_TRAMP_MODE_CALL },
		{ "fmodret_jmp", USFT_TRAMP_FMODRET, USFT_TRAMP_MODE_JMP },
	};
	int nc = (int)(sizeof(cases) / sizeof(cases[0])), rounds = 7;
	double scale = 1.0;
	bool raw = false;	/* --raw: every round's figures too */
	long n;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--scale") && i + 1 < argc)
			scale = atof(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--quick"))
			rounds = 5;
		else if (!strcmp(argv[i], "--raw"))
			raw = true;
		else {
			fprintf(stderr, "usage: usft-bench-trigger [--quick] [--raw] [--scale F] "
				"[--rounds N]\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > 32)
		rounds = 7;
	n = (long)(5000000 * scale);
	if (n < 1000)
		n = 1000;
	if (usft_init()) {
		perror("usft_init");
		return 1;
	}
	bench_print_cpu(stdout, "usft-bench-trigger");
	printf("# usft-bench-trigger: %ld calls per sample, %d rounds, cases interleaved\n",
	       n, rounds);
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < nc; i++) {
			struct tcase *c = &cases[i];
			struct usft_tramp_link *l = NULL;
			unsigned long h0 = hits;

			if (c->kind == -2) {
				unsigned long site = ftrace_location((unsigned long)trig_target);

				if (ftrace_set_filter_ip(&direct_ops, site, 0, 1) ||
				    register_ftrace_direct(&direct_ops, (unsigned long)bench_empty_tramp)) {
					perror("register_ftrace_direct");
					return 1;
				}
			}
			if (c->kind >= 0) {
				/* the model from DWARF when the build has it */
				struct usft_tramp_opts o = { .sz = sizeof(o), .nr_args = -1,
							     .mode = c->mode };

				l = usft_tramp_attach(trig_target, c->kind, count_prog, NULL, &o);
				if (!l && errno == ENOENT) {
					o.nr_args = 1;
					l = usft_tramp_attach(trig_target, c->kind, count_prog, NULL,
							      &o);
				}
				if (!l) {
					fprintf(stderr, "usft-bench-trigger: %s: %s\n", c->name,
						strerror(errno));
					return 1;
				}
			}
			drive(n / 20 + 1);
			c->mps[r] = drive(n);
			c->acc[r] = drive_acc(n);
			if (c->kind == -2 &&
			    unregister_ftrace_direct(&direct_ops, (unsigned long)bench_empty_tramp, true)) {
				perror("unregister_ftrace_direct");
				return 1;
			}
			if (l && usft_tramp_detach(l)) {
				perror("usft_tramp_detach");
				return 1;
			}
			if (c->kind >= 0 && hits - h0 != (unsigned long)(2 * n + n / 20 + 1)) {
				fprintf(stderr, "usft-bench-trigger: %s: %lu callbacks for %ld calls\n",
					c->name, hits - h0, 2 * n + n / 20 + 1);
				return 1;
			}
		}
		fprintf(stderr, "round %d/%d\n", r + 1, rounds);
	}
	double med[16], rt[3], ra[3];

	/*
	 * Ratios are paired: taken within each round (the two cases ran
	 * seconds apart, on the same machine state), then the median over
	 * rounds, so a slow round moves both sides of its ratio together.
	 */
	for (int r = 0; raw && r < rounds; r++) {
		printf("raw round=%d", r);
		for (int i = 0; i < nc; i++)
			printf(" %s=%.2f", cases[i].name, 1e3 / cases[i].mps[r]);
		printf(" (ns per call)\n");
	}
	rt[0] = paired_ratio(cases[5].mps, cases[4].mps, rounds);
	rt[1] = paired_ratio(cases[7].mps, cases[6].mps, rounds);
	rt[2] = paired_ratio(cases[1].mps, cases[2].mps, rounds);
	ra[0] = paired_ratio(cases[5].acc, cases[4].acc, rounds);
	ra[1] = paired_ratio(cases[7].acc, cases[6].acc, rounds);
	ra[2] = paired_ratio(cases[1].acc, cases[2].acc, rounds);
	for (int i = 0; i < nc; i++) {
		qsort(cases[i].mps, rounds, sizeof(double), cmpd);
		med[i] = cases[i].mps[rounds / 2];
		printf("section=trigger case=%s mcalls_per_s=%.2f ns_per_call=%.2f "
		       "mcalls_per_s_min=%.2f mcalls_per_s_max=%.2f\n", cases[i].name,
		       med[i], 1e3 / med[i], cases[i].mps[0], cases[i].mps[rounds - 1]);
	}
	printf("ratio fexit_jmp/fexit_call=%.2f fmodret_jmp/fmodret_call=%.2f\n", rt[0], rt[1]);
	printf("ratio fentry_cost/direct_cost=%.2f (ns per call, fentry_call over direct)\n",
	       rt[2]);
	for (int i = 0; i < nc; i++) {
		qsort(cases[i].acc, rounds, sizeof(double), cmpd);
		med[i] = cases[i].acc[rounds / 2];
		printf("section=trigger_acc case=%s mcalls_per_s=%.2f ns_per_call=%.2f "
		       "mcalls_per_s_min=%.2f mcalls_per_s_max=%.2f\n", cases[i].name, med[i],
		       1e3 / med[i], cases[i].acc[0], cases[i].acc[rounds - 1]);
	}
	printf("ratio_acc fexit_jmp/fexit_call=%.2f fmodret_jmp/fmodret_call=%.2f "
	       "fentry_cost/direct_cost=%.2f\n", ra[0], ra[1], ra[2]);
	return 0;
}
