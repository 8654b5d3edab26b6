// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPython code objects and line tables from a process we do not trust.  The first byte picks
 * what is fuzzed: bits 0–1 = 0, 1, 2 decode the rest (after a 4-byte first line) as a co_lnotab,
 * a 3.10 co_linetable or a 3.11+ location table; 3 reads a code object out of a memory image
 * (the rest of the input, mapped at IMG_BASE; bits 2–4 pick the version's layout, bit 7 asks
 * for the type check).  Seeds (tests/fuzz/corpus/pycode/): tables printed by each installed
 * interpreter, and images of live code objects with their strings and tables copied in and
 * their pointers moved to the copies.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/pycode.h"

#define IMG_BASE 0x10000ULL
#define IMG_TYPE 0x5555000c0de0ULL

/* The code-object layouts of 3.8–3.13 (notes/python.md). */
#define VERSION(mi, fl, fn, nm, qn, lt, kind, as, cs)                                            \
	{                                                                                        \
		.major = 3, .minor = mi, .co_firstlineno = fl, .co_filename = fn, .co_name = nm, \
		.co_qualname = qn, .co_linetable = lt, .line_table = kind, .ascii_size = as,     \
		.compact_size = cs,                                                              \
	}
static const struct py_version versions[] = {
	VERSION(8, 40, 104, 112, 0, 120, PY_LNOTAB, 48, 72),
	VERSION(9, 40, 104, 112, 0, 120, PY_LNOTAB, 48, 72),
	VERSION(10, 40, 104, 112, 0, 120, PY_LINETABLE_310, 48, 72),
	VERSION(11, 72, 112, 120, 128, 136, PY_LOCATIONS, 48, 72),
	VERSION(12, 68, 112, 120, 128, 136, PY_LOCATIONS, 40, 56),
	VERSION(13, 68, 112, 120, 128, 136, PY_LOCATIONS, 40, 56),
};

struct image {
	const uint8_t *mem;
	size_t size;
};

static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = ctx;

	if (addr < IMG_BASE || addr - IMG_BASE > im->size || len > im->size - (addr - IMG_BASE))
		return -1;
	memcpy(buf, im->mem + (addr - IMG_BASE), len);
	return 0;
}

/* What we hand out must be NUL-terminated UTF-8 within the cap. */
static void check_utf8(const char *s)
{
	size_t n = strlen(s);

	if (n > PYCODE_MAX_STR)
		__builtin_trap();
	for (size_t i = 0; i < n;) {
		uint8_t b = s[i];
		size_t k = b < 0x80	    ? 1
			   : (b >> 5) == 6  ? 2
			   : (b >> 4) == 14 ? 3
			   : (b >> 3) == 30 ? 4
					    : 0;

		if (!k || i + k > n)
			__builtin_trap();
		for (size_t j = 1; j < k; j++)
			if (((uint8_t)s[i + j] & 0xc0) != 0x80)
				__builtin_trap();
		i += k;
	}
}

static void lines(const struct py_version *v, const struct pycode *c)
{
	/* Lines are never negative; every instruction up to the table's reach, and far ones. */
	for (uint32_t i = 0; i < 96; i++)
		if (pycode__line(v, c, i) < 0)
			__builtin_trap();
	if (pycode__line(v, c, UINT32_MAX) < 0 || pycode__line(v, c, 0x7fff) < 0)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_version v = {0};
	struct pycode c = {0};
	struct image im;
	uint8_t mode;

	if (size < 1)
		return 0;
	mode = data[0];
	if ((mode & 3) != 3) {
		uint32_t first = 0;

		if (size < 5)
			return 0;
		memcpy(&first, data + 1, 4);
		v.line_table = (mode & 3) + 1;
		c.firstlineno = (int32_t)first;
		c.table_len = size - 5;
		/* A copy of exactly the table's length, so ASan sees any read past it. */
		c.table = malloc(c.table_len ? c.table_len : 1);
		if (!c.table)
			return 0;
		memcpy(c.table, data + 5, c.table_len);
		lines(&v, &c);
		free(c.table);
		return 0;
	}
	v = versions[((mode >> 2) & 7) % (sizeof(versions) / sizeof(versions[0]))];
	im.mem = data + 1;
	im.size = size - 1;
	if (pycode__read(&v, image_read, &im, IMG_BASE, mode & 0x80 ? IMG_TYPE : 0, &c)) {
		if (c.name || c.filename || c.table || c.table_len || c.firstlineno)
			__builtin_trap();
		return 0;
	}
	check_utf8(c.name);
	check_utf8(c.filename);
	if (c.table_len > PYCODE_MAX_TABLE || !c.table)
		__builtin_trap();
	lines(&v, &c);
	pycode__free(&c);
	return 0;
}
