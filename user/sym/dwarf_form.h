/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Attribute values of .debug_info DIEs (DWARF 2 to 5), read with the bounded cursor of
 * util/dwcursor.h: skipped, or read as a number, an offset, an index or a string, and resolved
 * through the sections a unit names them in (.debug_str, .debug_line_str, .debug_str_offsets,
 * .debug_addr).  Shared by the line reader (a unit's compilation directory) and the inline
 * walker (sym/dwarf_inline.c).  dwz's alternate file (GNU_ref_alt, GNU_strp_alt, DWARF 5's
 * ref_sup4/8, strp_sup): a reference is marked as one into it (the inline walker follows it), a
 * string resolves through alt_str, the alternate file's .debug_str (absent: nothing).
 */
#ifndef PROF_SYM_DWARF_FORM_H
#define PROF_SYM_DWARF_FORM_H

#include <stdbool.h>
#include <stdint.h>

#include "util/dwcursor.h"

/* The sections a unit's values point into (an absent one: p NULL, err set). */
struct dwsecs {
	struct cur info, abbrev, str, line_str, str_offsets, addr, ranges, rnglists;
	struct cur alt_str; /* dwz's alternate file's .debug_str (sym/dwarf_alt.h) */
};

/* What a value needs of its unit; the bases come from the unit's first DIE (DWARF 5). */
struct dwunit {
	unsigned version, offsz, asz;
	uint64_t off; /* the unit header's offset in .debug_info */
	uint64_t str_offsets_base, addr_base, rnglists_base;
};

enum dwval_kind {
	DWVAL_NONE,	/* skipped: a form not read (block, exprloc, data16…), or malformed */
	DWVAL_NUM,	/* a constant, flag or section offset */
	DWVAL_ADDR,	/* an address (addr) */
	DWVAL_ADDRX,	/* an index into .debug_addr */
	DWVAL_REF,	/* a DIE's offset in .debug_info (unit-relative forms made absolute) */
	DWVAL_STR,	/* an inline string: s */
	DWVAL_STRP,	/* an offset into .debug_str */
	DWVAL_LSTRP,	/* an offset into .debug_line_str */
	DWVAL_STRX,	/* an index into .debug_str_offsets */
	DWVAL_RNGX,	/* an index of DW_FORM_rnglistx */
	DWVAL_REF_ALT,	/* a DIE's offset in the alternate file's .debug_info */
	DWVAL_STRP_ALT, /* an offset into the alternate file's .debug_str */
};

struct dwval {
	enum dwval_kind kind;
	uint64_t u;
	const char *s;
};

/* Skip a value of form (GNU's alt forms included); an unknown form sets r->err. */
void dwform__skip(struct cur *r, uint64_t form, unsigned offsz, unsigned asz, unsigned version);
/* Read a value of form (implicit: DW_FORM_implicit_const's value from the abbreviation). */
void dwform__read(struct cur *r, uint64_t form, int64_t implicit, const struct dwunit *u,
		  struct dwval *out);
/* The string v names, or NULL (not a string, or out of its section). */
const char *dwform__string(const struct dwsecs *s, const struct dwunit *u, const struct dwval *v);
/* The address v names (addr or addrx): true and *out. */
bool dwform__addr(const struct dwsecs *s, const struct dwunit *u, const struct dwval *v,
		  uint64_t *out);

#endif /* PROF_SYM_DWARF_FORM_H */
