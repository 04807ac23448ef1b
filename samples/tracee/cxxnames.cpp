// SPDX-License-Identifier: MIT
/*
 * C++ names for the demangling tests: a namespace, a class with an
 * overloaded method, a const method, an operator, a function template
 * instantiated twice, a lambda and a function in an anonymous namespace.
 * `usft report` shows them demangled (the parameter lists left out unless
 * --demangle full); `-l 'geo::*'` selects by the demangled names.  It
 * uses std::string so that libstdc++ (whose __cxa_demangle the runtime
 * finds) is loaded, as in any real C++ program.
 */
#include <cstdio>
#include <string>
#include "tracee.h"

namespace geo {

struct Shape {
	int w, h;
	TRACEE int area() const;
	TRACEE int scale(int k);
	TRACEE int scale(int k, int j);
	TRACEE bool operator==(const Shape &o) const;
};

int Shape::area() const
{
	KEEP();
	return w * h;
}

int Shape::scale(int k)
{
	w *= k;
	KEEP();
	return area();
}

int Shape::scale(int k, int j)
{
	h *= j;
	KEEP();
	return scale(k);
}

bool Shape::operator==(const Shape &o) const
{
	KEEP();
	return area() == o.area();
}

template <typename T> TRACEE T twice(T x)
{
	KEEP();
	return x + x;
}

} // namespace geo

namespace {
TRACEE int hidden(int x)
{
	KEEP();
	return geo::twice(x) + 1;
}
} // namespace

int main()
{
	geo::Shape a{ 2, 3 }, b{ 3, 2 };
	auto add = [](int x) __attribute__((noinline)) { return geo::twice<long>(x) + 1; };

	std::printf("scale = %d\n", a.scale(2, 3));
	std::printf("equal = %d\n", a == b);
	std::printf("twice = %.1f\n", geo::twice(1.5));
	std::printf("hidden = %d, lambda = %ld\n", hidden(4), add(5));
	std::string s = "names";
	std::printf("%s\n", (s + " done").c_str());
	return 0;
}
