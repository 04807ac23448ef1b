/* SPDX-License-Identifier: MIT */
/*
 * A minimal stand-in for <criterion/criterion.h>, used only by the tsan
 * stage: criterion cannot start under ThreadSanitizer (its sandbox maps an
 * "inheritable arena" at random fixed addresses inside TSan's shadow range
 * and aborts, Snaipe/Criterion#274).  It provides what the stress and
 * torture suites use: Test() with .timeout, cr_assert and its comparison
 * forms, cr_log_*.  Every test runs in a forked child, as under criterion.
 */
#ifndef USFT_CRITERION_SHIM_H
#define USFT_CRITERION_SHIM_H

#include <stdbool.h>
#include <stddef.h>

struct shim_test {
	const char *suite, *name;
	void (*fn)(void);
	double timeout;
	struct shim_test *next;
};

void shim_register(struct shim_test *t);
void shim_fail(const char *file, int line, const char *expr, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));
void shim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define Test(suite, name, ...)                                                 \
	static void suite##_##name##_impl(void);                               \
	static struct shim_test suite##_##name##_desc = {                      \
		#suite, #name, suite##_##name##_impl, __VA_ARGS__ };           \
	__attribute__((constructor)) static void suite##_##name##_reg(void)    \
	{                                                                      \
		shim_register(&suite##_##name##_desc);                         \
	}                                                                      \
	static void suite##_##name##_impl(void)

#define cr_assert(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond))                                                   \
			shim_fail(__FILE__, __LINE__, #cond, " " __VA_ARGS__); \
	} while (0)
#define cr_assert_not(c, ...)		cr_assert(!(c), __VA_ARGS__)
#define cr_assert_eq(a, b, ...)		cr_assert((a) == (b), __VA_ARGS__)
#define cr_assert_neq(a, b, ...)	cr_assert((a) != (b), __VA_ARGS__)
#define cr_assert_lt(a, b, ...)		cr_assert((a) < (b), __VA_ARGS__)
#define cr_assert_leq(a, b, ...)	cr_assert((a) <= (b), __VA_ARGS__)
#define cr_assert_gt(a, b, ...)		cr_assert((a) > (b), __VA_ARGS__)
#define cr_assert_geq(a, b, ...)	cr_assert((a) >= (b), __VA_ARGS__)
#define cr_assert_null(p, ...)		cr_assert((p) == NULL, __VA_ARGS__)
#define cr_assert_not_null(p, ...)	cr_assert((p) != NULL, __VA_ARGS__)

#define cr_log_info(...)	shim_log(__VA_ARGS__)
#define cr_log_warn(...)	shim_log(__VA_ARGS__)
#define cr_log_error(...)	shim_log(__VA_ARGS__)

#endif
