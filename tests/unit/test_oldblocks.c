// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The summary's list of blocks in use for long (export/oldblocks.c), from records as BPF sends
 * them: their times are the blocks' births. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agg/collect.h"
#include "collect_fixture.h"
#include "export/oldblocks.h"
#include "prof_heap.h"

#define S 1000000000ULL

struct rec {
	struct prof_heap_event e;
	uint64_t frames[2];
};

static void send(struct collect *c, uint64_t addr, uint64_t size, uint64_t ts, uint64_t leaf)
{
	struct rec r = {.e = {.type = PROF_REC_HEAP_ALLOC,
			      .pid = 999999,
			      .tid = 999999,
			      .nframes = 2,
			      .addr = addr,
			      .size = size,
			      .ts = ts},
			.frames = {leaf, 0x402000}};

	assert_int_equal(collect__on_event(c, &r, sizeof(r)), 0);
}

static char *list(struct collect *c, uint64_t now, uint64_t min_age, unsigned top)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(oldblocks__write(f, collect__heap(c), parts.stacks, now, min_age, top,
					  NULL, "in use for at least", NULL),
			 0);
	fclose(f);
	return buf;
}

/* Two stacks: 3 blocks of 100 bytes born at 10 s, 20 s and 50 s, and one of 5,000 at 55 s; at
 * 100 s, at least 60 s old: the first stack's two oldest only, 200 bytes, oldest 1m30s. */
static void test_oldblocks__ages_bytes_and_order(void **state)
{
	struct collect *c;
	char *out;

	(void)state;
	assert_int_equal(open_collect(&c, &(struct collect_opts){.modes = MODE_HEAP}), 0);
	send(c, 0x1000, 100, 10 * S, 0x401000);
	send(c, 0x2000, 100, 20 * S, 0x401000);
	send(c, 0x3000, 100, 50 * S, 0x401000);
	send(c, 0x4000, 5000, 55 * S, 0x401100);
	out = list(c, 100 * S, 60 * S, 10);
	assert_non_null(strstr(out, "in use for at least: 200 bytes in 2 blocks, 1 "
				    "stack, top 1 by bytes\n"));
	assert_non_null(strstr(out, "200 bytes          2    1m30s  999999"));
	free(out);
	/* at least 40 s: both, the 5,000 bytes first; top 1 keeps it alone */
	out = list(c, 100 * S, 40 * S, 1);
	assert_non_null(
		strstr(out, "5.18 KiB (5300 bytes) in 4 blocks, 2 stacks, top 1 by bytes\n"));
	assert_non_null(strstr(out, "4.88 KiB          1      45s"));
	assert_null(strstr(out, "200 bytes"));
	free(out);
	/* nothing that old */
	out = list(c, 100 * S, 3600 * S, 10);
	assert_non_null(strstr(out, "in use for at least: none\n"));
	free(out);
	close_collect(c);
}

static void test_oldblocks__age_format(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(oldblocks__age(b, sizeof(b), 800000000ULL), "0.8s");
	assert_string_equal(oldblocks__age(b, sizeof(b), 45 * S), "45s");
	assert_string_equal(oldblocks__age(b, sizeof(b), 187 * S), "3m07s");
	assert_string_equal(oldblocks__age(b, sizeof(b), 7500 * S), "2h05m");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oldblocks__ages_bytes_and_order),
		cmocka_unit_test(test_oldblocks__age_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
