// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sym/kallsyms.h"

/* Writes text to a temporary file; the caller unlinks *path. */
static void write_tmp(char *path, const char *text)
{
	int fd = mkstemp(path);
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static struct kallsyms *load_text(const char *text, int *err)
{
	char path[] = "/tmp/kallsyms.XXXXXX";
	struct kallsyms *k = NULL;

	write_tmp(path, text);
	*err = kallsyms__load(&k, path);
	unlink(path);
	return k;
}

/* The shapes /proc/kallsyms has: aliases, data, weak, modules, BPF programs, out of order. */
static const char sample[] = "ffffffff81000000 T _text\n"
			     "ffffffff81000000 T _stext\n"
			     "ffffffff81000000 t __pfx_startup_64\n"
			     "ffffffff81001000 T do_one\n"
			     "ffffffff81001080 t do_two\n"
			     "ffffffff81002000 D some_data\n"
			     "ffffffff81002800 r some_rodata\n"
			     "ffffffff81003000 W weak_fn\n"
			     "ffffffffc0a01100 T ext4_main\t[ext4]\n"
			     "ffffffffc0a01000 t ext4_helper\t[ext4]\n"
			     "ffffffffc0b00000 t bpf_prog_6deef7357e7b4530_handle\t[bpf]\n"
			     "ffffffff81004000 t late_local\n";

static void test_kallsyms__resolves_text_symbols(void **state)
{
	const struct ksym *s;
	struct kallsyms *k;
	int err;

	k = load_text(sample, &err);
	assert_int_equal(err, 0);
	/* Text only (t T w W), one per address. */
	assert_int_equal(kallsyms__count(k), 8);
	s = kallsyms__resolve(k, 0xffffffff81001000);
	assert_string_equal(s->name, "do_one");
	assert_int_equal(s->addr, 0xffffffff81001000);
	assert_null(s->module);
	assert_string_equal(kallsyms__resolve(k, 0xffffffff8100107f)->name, "do_one");
	assert_string_equal(kallsyms__resolve(k, 0xffffffff81001080)->name, "do_two");
	/* Data symbols are not functions: the text symbol before them still covers. */
	assert_string_equal(kallsyms__resolve(k, 0xffffffff81002010)->name, "do_two");
	assert_string_equal(kallsyms__resolve(k, 0xffffffff81003004)->name, "weak_fn");
	assert_string_equal(kallsyms__resolve(k, 0xffffffff81004000)->name, "late_local");
	kallsyms__free(k);
}

static void test_kallsyms__prefers_global_aliases(void **state)
{
	struct kallsyms *k;
	int err;

	k = load_text(sample, &err);
	assert_int_equal(err, 0);
	/* _text and _stext are both global, one underscore: first by name; never the local. */
	assert_string_equal(kallsyms__resolve(k, 0xffffffff81000010)->name, "_stext");
	kallsyms__free(k);
}

static void test_kallsyms__keeps_module_names(void **state)
{
	const struct ksym *s;
	struct kallsyms *k;
	int err;

	k = load_text(sample, &err);
	assert_int_equal(err, 0);
	s = kallsyms__resolve(k, 0xffffffffc0a01010);
	assert_string_equal(s->name, "ext4_helper");
	assert_string_equal(s->module, "ext4");
	s = kallsyms__resolve(k, 0xffffffffc0a01200);
	assert_string_equal(s->name, "ext4_main");
	assert_string_equal(s->module, "ext4");
	s = kallsyms__resolve(k, 0xffffffffc0b00040);
	assert_string_equal(s->name, "bpf_prog_6deef7357e7b4530_handle");
	assert_string_equal(s->module, "bpf");
	kallsyms__free(k);
}

static void test_kallsyms__below_first_symbol(void **state)
{
	struct kallsyms *k;
	int err;

	k = load_text(sample, &err);
	assert_int_equal(err, 0);
	assert_null(kallsyms__resolve(k, 0xffffffff80ffffff));
	assert_null(kallsyms__resolve(k, 0x401000));
	kallsyms__free(k);
}

static void test_kallsyms__hidden_addresses(void **state)
{
	/* What an unprivileged reader sees with kptr_restrict set. */
	static const char hidden[] = "0000000000000000 T _text\n"
				     "0000000000000000 T do_one\n"
				     "0000000000000000 t ext4_helper\t[ext4]\n";
	struct kallsyms *k;
	int err;

	k = load_text(hidden, &err);
	assert_int_equal(err, -EACCES);
	assert_null(k);
}

static void test_kallsyms__rejects_garbage(void **state)
{
	int err;

	assert_null(load_text("not kallsyms at all\n", &err));
	assert_int_equal(err, -EINVAL);
}

static void test_kallsyms__missing_file(void **state)
{
	struct kallsyms *k = NULL;

	assert_int_equal(kallsyms__load(&k, "/nonexistent/kallsyms"), -ENOENT);
	kallsyms__free(NULL);
}

/* The live file: any text symbol resolves to a name listed at its address. */
static void test_kallsyms__live_proc_kallsyms(void **state)
{
	char line[512], name[256], type;
	unsigned long long addr = 0;
	const struct ksym *s;
	struct kallsyms *k = NULL;
	bool found = false;
	FILE *f;
	int err;

	err = kallsyms__load(&k, NULL);
	if (err == -EACCES || err == -ENOENT)
		skip(); /* not root, or no /proc: nothing to compare with */
	assert_int_equal(err, 0);
	assert_true(kallsyms__count(k) > 1000);
	f = fopen("/proc/kallsyms", "r");
	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 && type == 'T' &&
			strcmp(name, "schedule") == 0;
	fclose(f);
	/* schedule is core kernel text on every build: it must be listed, at a real address. */
	assert_true(found);
	assert_true(addr != 0);
	s = kallsyms__resolve(k, addr + 1);
	assert_non_null(s);
	assert_int_equal(s->addr, addr);
	assert_null(s->module);
	kallsyms__free(k);
}

/* The parser over a stream (what the loader and the fuzzer feed it): the same symbols. */
static void test_kallsyms__parses_a_stream(void **state)
{
	FILE *f = fmemopen((void *)sample, strlen(sample), "r");
	struct kallsyms *k = NULL;
	const struct ksym *s;

	assert_non_null(f);
	assert_int_equal(kallsyms__parse(&k, f), 0);
	fclose(f);
	s = kallsyms__resolve(k, 0xffffffffc0a01104);
	assert_non_null(s);
	assert_string_equal(s->name, "ext4_main");
	assert_string_equal(s->module, "ext4");
	assert_int_equal(s->addr, 0xffffffffc0a01100);
	kallsyms__free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kallsyms__resolves_text_symbols),
		cmocka_unit_test(test_kallsyms__prefers_global_aliases),
		cmocka_unit_test(test_kallsyms__keeps_module_names),
		cmocka_unit_test(test_kallsyms__below_first_symbol),
		cmocka_unit_test(test_kallsyms__hidden_addresses),
		cmocka_unit_test(test_kallsyms__rejects_garbage),
		cmocka_unit_test(test_kallsyms__missing_file),
		cmocka_unit_test(test_kallsyms__parses_a_stream),
		cmocka_unit_test(test_kallsyms__live_proc_kallsyms),
	};

	return cmocka_run_group_tests_name("kallsyms", tests, NULL, NULL);
}
