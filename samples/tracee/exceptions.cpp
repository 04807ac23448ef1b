// SPDX-License-Identifier: MIT
/*
 * C++ exceptions thrown through traced frames: a throw unwinding several
 * traced frames (one with a destructor that calls a traced function), a
 * rethrow, a nested throw/catch inside a destructor during unwinding, and
 * backtrace() from a traced frame (it must see real return addresses).
 */
#include <cstdio>
#include <execinfo.h>
#include <stdexcept>

#if defined(__clang__)
#define TRACEE __attribute__((noinline, used))
#else
#define TRACEE __attribute__((noinline, noipa, used))
#endif
#define KEEP() __asm__ __volatile__("" ::: "memory")

extern "C" {
TRACEE int t_note(int x);
TRACEE void t_thrower(int x);
TRACEE void t_guarded(int x);
TRACEE int t_catcher(int x);
TRACEE int t_rethrower(int x);
TRACEE int t_nested_in_dtor(int x);
TRACEE int t_backtrace_depth(int n);
TRACEE int t_after(int x);
}

static int notes;

int t_note(int x)
{
	notes += x;
	KEEP();
	return x;
}

struct Guard {
	int v;
	explicit Guard(int x) : v(x) {}
	~Guard() { t_note(v); }
};

void t_thrower(int x)
{
	KEEP();
	throw std::runtime_error(x > 1 ? "big" : "small");
}

void t_guarded(int x)
{
	Guard g(x);

	t_thrower(x);
	KEEP();
}

int t_catcher(int x)
{
	try {
		t_guarded(x);
	} catch (const std::exception &e) {
		std::printf("caught %s\n", e.what());
		return t_note(1);
	}
	return 0;
}

int t_rethrower(int x)
{
	try {
		try {
			t_guarded(x);
		} catch (...) {
			t_note(10);
			throw;
		}
	} catch (const std::runtime_error &e) {
		std::printf("rethrown %s\n", e.what());
	}
	return t_note(2);
}

struct Thrower {
	~Thrower()
	{
		try {
			t_thrower(0);
		} catch (const std::exception &e) {
			std::printf("inner caught %s\n", e.what());
		}
	}
};

int t_nested_in_dtor(int x)
{
	try {
		Thrower t;

		t_guarded(x);
	} catch (const std::exception &e) {
		std::printf("outer caught %s\n", e.what());
	}
	return t_note(3);
}

int t_backtrace_depth(int n)
{
	void *buf[64];

	if (n > 0) {
		int r = t_backtrace_depth(n - 1);

		KEEP();
		return r;
	}
	return backtrace(buf, 64);
}

int t_after(int x)
{
	KEEP();
	return x + 1;
}

int main()
{
	std::printf("catcher -> %d\n", t_catcher(2));
	std::printf("rethrower -> %d\n", t_rethrower(1));
	std::printf("nested -> %d\n", t_nested_in_dtor(3));
	/* 5 recursion levels + main + libc frames: a hooked frame must not stop the walk */
	std::printf("backtrace sees >= 7 frames: %s\n", t_backtrace_depth(5) >= 7 ? "yes" : "no");
	std::printf("after -> %d, notes = %d\n", t_after(1), notes);
	return 0;
}
