/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inlined calls of a file's DWARF: its .debug_info DIEs (DWARF 2 to 5) walked once into a compact
 * index of the address ranges of every DW_TAG_inlined_subroutine (low_pc/high_pc, or DW_AT_ranges
 * in .debug_ranges / .debug_rnglists), each with the name of the function inlined (its
 * abstract_origin / specification chain: linkage name, else name), its call site (call_file as a
 * file id of the line reader, call_line) and the inlined call it sits in.  Built by the line
 * reader (sym/dwarf_lines.c) when it opens a file; foreign bytes: every read bounded, the index
 * capped in bytes (the rest of the file is then left out), reference chains and DIE nesting
 * capped so that a malformed tree ends with an error, not a loop.  A name in dwz's alternate file
 * (ref_alt / ref_sup, strp_alt / strp_sup) is read from that file's sections when the line reader
 * found it (sym/dwarf_alt.h); else the call has none (counted, and left out at lookup).
 */
#ifndef PROF_SYM_DWARF_INLINE_H
#define PROF_SYM_DWARF_INLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sym/dwarf_form.h"
#include "util/strarena.h"

#define DWINL_NONE UINT32_MAX

/* One inlined call. */
struct dwinl_call {
	uint32_t name;	    /* offset in names, DWINL_NONE: unnamed (dwz, or malformed) */
	uint32_t call_file; /* a file id of the line reader, DWINL_NONE: unknown */
	uint32_t call_line;
	uint32_t parent; /* the inlined call it sits in (a lower index), DWINL_NONE: none */
	uint32_t depth;	 /* its DIE's nesting in its unit */
};

struct dwinl_range {
	uint64_t lo, hi; /* [lo, hi) */
	uint64_t maxhi;	 /* the highest hi of this range and every one before it */
	uint32_t call;
};

struct dwinl {
	struct dwinl_call *calls;
	size_t ncalls, calls_cap;
	struct dwinl_range *ranges; /* by lo, once built */
	size_t nranges, ranges_cap;
	struct strarena names;
	uint64_t unnamed;   /* calls without a name */
	uint64_t malformed; /* units or references given up */
	bool capped;	    /* the byte cap cut the index short */
};

/* The file id of entry idx of the line table at offset stmt of .debug_line (DWINL_NONE). */
typedef uint32_t (*dwinl_file_fn)(void *ctx, uint64_t stmt, uint64_t idx);

/*
 * The index of the DWARF in s, at most max_bytes, names read through alt (dwz's alternate file's
 * info, abbrev and str; NULL: none) too.  0 (maybe empty, maybe capped) or -ENOMEM.
 */
int dwinl__build(struct dwinl *x, const struct dwsecs *s, const struct dwsecs *alt,
		 dwinl_file_fn file, void *ctx, uint64_t max_bytes);
void dwinl__release(struct dwinl *x);
size_t dwinl__bytes(const struct dwinl *x);
/* The inlined calls vaddr is in, innermost first, into out[0..max): how many. */
unsigned dwinl__lookup(const struct dwinl *x, uint64_t vaddr, uint32_t *out, unsigned max);

#endif /* PROF_SYM_DWARF_INLINE_H */
