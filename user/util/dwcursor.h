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
#include <string.h>

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

/* A NUL-terminated string inside the reader, or NULL (bad). */
static inline const char *rd_str(struct cur *c)
{
	const uint8_t *nul;
	const char *s;

	if (c->err || !(nul = memchr(c->p, 0, (size_t)(c->end - c->p)))) {
		c->err = true;
		return NULL;
	}
	s = (const char *)c->p;
	c->p = nul + 1;
	return s;
}

static inline void rd_skip(struct cur *c, uint64_t n)
{
	if (c->err || (uint64_t)(c->end - c->p) < n)
		c->err = true;
	else
		c->p += n;
}

/* The string at offset off of section s ("" when out of it). */
static inline const char *rd_str_at(const struct cur *s, uint64_t off)
{
	struct cur r = {s->p, s->end, false};

	if (!s->p || off >= (uint64_t)(s->end - s->p))
		return "";
	r.p += off;
	return rd_str(&r) ?: "";
}

#endif /* PROF_UTIL_DWCURSOR_H */
