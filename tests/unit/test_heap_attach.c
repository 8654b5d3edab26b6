// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "sym/elf_file.h"
#include "attach/heap_attach.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_heap_attach__static_detection(void **state)
{
	char script[] = "/tmp/heap-attach-test.XXXXXX";
	int fd = mkstemp(script);

	assert_true(fd >= 0);
	close(fd);
	/* this test binary is dynamic: the system libc will be probed for it */
	assert_int_equal(heap_attach__is_static("/proc/self/exe"), 0);
	/* a script runs under a (dynamic) interpreter */
	write_file(script, "#!/bin/sh\necho hi\n");
	assert_int_equal(heap_attach__is_static(script), 0);
	/* neither ELF nor script */
	write_file(script, "plain text\n");
	assert_int_equal(heap_attach__is_static(script), -ENOEXEC);
	unlink(script);
	assert_int_equal(heap_attach__is_static("/nonexistent/x"), -ENOENT);
}

/*
 * Probes go in in an order that cannot strand a call: every return probe (and free) before any
 * entry probe, each entry with its return at the same spot.  glibc's libc defines them all.
 */
static void test_heap_attach__plan_attaches_returns_and_free_before_entries(void **state)
{
	struct elf_file *ef = NULL;
	struct heap_plan plan;
	bool seen_entry = false;
	unsigned entries = 0, returns = 0, frees = 0;

	assert_int_equal(elf_file__open(&ef, LIBC, &(struct elf_file_opts){.debug_dir = ""}), 0);
	assert_int_equal(heap_attach__plan(&plan, ef), 0);
	assert_true(plan.nfns >= 9); /* malloc … pvalloc, free (aligned_alloc = memalign) */
	for (unsigned i = 0; i < plan.count; i++) {
		const struct heap_probe *p = &plan.probes[i];

		if (p->kind == HEAP_PROBE_ENTRY) {
			bool paired = false;

			seen_entry = true;
			entries++;
			for (unsigned j = 0; j < i; j++)
				paired |= plan.probes[j].kind == HEAP_PROBE_RETURN &&
					  plan.probes[j].fn == p->fn &&
					  plan.probes[j].offset == p->offset;
			assert_true(paired);
		} else {
			assert_false(seen_entry); /* a return or free after an entry */
			returns += p->kind == HEAP_PROBE_RETURN;
			frees += p->kind == HEAP_PROBE_FREE;
		}
	}
	assert_int_equal(frees, 1);
	assert_int_equal(entries, returns);
	assert_int_equal(entries + 1, plan.nfns);
	elf_file__free(ef);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heap_attach__static_detection),
		cmocka_unit_test(test_heap_attach__plan_attaches_returns_and_free_before_entries),
	};

	return cmocka_run_group_tests_name("heap_attach", tests, NULL, NULL);
}
