/* jmp.c - lab 4: an fexit trampoline attached in call mode and in jmp mode. */
#include <stdio.h>
#include <usft/ftrace.h>
#include <usft/trampoline.h>
#include <usft/usft.h>

static unsigned long calls, last_ret;

/* ctx[0] is the argument; for fexit ctx[1] is the return value */
static notrace unsigned long prog(const unsigned long *ctx, void *cookie)
{
	calls++;
	last_ret = ctx[1];
	return 0;
}

__attribute__((noipa)) long target(long x)
{
	return x + 1;
}

static const char *const mode_name[] = { "auto", "call", "jmp" };

static notrace void try(enum usft_tramp_kind kind, const char *name, int mode)
{
	struct usft_tramp_opts opts = { .sz = sizeof(opts), .nr_args = -1, .mode = mode };
	struct usft_tramp_link *link;
	unsigned char b[5];

	calls = 0;
	link = usft_tramp_attach(target, kind, prog, NULL, &opts);
	if (!link) {
		perror("usft_tramp_attach");
		return;
	}
	usft_site_bytes((unsigned long)target, b, 1);
	for (long i = 0; i < 1000; i++)
		target(i);
	printf("%-6s asked %-4s: the site starts with %02x (%s), %lu callbacks",
	       name, mode_name[mode], b[0],
	       b[0] == 0xe9 ? "jmp" : b[0] == 0xe8 ? "call" : "?", calls);
	if (kind == USFT_TRAMP_FEXIT)
		printf(", last return value %lu", last_ret);
	printf("\n");
	usft_tramp_detach(link);
}

int main(void)
{
	try(USFT_TRAMP_FEXIT, "fexit", USFT_TRAMP_MODE_CALL);
	try(USFT_TRAMP_FEXIT, "fexit", USFT_TRAMP_MODE_JMP);
	try(USFT_TRAMP_FENTRY, "fentry", USFT_TRAMP_MODE_JMP);
	try(USFT_TRAMP_FEXIT, "fexit", USFT_TRAMP_MODE_AUTO);
	return 0;
}
