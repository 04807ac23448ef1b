// SPDX-License-Identifier: MIT
/*
 * arch/x86_64/early_nops.c - gcc's 1-byte NOPs converted while the process
 * has one thread.
 *
 * gcc (12) emits -fpatchable-function-entry=5 as five 1-byte "nop"s, which
 * usft turns into one 5-byte nop before a site is ever enabled.  Once other
 * threads run, that conversion needs a first byte no thread can trip on
 * (x86_poke_flush(): "test $imm32, %eax", no trap) and the rendezvous (a
 * thread already past it, inside the run, must be moved to its end: the
 * 5-byte nop's bytes 1..4 decode as garbage from there).  The rendezvous
 * does not reach a thread that blocks its signal.  No store sequence
 * helps: any thread stopped inside a run is only safe as long as bytes
 * 1..4 stay 0x90.
 *
 * So libusft converts every loaded object's runs in a constructor, before
 * the program's own constructors and main() run, when the process has one
 * thread: with every signal blocked on it, no code but this runs, and the
 * bytes are written with plain stores through an mprotect() window that is
 * closed again before the constructor returns.  Objects loaded later, or a
 * process that already had threads (a library dlopen'ed late, `usft
 * attach`), are converted at pick-up that way; while a thread blocks the
 * rendezvous signal such a conversion is not done and the calls that would
 * patch return -EBUSY naming it (x86_poke_flush()); so do they when the
 * rendezvous cannot move a thread out of a run (one a debugger holds
 * there): the first bytes are put back (poke_flush_relocate()).
 *
 * The section table is read with pread() from each object's file (the
 * object's own bytes are hostile input too: every offset and size is
 * checked); the site table itself is read from memory, where the dynamic
 * loader relocated it.  Option early_nops=0 in USFT_OPTIONS turns this off.
 */
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "compat/prefault.h"
#include "core/internal.h"
#include "core/arch.h"
#include "insn.h"

#define EARLY_MAX_SHNUM		65536
#define EARLY_MAX_SHSTR		(1UL << 22)

static const unsigned char gcc_nops[5] = { 0x90, 0x90, 0x90, 0x90, 0x90 };

static bool early_read(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, off + (off_t)done);

		if (n <= 0)
			return false;
		done += (size_t)n;
	}
	return true;
}

/* is [@a, @a + @len) inside one PT_LOAD of @info with @flag (PF_R or PF_X)? */
static const ElfW(Phdr) *early_seg(const struct dl_phdr_info *info, unsigned long a,
				   unsigned long len, unsigned int flag)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		unsigned long lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & flag) && a >= lo &&
		    a + len >= a && a + len <= lo + ph->p_memsz)
			return ph;
	}
	return NULL;
}

static int seg_prot(const ElfW(Phdr) *ph)
{
	return ((ph->p_flags & PF_R) ? PROT_READ : 0) | ((ph->p_flags & PF_W) ? PROT_WRITE : 0) |
	       ((ph->p_flags & PF_X) ? PROT_EXEC : 0);
}

/*
 * Convert the runs of one table [@tab, @tab + @n) of @info.  The window is
 * the whole executable segment of the first run, opened once: pages are
 * only copied (made private) where a run is written.
 */
/* a site of table entry @e in segment @ph that early_convert_table() writes */
static bool early_site(const struct dl_phdr_info *info, const ElfW(Phdr) *ph, unsigned long e,
		       unsigned long *ip)
{
	*ip = ftrace_call_adjust(e);
	return e && early_seg(info, *ip, MCOUNT_INSN_SIZE, PF_X) == ph &&
	       !memcmp((const void *)*ip, gcc_nops, sizeof(gcc_nops));
}

/*
 * The pages from @tab[@i]'s on that the next sites of segment @ph write,
 * while they follow each other page after page: their copy-on-write
 * faults in one call (usft_prefault_write()).  Return: the end of them.
 */
static unsigned long early_prefault(const struct dl_phdr_info *info, const ElfW(Phdr) *ph,
				    const unsigned long *tab, unsigned long i, unsigned long n,
				    unsigned long pg)
{
	unsigned long ip, first = ftrace_call_adjust(tab[i]) & ~(pg - 1), end = first;

	for (; i < n; i++) {
		if (!early_site(info, ph, tab[i], &ip))
			continue;
		if (ip < first || (ip & ~(pg - 1)) > end)
			break;	/* a gap, or out of order: the next run */
		end = (ip + MCOUNT_INSN_SIZE - 1 + pg) & ~(pg - 1);
	}
	usft_prefault_write((void *)first, end - first);
	return end;
}

static unsigned long early_convert_table(const struct dl_phdr_info *info,
					 const unsigned long *tab, unsigned long n)
{
	unsigned long pg = (unsigned long)sysconf(_SC_PAGESIZE), done = 0;
	const ElfW(Phdr) *open = NULL;
	unsigned long lo = 0, len = 0, faulted_lo = 0, faulted_hi = 0;

	for (unsigned long i = 0; i < n; i++) {
		unsigned long ip = ftrace_call_adjust(tab[i]);
		const ElfW(Phdr) *ph;

		if (!tab[i] || !(ph = early_seg(info, ip, MCOUNT_INSN_SIZE, PF_X)))
			continue;
		if (memcmp((const void *)ip, gcc_nops, sizeof(gcc_nops)))
			continue;
		if (ph != open) {
			if (open && mprotect((void *)lo, len, seg_prot(open)))
				return done | (1UL << 63);
			lo = (info->dlpi_addr + ph->p_vaddr) & ~(pg - 1);
			len = ((info->dlpi_addr + ph->p_vaddr + ph->p_memsz + pg - 1) & ~(pg - 1)) - lo;
			open = NULL;
			if (mprotect((void *)lo, len, seg_prot(ph) | PROT_WRITE | PROT_EXEC))
				return done;	/* a W^X policy: left for the runtime */
			open = ph;
			faulted_lo = faulted_hi = 0;
		}
		if (ip < faulted_lo || ip + MCOUNT_INSN_SIZE > faulted_hi) {
			faulted_lo = ip & ~(pg - 1);
			faulted_hi = early_prefault(info, ph, tab, i, n, pg);
		}
		memcpy((void *)ip, X86_NOP5, MCOUNT_INSN_SIZE);
		done++;
	}
	/* a window left writable and executable is what usft never leaves */
	for (int tries = 0; open && tries < 5; tries++)
		if (!mprotect((void *)lo, len, seg_prot(open)))
			open = NULL;
	return done | (open ? 1UL << 63 : 0);
}

