// SPDX-License-Identifier: MIT
/*
 * The words a running trampoline reads and usft rewrites while threads may
 * be in it: the callback of a per-ops trampoline (re-pointed at a
 * re-registration, set to the stub before an unregister's grace period),
 * the callback of a graph jmp stub, a BPF-like image's callback, cookie
 * and miss-counter words.  Each must be one aligned store away from its
 * new value on every text route: through /proc/self/mem (text_write=procmem,
 * the W^X route) the kernel copies a write with its memcpy(), which on a
 * CPU with FSRM is `rep movsb`, not promised to store 8 bytes at once, so
 * such a word in an executable page could be read torn.  They live in the
 * trampoline's data twin (mem/execmem.h): writable, never executable.
 *
 * Each case decodes the code the site reaches, finds the RIP-relative load
 * of the word, and checks where the word is (its mapping in
 * /proc/self/maps: writable, not executable), what it holds, that the
 * program's calls are counted and that the word follows the runtime's
 * changes.  Before the twin every word was in the trampoline's r-x page.
 * x86-64 only: docs/design.md says why arm64 keeps them in its images.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <usft/fgraph.h>
#include <usft/trampoline.h>
#include "test_common.h"

TRACEE long lw_ops(long x) { TRACEE_BODY(); return x + 1; }
TRACEE long lw_graph(long x) { TRACEE_BODY(); return x + 2; }
TRACEE long lw_bpf(long x) { TRACEE_BODY(); return x + 3; }

#define FAIL(code, ...) do { fprintf(stderr, "live_words: " __VA_ARGS__); return code; } while (0)

/* the permissions of the mapping holding @addr ("rw-p"), or "" */
static notrace void perms_of(unsigned long addr, char perms[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	perms[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char p[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) == 3 && addr >= lo && addr < hi) {
			memcpy(perms, p, 5);
			break;
		}
	}
	fclose(f);
}

/* @addr's word is in a writable mapping that is not executable */
static notrace int in_data_page(unsigned long addr, const char *what, int code)
{
	char perms[5];

	perms_of(addr, perms);
	if (addr % 8)
		FAIL(code, "%s word at %#lx is not 8-aligned\n", what, addr);
	if (perms[0] != 'r' || perms[1] != 'w' || perms[2] != '-')
		FAIL(code + 1, "%s word at %#lx is in a mapping with permissions '%s', "
		     "not a writable data page\n", what, addr, perms);
	return 0;
}

/* the address a RIP-relative instruction of @len bytes at @at, disp32 at @at + @doff, reads */
static notrace unsigned long rip_target(const unsigned char *at, int doff, int len)
{
	int disp;

	memcpy(&disp, at + doff, 4);
	return (unsigned long)at + (unsigned long)len + (unsigned long)(long)disp;
}

/* the one occurrence of @pat (len @n) in [@lo, @lo + @size), or NULL */
static notrace const unsigned char *find_one(unsigned long lo, size_t size, const unsigned char *pat,
					      size_t n, const unsigned char *mask)
{
	const unsigned char *p = (const unsigned char *)lo, *hit = NULL;

	for (size_t i = 0; i + n <= size; i++) {
		size_t k;

		for (k = 0; k < n; k++)
			if ((p[i + k] & mask[k]) != pat[k])
				break;
		if (k == n) {
			if (hit)
				return NULL;
			hit = p + i;
		}
	}
	return hit;
}

/* ---- per-ops trampoline -------------------------------------------- */

/* bytes from @p to the end of its first `ret; int3` (a copy's way out) */
static notrace size_t to_ret(unsigned long p, size_t max)
{
	const unsigned char *b = (const unsigned char *)p;

	for (size_t i = 0; i + 1 < max; i++)
		if (b[i] == 0xc3 && b[i + 1] == 0xcc)
			return i + 2;
	return max;
}

/*
 * @xmm: novec_tramp=0, the site calls ops->trampoline itself; else lw_ops
 * (integer arguments only) calls that copy's twin without the xmm saves,
 * which has a callback word of its own.
 */
