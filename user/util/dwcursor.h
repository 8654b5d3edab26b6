/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A bounded little-endian reader of DWARF-encoded bytes (fixed-width integers, LEB128), shared
 * by the readers of foreign CFI (unwind/unwind_table.c) and line tables (sym/dwarf_lines.c):
 * any overrun sets err and yields zeros, so a parser checks once, where it decides.
 */
#ifndef PROF_UTIL_DWCURSOR_H
#define PROF_UTIL_DWCURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A bounded little-endian reader; any overrun sets err and yields zeros. */
struct cur {
	const uint8_t *p, *end;
	bool err;
};

static inline uint64_t rd_u(struct cur *c, unsigned n)
{
	uint64_t v = 0;

	if (c->err || (size_t)(c->end - c->p) < n) {
		c->err = true;
		return 0;
	}
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

/* LEB128: the value's bits, and the shift past its last byte and that byte (for the sign). */
static inline uint64_t rd_leb(struct cur *c, unsigned *bits, uint8_t *last)
{
	uint64_t v = 0;

	for (unsigned shift = 0; !c->err; shift += 7) {
		uint8_t b;

		if (c->p >= c->end || shift > 63) {
			c->err = true;
			break;
		}
		b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*bits = shift + 7;
			*last = b;
			return v;
		}
	}
	return 0;
}

static inline uint64_t rd_uleb(struct cur *c)
{
	unsigned bits;
	uint8_t last;

	return rd_leb(c, &bits, &last);
}

static inline int64_t rd_sleb(struct cur *c)
{
	unsigned bits = 0;
	uint8_t last = 0;
	uint64_t v = rd_leb(c, &bits, &last);

	if (!c->err && bits < 64 && (last & 0x40))
		v |= ~0ULL << bits;
	return c->err ? 0 : (int64_t)v;
}

#endif /* PROF_UTIL_DWCURSOR_H */