struct early_scan {
	unsigned long sites;
	int nr;
	bool failed;
};

static int early_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct early_scan *scan = arg;
	const char *path = info->dlpi_name;
	ElfW(Shdr) *sh = NULL;
	char *shstr = NULL;
	ElfW(Ehdr) eh;
	unsigned long shnum;
	struct stat st;
	int fd;

	(void)size;
	if (!path || !path[0])
		path = scan->nr ? NULL : "/proc/self/exe";
	scan->nr++;
	if (!path)
		return 0;	/* the vDSO: no file, no sites */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !early_read(fd, &eh, sizeof(eh), 0) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(ElfW(Shdr)) || !eh.e_shoff ||
	    eh.e_shoff >= (unsigned long)st.st_size)
		goto out;
	/* the file must still be what is mapped: its program headers, byte for byte */
	if (eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum != info->dlpi_phnum ||
	    !eh.e_phnum || eh.e_phnum > 256)
		goto out;
	{
		ElfW(Phdr) ph[256];

		if (!early_read(fd, ph, eh.e_phnum * sizeof(*ph), (off_t)eh.e_phoff) ||
		    memcmp(ph, info->dlpi_phdr, eh.e_phnum * sizeof(*ph)))
			goto out;
	}
	shnum = eh.e_shnum;
	if (!shnum) {	/* extended numbering: the count is in section 0 */
		ElfW(Shdr) s0;

		if (!early_read(fd, &s0, sizeof(s0), (off_t)eh.e_shoff))
			goto out;
		shnum = s0.sh_size;
	}
	if (!shnum || shnum > EARLY_MAX_SHNUM ||
	    shnum * sizeof(*sh) > (unsigned long)st.st_size - eh.e_shoff)
		goto out;
	sh = malloc(shnum * sizeof(*sh));
	if (!sh || !early_read(fd, sh, shnum * sizeof(*sh), (off_t)eh.e_shoff))
		goto out;
	{
		unsigned long si = eh.e_shstrndx == SHN_XINDEX ? sh[0].sh_link : eh.e_shstrndx;

		if (si >= shnum || !sh[si].sh_size || sh[si].sh_size > EARLY_MAX_SHSTR ||
		    sh[si].sh_offset > (unsigned long)st.st_size ||
		    sh[si].sh_size > (unsigned long)st.st_size - sh[si].sh_offset)
			goto out;
		shstr = malloc(sh[si].sh_size + 1);
		if (!shstr || !early_read(fd, shstr, sh[si].sh_size, (off_t)sh[si].sh_offset))
			goto out;
		shstr[sh[si].sh_size] = 0;
		for (unsigned long i = 1; i < shnum; i++) {
			unsigned long a = sh[i].sh_addr + (eh.e_type == ET_DYN ? info->dlpi_addr : 0);
			unsigned long r;

			if (sh[i].sh_name >= sh[si].sh_size ||
			    strcmp(shstr + sh[i].sh_name, "__patchable_function_entries") ||
			    !(sh[i].sh_flags & SHF_ALLOC) || sh[i].sh_type == SHT_NOBITS ||
			    sh[i].sh_size % sizeof(unsigned long) ||
			    !early_seg(info, a, sh[i].sh_size, PF_R))
				continue;
			r = early_convert_table(info, (const unsigned long *)a,
						sh[i].sh_size / sizeof(unsigned long));
			scan->sites += r & ~(1UL << 63);
			scan->failed |= r >> 63;
		}
	}
out:
	free(shstr);
	free(sh);
	close(fd);
	return 0;
}

static bool single_threaded(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return false;	/* cannot tell: leave it to the runtime */
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n == 1;
}

/* "early_nops=0" anywhere in USFT_OPTIONS (the full parse comes at init) */
static bool early_wanted(void)
{
	const char *o = secure_getenv("USFT_OPTIONS");

	for (const char *p = o; p && (p = strstr(p, "early_nops")); p++)
		if ((p == o || p[-1] == ',') && p[10] == '=')
			return strncmp(p + 11, "0", 1) != 0;
	return true;
}

__attribute__((constructor)) static void x86_early_nops(void)
{
	struct early_scan scan = { 0 };
	uint64_t all = ~0ULL, old;

	if (!early_wanted() || !single_threaded())
		return;
	/* raw: libusft's own pthread_sigmask() interposer is not set up yet */
	if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof(all)))
		return;
	dl_iterate_phdr(early_object, &scan);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(old));
	usft_counters.nr_early_nops = scan.sites;
	if (scan.failed)
		pr_err("usft: cannot restore the protection of text after converting gcc's "
		       "NOPs at start-up\n");
}

/* at init (and it keeps this file linked into libusft.a users) */
void x86_early_nops_report(void)
{
	if (usft_counters.nr_early_nops)
		pr_debug("usft: %lu runs of gcc's 1-byte NOPs were converted at start-up\n",
			 usft_counters.nr_early_nops);
}
