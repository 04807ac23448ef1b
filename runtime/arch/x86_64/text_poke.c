// SPDX-License-Identifier: MIT
/*
 * arch/x86_64/text_poke.c - cross-modifying a running program's text with
 * the kernel's INT3 protocol (smp_text_poke_batch_add/finish):
 *
 *   1. write INT3 over the first byte of every queued site;   sync
 *   2. write bytes 1..len-1;                                   sync
 *   3. write the new first byte;                               sync
 *
 * "sync" is membarrier(PRIVATE_EXPEDITED_SYNC_CORE): every thread passes a
 * serialising instruction.  A thread that hits an INT3 meanwhile gets
 * SIGTRAP; the handler finds the site in the batch and emulates the
 * instruction being installed (call: push the return address and jump; jmp;
 * NOP: skip), or, if the INT3 is already gone, re-executes the final bytes.
 * Traps that are not ours go to the handler that was installed before.
 * gcc's 1-byte NOPs are converted without a trap, with a rendezvous that
 * moves the threads stopped inside a run past it (poke_flush_relocate()).
 */
#include <signal.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <ucontext.h>
#include "core/internal.h"
#include "core/text.h"
#include "mem/execmem.h"
#include "insn.h"
#include "core/arch.h"

struct poke_entry {
	unsigned long addr;
	unsigned char newb[8];
	unsigned char old0;	/* byte 0 before the batch (poke_flush_relocate()) */
	int len;
	bool relocate;
};

static struct poke_entry *poke_vec;
static size_t poke_nr, poke_cap;
static int poke_active;		/* the SIGTRAP handler may read poke_vec */
static unsigned long poke_gen;	/* bumped when a batch starts and when it ends */
static int poke_refs;		/* handlers currently reading poke_vec */
static struct sigaction old_trap;

bool x86_encode_branch(unsigned char *buf, unsigned long ip, unsigned long target, bool jmp)
{
	int rel;

	if (!x86_rel32_ok(ip, target))
		return false;
	rel = (int)(long)(target - (ip + 5));
	buf[0] = jmp ? JMP32_INSN_OPCODE : CALL_INSN_OPCODE;
	memcpy(buf + 1, &rel, 4);
	return true;
}

static int poke_cmp(const void *k, const void *e)
{
	unsigned long a = *(const unsigned long *)k;
	const struct poke_entry *p = e;

	return a < p->addr ? -1 : a > p->addr;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct poke_entry *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void emulate(const struct poke_entry *e, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	int rel;

	switch (e->newb[0]) {
	case CALL_INSN_OPCODE:
		memcpy(&rel, e->newb + 1, 4);
		g[REG_RSP] -= 8;
		*(unsigned long *)g[REG_RSP] = e->addr + 5;
		g[REG_RIP] = (greg_t)(e->addr + 5 + (long)rel);
		break;
	case JMP32_INSN_OPCODE:
		memcpy(&rel, e->newb + 1, 4);
		g[REG_RIP] = (greg_t)(e->addr + 5 + (long)rel);
		break;
	default:	/* a NOP */
		g[REG_RIP] = (greg_t)(e->addr + e->len);
		break;
	}
}

static void usft_sigtrap(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	unsigned long ip = (unsigned long)uc->uc_mcontext.gregs[REG_RIP] - 1;
	int saved = errno;

	if (si->si_code == SI_KERNEL) {
		/*
		 * The trap may be handled after its batch ended and even after
		 * the next batch wrote a new INT3 at the same site: retry while
		 * batches come and go; only an INT3 seen with no batch starting
		 * or ending around the look is foreign.
		 */
		for (int tries = 0; tries < 1000; tries++) {
			unsigned long g0 = __atomic_load_n(&poke_gen, __ATOMIC_SEQ_CST);
			const struct poke_entry *e = NULL;

			__atomic_add_fetch(&poke_refs, 1, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&poke_active, __ATOMIC_SEQ_CST))
				e = bsearch(&ip, poke_vec, poke_nr, sizeof(*poke_vec), poke_cmp);
			if (e)
				emulate(e, uc);
			__atomic_sub_fetch(&poke_refs, 1, __ATOMIC_SEQ_CST);
			if (e) {
				usft_count(nr_int3_hits);
				goto out;
			}
			/* our INT3 was already replaced: run the final instruction */
			if (*(volatile unsigned char *)ip != INT3_INSN_OPCODE) {
				uc->uc_mcontext.gregs[REG_RIP] = (greg_t)ip;
				usft_count(nr_int3_hits);
				goto out;
			}
			if (__atomic_load_n(&poke_gen, __ATOMIC_SEQ_CST) == g0 &&
			    !(g0 & 1))
				break;	/* no batch in flight: not ours */
		}
	}
	if (!(old_trap.sa_flags & SA_SIGINFO) && old_trap.sa_handler == SIG_IGN)
		goto out;
	if (usft_run_handler(&old_trap, sig, si, ctx))
		goto out;
	/* default action: die with SIGTRAP as the program would have */
	{
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		usft_real_sigaction(SIGTRAP, &dfl, NULL);
		raise(SIGTRAP);
	}
out:
	errno = saved;
}