static notrace int ops_case(int route_procmem, int xmm)
{
	static struct tc_counter c;
	/* movq disp32(%rip), %rax ; call *%rax */
	static const unsigned char pat[9] = { 0x48, 0x8b, 0x05, 0, 0, 0, 0, 0xff, 0xd0 };
	static const unsigned char mask[9] = { 0xff, 0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff };
	const unsigned char *call;
	unsigned long tramp, word, func;
	int ret;

	if (route_procmem && usft_set_option("text_write", "procmem"))
		FAIL(2, "text_write=procmem refused\n");
	if (xmm && usft_set_option("novec_tramp", "0"))
		FAIL(2, "novec_tramp=0 refused\n");
	tc_counter_init(&c, 0);
	if (tc_set_filter(&c.ops, "lw_ops", 1) || register_ftrace_function(&c.ops))
		FAIL(3, "registering the counter failed\n");
	tramp = tc_branch_target((const void *)lw_ops, 0xe8);
	if (!tramp || (tramp == c.ops.trampoline) != xmm)
		FAIL(4, "the site does not call the ops' %s (%#lx, trampoline %#lx)\n",
		     xmm ? "trampoline" : "trampoline's twin without xmm saves", tramp,
		     c.ops.trampoline);
	call = find_one(tramp, to_ret(tramp, c.ops.trampoline_size), pat, sizeof(pat), mask);
	if (!call)
		FAIL(5, "no single callback load in the trampoline\n");
	word = rip_target(call, 3, 7);
	ret = in_data_page(word, "the trampoline's callback", 6);
	if (ret)
		return ret;
	func = __atomic_load_n((unsigned long *)word, __ATOMIC_ACQUIRE);
	if (!func)
		FAIL(8, "the callback word holds 0\n");
	lw_ops(1);
	if (tc_count(&c) != 1)
		FAIL(9, "%ld calls counted, not 1\n", tc_count(&c));
	if (unregister_ftrace_function(&c.ops))
		FAIL(10, "unregister failed\n");
	if (__atomic_load_n((unsigned long *)word, __ATOMIC_ACQUIRE) == func)
		FAIL(11, "unregister left the callback word pointing at the callback\n");
	/* a static ops keeps its trampoline: re-registration re-points the word */
	if (register_ftrace_function(&c.ops))
		FAIL(12, "re-registration failed\n");
	if (tc_branch_target((const void *)lw_ops, 0xe8) != tramp)
		FAIL(13, "re-registration moved the trampoline\n");
	if (__atomic_load_n((unsigned long *)word, __ATOMIC_ACQUIRE) != func)
		FAIL(14, "re-registration did not point the word at the callback again\n");
	lw_ops(2);
	if (tc_count(&c) != 2)
		FAIL(15, "%ld calls counted, not 2\n", tc_count(&c));
	if (unregister_ftrace_function(&c.ops))
		FAIL(16, "second unregister failed\n");
	if (!tc_is_nop5((const void *)lw_ops))
		FAIL(17, "the NOP is not back\n");
	return 0;
}

static notrace int child_ops(void) { return ops_case(0, 0); }
static notrace int child_ops_procmem(void) { return ops_case(1, 0); }
static notrace int child_ops_xmm(void) { return ops_case(0, 1); }

/* ---- graph jmp stub ------------------------------------------------- */

static long graph_entries;

static notrace int lw_entry(struct ftrace_graph_ent *trace, struct fgraph_ops *gops,
			    struct ftrace_regs *fregs)
{
	(void)trace;
	(void)gops;
	(void)fregs;
	__atomic_add_fetch(&graph_entries, 1, __ATOMIC_RELAXED);
	return 1;
}

static notrace int child_graph(void)
{
	static struct fgraph_ops g = { .entryfunc = lw_entry };
	/* leaq disp32(%rip), %r11 */
	static const unsigned char pat[3] = { 0x4c, 0x8d, 0x1d };
	static const unsigned char mask[3] = { 0xff, 0xff, 0xff };
	const unsigned char *lea;
	unsigned long stub, data;
	int ret;

	if (usft_set_option("text_write", "procmem"))
		FAIL(2, "text_write=procmem refused\n");
	if (tc_set_filter(&g.ops, "lw_graph", 1) || register_ftrace_graph(&g))
		FAIL(3, "registering the graph ops failed\n");
	stub = tc_branch_target((const void *)lw_graph, 0xe9);
	if (!stub)
		FAIL(4, "the site does not jump to a graph stub\n");
	if (memcmp((const void *)stub, "\x4c\x8b\x1d", 3))
		FAIL(5, "the stub does not start with its data load\n");
	ret = in_data_page(rip_target((const unsigned char *)stub, 3, 7), "the stub's first", 6);
	if (ret)
		return ret;
	lea = find_one(stub, 32, pat, sizeof(pat), mask);
	if (!lea)
		FAIL(8, "no single data lea in the stub\n");
	data = rip_target(lea, 3, 7);
	ret = in_data_page(data, "the stub's data", 9);
	if (ret)
		return ret;
	/* the words: tpoff, regfn, caller, ip, ops, func (fgraph_entry.S) */
	if (((unsigned long *)data)[3] != (unsigned long)lw_graph ||
	    ((unsigned long *)data)[4] != (unsigned long)&g.ops)
		FAIL(11, "the data words are not the stub's (ip %#lx, ops %#lx)\n",
		     ((unsigned long *)data)[3], ((unsigned long *)data)[4]);
	lw_graph(1);
	if (__atomic_load_n(&graph_entries, __ATOMIC_RELAXED) != 1)
		FAIL(12, "%ld entries, not 1\n", graph_entries);
	unregister_ftrace_graph(&g);
	if (!tc_is_nop5((const void *)lw_graph))
		FAIL(13, "the NOP is not back\n");
	return 0;
}

