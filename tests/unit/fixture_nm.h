/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The address of a symbol in a fixture's nm listing (build/fixtures/<name>.nm, written by
 * `nm -S --defined-only`: "addr [size] type name").  For cmocka tests: include after cmocka.h.
 */
#ifndef PROF_TEST_FIXTURE_NM_H
#define PROF_TEST_FIXTURE_NM_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline uint64_t nm_addr(const char *nm_path, const char *name)
{
	char line[512], a[32], b[32], c[256], d[256];
	FILE *f = fopen(nm_path, "r");
	uint64_t addr = 0;

	assert_non_null(f);
	while (!addr && fgets(line, sizeof(line), f)) {
		int n = sscanf(line, "%31s %31s %255s %255s", a, b, c, d);

		if ((n == 4 && strcmp(d, name) == 0) || (n == 3 && strcmp(c, name) == 0))
			addr = strtoull(a, NULL, 16);
	}
	fclose(f);
	assert_true(addr != 0);
	return addr;
}

#endif /* PROF_TEST_FIXTURE_NM_H */