static int install_trap_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = usft_sigtrap;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	/*
	 * stays installed: what the program installs later is chained to; and
	 * before every batch the kernel's disposition is read back, so one
	 * replaced behind the interposer is noticed and reinstalled
	 */
	return usft_claim_signal(SIGTRAP, &sa, &old_trap);
}

void x86_poke_init(void)
{
	install_trap_handler();
}

/*
 * A batch is over and no handler reads the vector (poke_active is clear and
 * poke_refs was seen zero, or the batch never set it): a big one goes back,
 * 24 bytes a site the records would otherwise keep after start-up.
 */
static void poke_trim(void)
{
	poke_nr = 0;
	if (poke_cap > 256) {
		free(poke_vec);
		poke_vec = NULL;
		poke_cap = 0;
	}
}

int x86_poke_queue(unsigned long addr, const unsigned char *newb, int len, bool relocate)
{
	struct poke_entry *e;

	if (poke_nr == poke_cap) {
		size_t cap = poke_cap ? poke_cap * 2 : 256;
		struct poke_entry *n;

		/* never realloc under a live handler: the vector is idle here */
		n = realloc(poke_vec, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		poke_vec = n;
		poke_cap = cap;
	}
	e = &poke_vec[poke_nr++];
	e->addr = addr;
	memcpy(e->newb, newb, len);
	e->len = len;
	e->relocate = relocate;
	return 0;
}

static __no_tsan void relocate_thread(ucontext_t *uc, void *arg)
{
	unsigned long ip = (unsigned long)uc->uc_mcontext.gregs[REG_RIP];
	const struct poke_entry *e = NULL;
	size_t lo = 0, hi = poke_nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (poke_vec[mid].addr < ip) {
			e = &poke_vec[mid];
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	if (e && e->relocate && ip > e->addr && ip < e->addr + e->len)
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(e->addr + e->len);
}

/* a sleeping thread at @pc needs no relocation (it waits in the kernel) */
static bool not_in_a_site(unsigned long pc)
{
	for (size_t i = 0; i < poke_nr; i++)
		if (pc > poke_vec[i].addr && pc < poke_vec[i].addr + poke_vec[i].len)
			return false;
	return true;
}

/*
 * One site written with a single locked compare-and-exchange of the aligned
 * 8 or 16 bytes that hold it: a thread fetching the site sees the old or
 * the new instruction whole (one cache line, one store), so no INT3 and no
 * SIGTRAP is needed.  Return: 0, -EINVAL (the bytes changed under us) or
 * -E2BIG (the site is not inside one aligned 16-byte block).
 */
static __no_tsan int poke_atomic(const struct poke_entry *e)
{
	unsigned long a8 = e->addr & ~7UL, a16 = e->addr & ~15UL;

	if (e->addr + e->len <= a8 + 8) {
		uint64_t old = __atomic_load_n((uint64_t *)a8, __ATOMIC_RELAXED), new = old;

		memcpy((char *)&new + (e->addr - a8), e->newb, e->len);
		return __atomic_compare_exchange_n((uint64_t *)a8, &old, new, false,
						   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) ? 0 : -EINVAL;
	}
	if (e->addr + e->len <= a16 + 16) {
		uint64_t lo, hi, nlo, nhi;
		unsigned char buf[16];
		bool ok;

		memcpy(buf, (void *)a16, 16);
		memcpy(&lo, buf, 8);
		memcpy(&hi, buf + 8, 8);
		memcpy(buf + (e->addr - a16), e->newb, e->len);
		memcpy(&nlo, buf, 8);
		memcpy(&nhi, buf + 8, 8);
		__asm__ volatile("lock cmpxchg16b %1"
				 : "=@ccz"(ok), "+m"(*(volatile unsigned __int128 *)a16),
				   "+a"(lo), "+d"(hi)
				 : "b"(nlo), "c"(nhi)
				 : "memory");
		return ok ? 0 : -EINVAL;
	}
	return -E2BIG;
}

/*
 * A thread that blocks SIGTRAP (all signals blocked, or inside a handler
 * whose sa_mask is full) would be killed by the kernel on an INT3 (a
 * blocked synchronous trap takes its default action).  While such a thread
 * exists the batch is written without traps: every site with one atomic
 * store (poke_atomic()), then one sync; nothing is written unless every
 * site can be.  gcc's 1-byte NOPs never come here: they are converted
 * without a trap whoever blocks what (poke_flush_relocate()).
 * Return: 0, 1 (use the INT3 protocol) or -errno (nothing written).
 */
/*
 * Open the text of the batch (poke_vec[], in address order): one
 * usft_text_open() per run of sites on adjacent pages, so its pages are
 * made writable in a few mprotect() calls.
 */
static int poke_open_all(void)
{
	unsigned long pg = (unsigned long)sysconf(_SC_PAGESIZE);
	size_t i, j;
	int ret = 0;

	for (i = 0; i < poke_nr && !ret; i = j) {
		unsigned long lo = poke_vec[i].addr, hi = lo + poke_vec[i].len;

		for (j = i + 1; j < poke_nr &&
				(poke_vec[j].addr & ~(pg - 1)) <= ((hi - 1) & ~(pg - 1)) + pg; j++)
			if (poke_vec[j].addr + poke_vec[j].len > hi)
				hi = poke_vec[j].addr + poke_vec[j].len;
		ret = usft_text_open(lo, hi - lo);
	}
	return ret;
}

/*
 * A site no single store can change (it crosses a 16-byte boundary), or
 * any site when text goes through /proc/self/mem, written without a trap:
 * the INT3 protocol with "test $imm32, %eax" (opcode 0xa9, 5 bytes: the
 * site's bytes 1..4 are its immediate, whatever they hold) in place of
 * the INT3:
 *   1. byte 0 becomes 0xa9 (one byte: one store);                 sync
 *   2. bytes 1..4 get their new value, in any pieces: a thread at
 *      the site decodes a test of some immediate;                 sync
 *   3. byte 0 gets its new value;                                 sync
 * A thread fetching across the boundary meanwhile sees byte 0 old or new
 * with bytes 1..4 old (pass 1), any (pass 2: byte 0 is 0xa9) or new (pass
 * 3): nop5, call, or a test that only sets flags, which are dead at a
 * function's entry (the psABI preserves none across a call).  So a thread
 * at the site during the batch skips it: the old behaviour of a NOP being
 * made a call, the new one of a call being made a NOP; a call changed into
 * another call is skipped for that moment (where the kernel's INT3
 * handler emulates the new one: docs/reliability.md).
 */
static const unsigned char test_eax = 0xa9;

static bool needs_test(const struct poke_entry *e)
{
	return usft_text_procmem() || e->addr + e->len > (e->addr & ~15UL) + 16;
}

/* one byte: compare-then-write of the byte (the rest was verified in pass 1) */
static __no_tsan int poke_byte0(const struct poke_entry *e, unsigned char old, unsigned char b)
{
	if (usft_text_procmem())
		return *(volatile unsigned char *)e->addr == old ?
		       usft_text_write(e->addr, &b, 1) : -EINVAL;
	return __atomic_compare_exchange_n((unsigned char *)e->addr, &old, b, false,
					   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) ? 0 : -EINVAL;
}

static bool not_in_a_site(unsigned long pc);

/*
 * ... With @awake, a blocker asleep in a system call does not count when
 * its pc is outside the batch's sites (@in_batch) or anywhere (!@in_batch).
 */
static int blocker_lasting(int signo, bool awake, bool in_batch, char *comm, size_t len)
{
	static int lasting;	/* waited for in vain once: not again */
	bool (*ok)(unsigned long) = in_batch ? not_in_a_site : NULL;
	int tid = usft_signal_blocker_awake(signo, ok, awake, comm, len);

	/*
	 * Up to 100 ms: a thread glibc creates or tears down blocks every
	 * signal meanwhile, and on a loaded machine (ASan, 2 CPUs busy) one
	 * preempted in its exit stayed so for over 20 ms.
	 */
	for (int tries = 0; tid > 0 && tid != lasting && tries < 100; tries++) {
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
		tid = usft_signal_blocker_awake(signo, ok, awake, comm, len);
	}
	if (tid > 0)
		lasting = tid;
	return tid > 0 ? tid : 0;
}

/*
 * gcc's 1-byte NOPs need the rendezvous (a thread inside a run is moved
 * past it, poke_flush_relocate()): a thread that blocks its signal cannot
 * be moved, and no store sequence is safe for a thread that may be inside
 * a run (arch/x86_64/early_nops.c).  Refuse before anything is written
 * while one is awake, or asleep at a pc inside a run; the object keeps
 * its NOPs until a later call finds no such thread
 * (ftrace_convert_pending_nops()).  Return: 0 or -EBUSY.
 */
static int poke_relocate_check(void)
{
	static int said;	/* the thread last named: not again each call */
	char comm[32];
	int tid;

	if (usft_nr_threads() <= 1)
		return 0;
	tid = blocker_lasting(usft_rv_signo(), true, true, comm, sizeof(comm));
	if (!tid)
		return 0;
	usft_log(tid == said ? USFT_LOG_DEBUG : USFT_LOG_ERR, "usft: thread %d (%s) blocks the rendezvous signal (option sync_signal), and gcc's "
	       "1-byte NOPs of a loaded object are still to be converted, which needs that signal "
	       "for a thread that may be inside one (it would resume inside a converted site): "
	       "nothing is converted and the calls that would patch return EBUSY until it "
	       "unblocks the signal. Unblock it in that thread, start tracing (or call "
	       "usft_init()) before the thread starts, or build with clang, whose 5-byte NOP "
	       "needs no conversion\n", tid, comm);
	said = tid;
	return -EBUSY;
}

static __no_tsan int poke_flush_without_traps(void)
{
	char comm[32];
	bool test = false;
	int tid, ret = 0;
	size_t i;

	tid = usft_signal_blocker(SIGTRAP, comm, sizeof(comm));
	if (tid <= 0)
		return 1;
	for (i = 0; i < poke_nr; i++)
		test |= needs_test(&poke_vec[i]);
	ret = poke_open_all();
	for (i = 0; i < poke_nr && !ret; i++) {
		USFT_TEXT_STEP();
		ret = needs_test(&poke_vec[i]) ?
		      poke_byte0(&poke_vec[i], *(volatile unsigned char *)poke_vec[i].addr, test_eax) :
		      poke_atomic(&poke_vec[i]);
	}
	usft_sync_core();
	if (test && !ret) {
		for (i = 0; i < poke_nr && !ret; i++)
			if (needs_test(&poke_vec[i])) {
				USFT_TEXT_STEP();
				ret = usft_text_write(poke_vec[i].addr + 1, poke_vec[i].newb + 1,
						      poke_vec[i].len - 1);
			}
		usft_sync_core();
		for (i = 0; i < poke_nr && !ret; i++)
			if (needs_test(&poke_vec[i])) {
				USFT_TEXT_STEP();
				ret = poke_byte0(&poke_vec[i], test_eax, poke_vec[i].newb[0]);
			}
		usft_sync_core();
	}
	usft_counters.nr_sites_written += i;
	usft_count(nr_notrap_batches);
	ret |= usft_text_close_all();
	return ret;
}

/*
 * Move every other thread that is inside a run of gcc's NOPs past it, with
 * the batch's first bytes already "test $imm32, %eax" (no thread enters a
 * run any more: poke_flush_relocate()).  A thread that did not answer
 * (stopped by a debugger, or not scheduled for the rendezvous's 2 s) or
 * that blocked the signal while running may be inside a run; its answer
 * cannot come late: the rendezvous is over, and it would resume inside the
 * 5-byte NOP.  Threads that blocked the signal are tried again, on
 * usft_stop_machine()'s schedule.  Return: the threads that may still be
 * inside a run (0: every one is moved or outside the sites).
 */
static int poke_relocate_all(void)
{
	unsigned long pcs[64];
	int missing = 0, unsafe = 0;

	/* 1, 2, 4 .. 32 ms apart: up to about 100 ms (a preempted thread exit) */
	for (int tries = 0; tries < 7; tries++) {
		int nb = 0;

		missing = usft_threads_scan(relocate_thread, NULL, not_in_a_site, pcs,
					    (int)(sizeof(pcs) / sizeof(pcs[0])), &nb);
		if (missing < 0)
			return 1;	/* no rendezvous signal: no thread was moved */
		unsafe = 0;
		/* sleepers' pcs were checked; a blocker is safe only asleep outside */
		for (int k = 0; k < nb; k++)
			if (!pcs[k] || !not_in_a_site(pcs[k]))
				unsafe++;
		if (missing || !unsafe)
			break;
		struct timespec ms = { 0, (1L << tries) * 1000000L };

		nanosleep(&ms, NULL);
	}
	return missing + unsafe;
}

/*
 * gcc's 1-byte NOPs (and the clang NOPs of the same objects): the three
 * steps of poke_flush_without_traps()'s "test $imm32, %eax" route, with
 * the rendezvous after the first.  No INT3: a thread that reaches a site
 * meanwhile skips it, which for a NOP becoming a NOP is what emulating
 * the new instruction would do, so a thread that blocks SIGTRAP (awake or
 * waking from a system call) is safe too.  A thread inside a run is moved
 * past it; when one cannot be (poke_relocate_all()) the first bytes go
 * back (bytes 1..len-1 were not written), every thread runs the old bytes
 * wherever it is, and the call returns -EBUSY: the object keeps its NOPs
 * for a later call (ftrace_convert_nops()).
 * Return: 0, -EBUSY, -EINVAL (bytes changed under us) or -EPERM.
 */
static __no_tsan int poke_flush_relocate(void)
{
	static bool said;
	size_t i, done = 0;
	int ret, left;

	ret = poke_open_all();
	for (i = 0; i < poke_nr && !ret; i++, done++) {
		USFT_TEXT_STEP();
		poke_vec[i].old0 = *(volatile unsigned char *)poke_vec[i].addr;
		ret = poke_byte0(&poke_vec[i], poke_vec[i].old0, test_eax);
	}
	usft_sync_core();
	left = !ret && usft_nr_threads() > 1 ? poke_relocate_all() : 0;
	if (ret || left) {
		/* back to the old first bytes: none of the rest was written */
		for (i = 0; i < done; i++) {
			USFT_TEXT_STEP();
			poke_byte0(&poke_vec[i], test_eax, poke_vec[i].old0);
		}
		usft_sync_core();
		usft_text_close_all();
		if (ret)
			return ret;
		usft_count(nr_nop_conversions_refused);
		usft_log(said ? USFT_LOG_DEBUG : USFT_LOG_ERR,
			 "usft: %d thread(s) could not be moved out of gcc's 1-byte NOPs being "
			 "converted (stopped by a debugger, not scheduled within 2 s, or blocking "
			 "the rendezvous signal while running): they may be inside one and would "
			 "resume inside a 5-byte NOP, so nothing is converted and the calls that "
			 "would patch return EBUSY until a later call can move every thread\n",
			 left);
		said = true;
		return -EBUSY;
	}
	for (i = 0; i < poke_nr && !ret; i++) {
		USFT_TEXT_STEP();
		ret = usft_text_write(poke_vec[i].addr + 1, poke_vec[i].newb + 1,
				      poke_vec[i].len - 1);
	}
	usft_sync_core();
	for (i = 0; i < poke_nr && !ret; i++) {
		USFT_TEXT_STEP();
		ret = poke_byte0(&poke_vec[i], test_eax, poke_vec[i].newb[0]);
	}
	usft_sync_core();
	usft_counters.nr_sites_written += i;
	ret |= usft_text_close_all();
	return ret ? (ret == -EINVAL ? ret : -EPERM) : 0;
}

__no_tsan int x86_poke_flush(void)
{
	bool relocate = false;
	size_t i;
	int ret = 0;

	if (!poke_nr)
		return 0;
	if (ftrace_disabled) {
		/* ftrace_bug() fired while the batch was built: write nothing */
		poke_nr = 0;
		return -ENODEV;
	}
	ret = install_trap_handler();
	if (ret) {
		/* no handler for the INT3s: writing them could kill the program */
		pr_err("usft: cannot install the SIGTRAP handler (%d); nothing written\n", ret);
		poke_nr = 0;
		return -EPERM;
	}
	/* batches are queued in record (address) order: sort only when not */
	for (i = 1; i < poke_nr && poke_vec[i - 1].addr < poke_vec[i].addr; i++)
		;
	if (i < poke_nr)
		qsort(poke_vec, poke_nr, sizeof(*poke_vec), entry_cmp);
	for (i = 0; i < poke_nr; i++)
		relocate |= poke_vec[i].relocate;
	if (relocate) {
		ret = poke_relocate_check();
		if (!ret)
			ret = poke_flush_relocate();
		poke_trim();
		return ret;
	}
	ret = poke_flush_without_traps();
	if (ret <= 0) {
		poke_trim();
		return ret;
	}
	ret = poke_open_all();
	if (ret) {
		usft_text_close_all();
		poke_nr = 0;
		return ret;
	}
	__atomic_add_fetch(&poke_gen, 1, __ATOMIC_SEQ_CST);	/* odd: in flight */
	__atomic_store_n(&poke_active, 1, __ATOMIC_SEQ_CST);

	/*
	 * A failed write (only possible through /proc/self/mem) leaves the
	 * batch half done: each pass still completes what it can, so every
	 * site holds an INT3 or whole bytes, and the caller's ftrace_bug()
	 * stops further writes.
	 */
	for (i = 0; i < poke_nr; i++) {
		static const unsigned char int3 = INT3_INSN_OPCODE;

		USFT_TEXT_STEP();
		ret |= usft_text_write(poke_vec[i].addr, &int3, 1);
	}
	usft_sync_core();
	for (i = 0; i < poke_nr; i++) {
		USFT_TEXT_STEP();
		ret |= usft_text_write(poke_vec[i].addr + 1, poke_vec[i].newb + 1,
				       poke_vec[i].len - 1);
	}
	usft_sync_core();
	for (i = 0; i < poke_nr; i++) {
		USFT_TEXT_STEP();
		ret |= usft_text_write(poke_vec[i].addr, poke_vec[i].newb, 1);
	}
	usft_sync_core();
	USFT_TEXT_STEP();

	__atomic_store_n(&poke_active, 0, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&poke_gen, 1, __ATOMIC_SEQ_CST);	/* even: done */
	while (__atomic_load_n(&poke_refs, __ATOMIC_SEQ_CST))
		;
	usft_counters.nr_sites_written += poke_nr;
	poke_trim();
	ret |= usft_text_close_all();
	return ret ? -EPERM : 0;
}

int x86_text_copy(unsigned long dst, const void *src, size_t len, bool sync)
{
	int ret = usft_text_open(dst, len);

	USFT_TEXT_STEP();
	if (!ret)
		ret = usft_text_write(dst, src, len);
	USFT_TEXT_STEP();
	ret |= usft_text_close_all();
	if (sync)
		usft_sync_core();
	return ret ? -EPERM : 0;
}

/*
 * Every batch can be written without killing a thread that blocks
 * SIGTRAP (poke_flush_without_traps(), on either text route), except a
 * conversion of gcc's NOPs, which says so itself (poke_relocate_check()).
 */
int ftrace_arch_text_check(void)
{
	return 0;
}

/* INT3 everywhere (arch/x86/mm/init.c: execmem_fill_trapping_insns()) */
void execmem_fill_trapping_insns(void *ptr, size_t size)
{
	memset(ptr, 0xcc, size);
}
