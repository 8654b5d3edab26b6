// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The inline walker of .debug_info (sym/dwarf_inline.c) over foreign sections: the input is
 * eight little-endian u32 sizes, then .debug_info, .debug_abbrev, .debug_str, .debug_line_str,
 * .debug_str_offsets, .debug_addr, .debug_ranges and .debug_rnglists back to back (each cut at
 * the input's end).  Then, when 12 bytes are left, three u32 sizes and dwz's alternate file's
 * .debug_info, .debug_abbrev and .debug_str (what ref_alt, strp_alt and DWARF 5's sup forms
 * point into).  Seeds are the sections of the inlfix and dwz fixtures (tests/fuzz/make_seeds.py).
 * Every lookup's chain must be short and its calls in the index,
 * and each named call's name inside the arena.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/dwarf_inline.h"

#define NSECS 8
#define NALT  3

static uint32_t file_of(void *ctx, uint64_t stmt, uint64_t idx)
{
	(void)ctx;
	return stmt < 4096 && idx < 64 ? (uint32_t)idx : DWINL_NONE;
}

/* n sections at *off of data: their sizes, then their bytes (cut at the input's end). */
static void split(const uint8_t *data, size_t size, size_t *off, struct cur *secs, unsigned n)
{
	size_t at = *off + 4 * n;

	for (unsigned i = 0; i < n; i++) {
		uint32_t len;

		memcpy(&len, data + *off + 4 * i, 4);
		if (len > size - at)
			len = (uint32_t)(size - at);
		/* An empty section is an absent one, as the line reader hands it over. */
		secs[i] = len ? (struct cur){data + at, data + at + len, false}
			      : (struct cur){NULL, NULL, true};
		at += len;
	}
	*off = at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct cur none = {NULL, NULL, true};
	struct cur secs[NSECS], alts[NALT] = {none, none, none};
	struct dwsecs s, alt;
	struct dwinl x;
	size_t off = 0;

	if (size < NSECS * 4)
		return 0;
	split(data, size, &off, secs, NSECS);
	if (size - off >= NALT * 4)
		split(data, size, &off, alts, NALT);
	s = (struct dwsecs){secs[0], secs[1], secs[2], secs[3], secs[4],
			    secs[5], secs[6], secs[7], alts[2]};
	alt = (struct dwsecs){alts[0], alts[1], alts[2], none, none, none, none, none, none};
	if (dwinl__build(&x, &s, &alt, file_of, NULL, 1u << 20))
		return 0; /* -ENOMEM only */
	if (dwinl__bytes(&x) > (1u << 20) + 4096)
		__builtin_trap(); /* the cap holds */
	for (size_t i = 0; i < x.nranges && i < 256; i++) {
		uint64_t probe[2] = {x.ranges[i].lo, x.ranges[i].hi - 1};

		for (unsigned k = 0; k < 2; k++) {
			uint32_t out[64];
			unsigned n = dwinl__lookup(&x, probe[k], out, 64);

			for (unsigned j = 0; j < n; j++) {
				const struct dwinl_call *c;

				if (out[j] >= x.ncalls)
					__builtin_trap();
				c = &x.calls[out[j]];
				if (c->name != DWINL_NONE &&
				    (c->name >= x.names.len || strlen(x.names.buf + c->name) == 0))
					__builtin_trap();
				if (j && out[j] >= out[j - 1]) /* outward: lower indexes */
					__builtin_trap();
			}
		}
	}
	dwinl__release(&x);
	return 0;
}
