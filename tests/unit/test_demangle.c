// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sym/demangle.h"

static void assert_demangles(const char *name, const char *want)
{
	char *got = NULL;

	assert_int_equal(demangle__name(&got, name), 0);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_demangle__cxx_names(void **state)
{
	/* Both from tests/fixtures/symfix_cxx.cc as g++ mangles them. */
	assert_demangles("_ZN6symfix6Widget4spinEi", "symfix::Widget::spin(int)");
	assert_demangles("_ZN6symfix5twiceIlEET_S1_", "long symfix::twice<long>(long)");
	assert_demangles("_ZNSt6vectorIiSaIiEE9push_backERKi",
			 "std::vector<int, std::allocator<int> >::push_back(int const&)");
}

static void test_demangle__gcc_clones(void **state)
{
	assert_demangles("_Z3fooi.cold", "foo(int) [clone .cold]");
	assert_demangles("_Z3barv.constprop.0", "bar() [clone .constprop.0]");
}

static void test_demangle__rust_legacy_is_itanium(void **state)
{
	assert_demangles("_ZN4core3fmt5write17h0123456789abcdefE",
			 "core::fmt::write::h0123456789abcdef");
}

static void test_demangle__other_names_unchanged(void **state)
{
	assert_demangles("malloc", "malloc");
	assert_demangles("__libc_malloc", "__libc_malloc");
	/* A bare type code would "demangle" to "int": only _Z names are C++ functions. */
	assert_demangles("i", "i");
	assert_demangles("_Znotvalid((", "_Znotvalid((");
	assert_demangles("_Z", "_Z");
	assert_demangles("", "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demangle__cxx_names),
		cmocka_unit_test(test_demangle__gcc_clones),
		cmocka_unit_test(test_demangle__rust_legacy_is_itanium),
		cmocka_unit_test(test_demangle__other_names_unchanged),
	};

	return cmocka_run_group_tests_name("demangle", tests, NULL, NULL);
}