/* ---- BPF-like image --------------------------------------------------- */

static long bpf_hits;

static notrace unsigned long lw_prog(const unsigned long *ctx, void *cookie)
{
	(void)ctx;
	__atomic_add_fetch((long *)cookie, 1, __ATOMIC_RELAXED);
	return 0;
}

static notrace int child_bpf(void)
{
	/* lea ctx(%rbp), %rdi ; mov cookie(%rip), %rsi ; mov prog(%rip), %r11 ; call *%r11 */
	static const unsigned char pat[24] = { 0x48, 0x8d, 0xbd, 0, 0, 0, 0, 0x48, 0x8b, 0x35,
					       0, 0, 0, 0, 0x4c, 0x8b, 0x1d, 0, 0, 0, 0,
					       0x41, 0xff, 0xd3 };
	static const unsigned char mask[24] = { 0xff, 0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff,
						0, 0, 0, 0, 0xff, 0xff, 0xff, 0, 0, 0, 0,
						0xff, 0xff, 0xff };
	struct usft_tramp_opts o = { .sz = sizeof(o), .nr_args = 1 };
	struct usft_tramp_link *l;
	const unsigned char *seq;
	unsigned long image, cookie_w, prog_w;
	int ret;

	if (usft_set_option("text_write", "procmem"))
		FAIL(2, "text_write=procmem refused\n");
	l = usft_tramp_attach((void *)lw_bpf, USFT_TRAMP_FENTRY, lw_prog, &bpf_hits, &o);
	if (!l)
		FAIL(3, "usft_tramp_attach: %s\n", strerror(errno));
	image = tc_branch_target((const void *)lw_bpf, 0xe8);
	if (!image)
		FAIL(4, "the site does not call an image\n");
	seq = find_one(image, 4096, pat, sizeof(pat), mask);
	if (!seq)
		FAIL(5, "no single callback sequence in the image\n");
	cookie_w = rip_target(seq + 7, 3, 7);
	prog_w = rip_target(seq + 14, 3, 7);
	ret = in_data_page(cookie_w, "the image's cookie", 6);
	if (!ret)
		ret = in_data_page(prog_w, "the image's callback", 8);
	if (ret)
		return ret;
	if (*(unsigned long *)cookie_w != (unsigned long)&bpf_hits ||
	    *(unsigned long *)prog_w != (unsigned long)lw_prog)
		FAIL(10, "the words hold %#lx / %#lx, not the cookie / callback\n",
		     *(unsigned long *)cookie_w, *(unsigned long *)prog_w);
	lw_bpf(1);
	if (__atomic_load_n(&bpf_hits, __ATOMIC_RELAXED) != 1)
		FAIL(11, "%ld callback runs, not 1\n", bpf_hits);
	if (usft_tramp_detach(l))
		FAIL(12, "usft_tramp_detach failed\n");
	if (!tc_is_nop5((const void *)lw_bpf))
		FAIL(13, "the NOP is not back\n");
	lw_bpf(2);
	if (__atomic_load_n(&bpf_hits, __ATOMIC_RELAXED) != 1)
		FAIL(14, "the callback ran after the detach\n");
	return 0;
}

Test(live_words, ops_trampoline_callback_in_data_twin) { cr_expect_eq(tc_run_child(child_ops), 0); }
Test(live_words, ops_trampoline_callback_in_data_twin_procmem)
{
	cr_expect_eq(tc_run_child(child_ops_procmem), 0);
}
Test(live_words, ops_trampoline_with_xmm_saves_callback_in_data_twin)
{
	cr_expect_eq(tc_run_child(child_ops_xmm), 0);
}
Test(live_words, graph_stub_words_in_data_twin) { cr_expect_eq(tc_run_child(child_graph), 0); }
Test(live_words, bpf_image_words_in_data_twin) { cr_expect_eq(tc_run_child(child_bpf), 0); }
