// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_demangle.c - usft_demangle() (core/filter.c): C++ names
 * through the process's __cxa_demangle, the parameter list and a
 * template's return type left out in the simple form; names that are not
 * C++ (or not valid) give NULL.  Linked with libstdc++ so dlsym finds the
 * demangler, as in a C++ program.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/internal.h"

struct dcase {
	const char *mangled, *simple, *full;
};

static const struct dcase cases[] = {
	{ "_ZNK3geo5Shape4areaEv", "geo::Shape::area", "geo::Shape::area() const" },
	{ "_ZN3geo5Shape5scaleEii", "geo::Shape::scale", "geo::Shape::scale(int, int)" },
	{ "_ZNK3geo5ShapeeqERKS0_", "geo::Shape::operator==",
	  "geo::Shape::operator==(geo::Shape const&) const" },
	{ "_ZN3geo5twiceIiEET_S1_", "geo::twice<int>", "int geo::twice<int>(int)" },
	{ "_ZN12_GLOBAL__N_16hiddenEi", "(anonymous namespace)::hidden",
	  "(anonymous namespace)::hidden(int)" },
	{ "_ZZ4mainENKUliE_clEi", "main::{lambda(int)#1}::operator()",
	  "main::{lambda(int)#1}::operator()(int) const" },
	{ "_ZN1AclEv", "A::operator()", "A::operator()()" },
	{ "_ZN1AltERKS_", "A::operator<", "A::operator<(A const&)" },
	{ "_ZN1AlsEi", "A::operator<<", "A::operator<<(int)" },
	{ "_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back",
	  "std::vector<int, std::allocator<int> >::push_back(int const&)" },
	{ "_Z1fv", "f", "f()" },
};

Test(demangle, simple_and_full)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = usft_demangle(cases[i].mangled, false);
		char *f = usft_demangle(cases[i].mangled, true);

		cr_assert(s && f, "%s: not demangled", cases[i].mangled);
		cr_expect_str_eq(s, cases[i].simple, "%s simple", cases[i].mangled);
		cr_expect_str_eq(f, cases[i].full, "%s full", cases[i].mangled);
		free(s);
		free(f);
	}
}

Test(demangle, not_cxx)
{
	static const char *const names[] = { "main", "leaf", "_Z", "_Zx!!", "_start", "Z1fv", "" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		cr_expect_null(usft_demangle(names[i], false), "%s", names[i]);
	cr_expect_null(usft_demangle(NULL, true));
}
