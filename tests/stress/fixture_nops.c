// SPDX-License-Identifier: MIT
/* Tiny patch-flagged functions; with gcc each entry is five 1-byte NOPs. */
#if defined(__clang__)
#define FN __attribute__((noinline, used, visibility("default")))
#else
#define FN __attribute__((noinline, noipa, used, visibility("default")))
#endif

FN long st_nop_a(long x) { __asm__ volatile("" ::: "memory"); return x + 3; }
FN long st_nop_b(long x) { __asm__ volatile("" ::: "memory"); return x * 3; }
FN long st_nop_c(long x) { __asm__ volatile("" ::: "memory"); return x - 7; }
FN long st_nop_d(long x) { __asm__ volatile("" ::: "memory"); return x ^ 0x55; }
