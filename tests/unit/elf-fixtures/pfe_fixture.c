// SPDX-License-Identifier: MIT
/*
 * tests/unit/elf-fixtures/pfe_fixture.c - built with
 * -fpatchable-function-entry=5 as elf_fixture_pfe; test_elf reads the
 * executable.  It defines exactly ELF_FIXTURE_NR_FUNCS (4) functions, all
 * kept out of line, so its __patchable_function_entries holds 4 entries.
 * Keep test_elf.c in sync when adding one.
 */
static __attribute__((noinline, used)) int fixture_local(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline, used)) int fixture_global_a(int x)
{
	return fixture_local(x) + 2;
}

__attribute__((noinline, used)) int fixture_global_b(int x)
{
	return fixture_global_a(x) ^ 5;
}

int main(int argc, char **argv)
{
	(void)argv;
	return fixture_global_b(argc) == 0;
}
