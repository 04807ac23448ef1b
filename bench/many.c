// SPDX-License-Identifier: MIT
/* 10,000 tiny traced functions for the attach benchmark (seed 001). */
#if defined(__clang__)
#define TRACEE __attribute__((noinline, used))
#else
#define TRACEE __attribute__((noinline, noipa, used))
#endif

#define F(a, b, c, d) \
	TRACEE long bench_many_##a##b##c##d(long x) { __asm__ volatile("" ::: "memory"); return x + 1##a##b##c##d; }
#define F10(a, b, c) F(a,b,c,0) F(a,b,c,1) F(a,b,c,2) F(a,b,c,3) F(a,b,c,4) \
		     F(a,b,c,5) F(a,b,c,6) F(a,b,c,7) F(a,b,c,8) F(a,b,c,9)
#define F100(a, b) F10(a,b,0) F10(a,b,1) F10(a,b,2) F10(a,b,3) F10(a,b,4) \
		   F10(a,b,5) F10(a,b,6) F10(a,b,7) F10(a,b,8) F10(a,b,9)
#define F1000(a) F100(a,0) F100(a,1) F100(a,2) F100(a,3) F100(a,4) \
		 F100(a,5) F100(a,6) F100(a,7) F100(a,8) F100(a,9)
F1000(1) F1000(2) F1000(3) F1000(4) F1000(5) F1000(6) F1000(7) F1000(8) F1000(9) F1000(0)

#define A(a, b, c, d) (void *)bench_many_##a##b##c##d,
#define A10(a, b, c) A(a,b,c,0) A(a,b,c,1) A(a,b,c,2) A(a,b,c,3) A(a,b,c,4) \
		     A(a,b,c,5) A(a,b,c,6) A(a,b,c,7) A(a,b,c,8) A(a,b,c,9)
#define A100(a, b) A10(a,b,0) A10(a,b,1) A10(a,b,2) A10(a,b,3) A10(a,b,4) \
		   A10(a,b,5) A10(a,b,6) A10(a,b,7) A10(a,b,8) A10(a,b,9)
#define A1000(a) A100(a,0) A100(a,1) A100(a,2) A100(a,3) A100(a,4) \
		 A100(a,5) A100(a,6) A100(a,7) A100(a,8) A100(a,9)

void *const bench_many[10000] = {
	A1000(1) A1000(2) A1000(3) A1000(4) A1000(5) A1000(6) A1000(7) A1000(8) A1000(9) A1000(0)
};
