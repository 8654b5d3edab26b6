// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "attach/prologue.h"

/* Byte sequences copied from Debian 12's glibc 2.36 (objdump of libc.so.6). */
static void test_prologue__free_skips_test_to_je(void **state)
{
	const uint8_t free_[] = {0x48, 0x85, 0xff, 0x0f, 0x84, 0xbf, 0x00, 0x00, 0x00, 0x55};

	assert_int_equal(prologue__probe_offset(free_, sizeof(free_)), 3);
}

static void test_prologue__memalign_skips_riprel_cmpb(void **state)
{
	const uint8_t memalign[] = {0x80, 0x3d, 0x71, 0x0e, 0x14, 0x00, 0x00, 0x74, 0x07};
	const uint8_t posix_memalign[] = {0x80, 0x3d, 0x01, 0x02, 0x14, 0x00, 0x00, 0x41, 0x54};

	assert_int_equal(prologue__probe_offset(memalign, sizeof(memalign)), 7);
	assert_int_equal(prologue__probe_offset(posix_memalign, sizeof(posix_memalign)), 7);
}

static void test_prologue__push_stays_at_entry(void **state)
{
	const uint8_t malloc_[] = {0x41, 0x54, 0x55, 0x53};
	const uint8_t push_rbp[] = {0x55, 0x48, 0x89, 0xe5};

	assert_int_equal(prologue__probe_offset(malloc_, sizeof(malloc_)), 0);
	assert_int_equal(prologue__probe_offset(push_rbp, sizeof(push_rbp)), 0);
}

static void test_prologue__register_writes_are_not_skipped(void **state)
{
	/* mov %rdi,%rbx then push: the mov is not flag-only, so stay at the entry */
	const uint8_t mov_first[] = {0x48, 0x89, 0xfb, 0x55};
	/* endbr64 then a register move: no emulated instruction before the move */
	const uint8_t endbr[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x89, 0xfb};
	/* mov $imm32 into an argument register (edi) is not skippable */
	const uint8_t mov_edi[] = {0xbf, 0x01, 0x00, 0x00, 0x00, 0x55};
	/* test then a mov: no emulated instruction within reach */
	const uint8_t test_mov[] = {0x48, 0x85, 0xff, 0x48, 0x89, 0xfb};

	assert_int_equal(prologue__probe_offset(mov_first, sizeof(mov_first)), 0);
	assert_int_equal(prologue__probe_offset(endbr, sizeof(endbr)), 0);
	assert_int_equal(prologue__probe_offset(test_mov, sizeof(test_mov)), 0);
	assert_int_equal(prologue__probe_offset(mov_edi, sizeof(mov_edi)), 0);
}

/* Debian 12's libstdc++ (CET-enabled): the endbr64 would be single-stepped on every call. */
static void test_prologue__cxx_new_skips_endbr64(void **state)
{
	/* _Znwm: endbr64; test %rdi,%rdi; mov $0x1,%eax; push %rbx */
	const uint8_t znwm[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x85, 0xff,
				0xb8, 0x01, 0x00, 0x00, 0x00, 0x53};
	/* _Znam: endbr64; jmp _Znwm@plt */
	const uint8_t znam[] = {0xf3, 0x0f, 0x1e, 0xfa, 0xe9, 0xf7, 0x02, 0xff, 0xff};
	/* _ZnwmSt11align_val_t: endbr64; push %rbp */
	const uint8_t aligned[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55};

	assert_int_equal(prologue__probe_offset(znwm, sizeof(znwm)), 12);
	assert_int_equal(prologue__probe_offset(znam, sizeof(znam)), 4);
	assert_int_equal(prologue__probe_offset(aligned, sizeof(aligned)), 4);
}

static void test_prologue__truncated_input(void **state)
{
	const uint8_t cut[] = {0x80, 0x3d, 0x71};

	assert_int_equal(prologue__probe_offset(cut, sizeof(cut)), 0);
	assert_int_equal(prologue__probe_offset(cut, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prologue__free_skips_test_to_je),
		cmocka_unit_test(test_prologue__memalign_skips_riprel_cmpb),
		cmocka_unit_test(test_prologue__push_stays_at_entry),
		cmocka_unit_test(test_prologue__register_writes_are_not_skipped),
		cmocka_unit_test(test_prologue__truncated_input),
		cmocka_unit_test(test_prologue__cxx_new_skips_endbr64),
	};

	return cmocka_run_group_tests_name("prologue", tests, NULL, NULL);
}
