// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agg/calls_agg.h"
#include "profile/calls_profile.h"

static void name_of(enum prof_runtime rt, const char *cls, const char *fn, const char *file,
		    const char *want, const char *want_sys)
{
	struct calls_name n = {.runtime = rt, .cls = cls, .fn = fn, .file = file};
	char name[256], sys[512];

	calls_profile__format_name(&n, name, sizeof(name), sys, sizeof(sys));
	assert_string_equal(name, want);
	assert_string_equal(sys, want_sys);
}

static void test_calls_profile__names_per_language(void **state)
{
	name_of(PROF_RT_PYTHON, "", "f", "/app/calls.py", "f", "f");
	name_of(PROF_RT_RUBY, "Integer", "times", "calls.rb", "Integer#times", "Integer#times");
	name_of(PROF_RT_RUBY, "", "puts", "calls.rb", "puts", "puts");
	name_of(PROF_RT_PHP, "Calc", "alpha", "calls.php", "Calc::alpha", "Calc::alpha");
	name_of(PROF_RT_PHP, "", "sleeper", "calls.php", "sleeper", "sleeper");
	name_of(PROF_RT_JAVA, "java/util/HashMap$Node", "getKey", "()Ljava/lang/Object;",
		"java.util.HashMap$Node.getKey",
		"java.util.HashMap$Node.getKey()Ljava/lang/Object;");
	name_of(PROF_RT_JAVA, "Calls", "alpha", "(I)I", "Calls.alpha", "Calls.alpha(I)I");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calls_profile__names_per_language),
	};

	return cmocka_run_group_tests_name("calls_profile", tests, NULL, NULL);
}
