/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One ELF file's unwind table (include/prof_unwind.h rows), built from its .eh_frame, else its
 * .debug_frame (compressed or not), else the .eh_frame that PT_GNU_EH_FRAME points to (no
 * section headers), by our own CFI reader (README "Unwind tables": measured against libdw).  The
 * bytes come from files other users and containers control: every length and offset is checked
 * against the section, and the work per file is capped (rows, section bytes, time).
 * unwind_elf.c finds the sections in the file (unwind_table__build, _build_mem), unwind_table.c
 * reads them.
 * Loaded into the kernel by user/unwind/unwinder.c for the BPF walker (bpf/unwind.bpf.h).
 */
#ifndef PROF_UNWIND_TABLE_H
#define PROF_UNWIND_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof_unwind.h"

struct unwind_table;

struct unwind_table_opts {
	uint32_t max_rows;  /* rows after merging; 0: UNWIND_TABLE_MAX_ROWS (-E2BIG beyond) */
	uint64_t max_bytes; /* CFI section size; 0: UNWIND_TABLE_MAX_BYTES (-EFBIG beyond) */
	uint32_t max_ms;    /* wall time; 0: UNWIND_TABLE_MAX_MS (-ETIME beyond) */
};

/* The default row cap: all a table in the kernel holds (include/prof_unwind.h: 8 Mi rows). */
#define UNWIND_TABLE_MAX_ROWS  ((uint32_t)PROF_UNWIND_TABLE_ROWS_MAX)
#define UNWIND_TABLE_MAX_BYTES (256ULL << 20)
#define UNWIND_TABLE_MAX_MS    10000

enum unwind_table_source {
	UNWIND_TABLE_EH_FRAME = 1,
	UNWIND_TABLE_DEBUG_FRAME,
};

struct unwind_table_stats {
	uint32_t fdes;	   /* FDEs turned into rows */
	uint32_t bad_fdes; /* FDEs whose instructions we could not read: one unsupported row */
	uint32_t unsupported_rows; /* rows with PROF_UNWIND_CFA_UNSUPPORTED after merging */
};

/*
 * Build the table of an ELF file open on fd (from user/safe_open.h; not closed, not kept).
 * Errors: -ENOEXEC (not an x86_64 ELF file), -ENODATA (no .eh_frame or .debug_frame with an
 * FDE), -EBADMSG (records that do not fit their section), -EFBIG / -E2BIG / -ETIME (over the caps
 * of opts, which may be NULL), -ENOMEM.
 */
int unwind_table__build(struct unwind_table **out, int fd, const struct unwind_table_opts *opts);
/* Same for an ELF image in memory (the vDSO, fuzzing); the image is not kept. */
int unwind_table__build_mem(struct unwind_table **out, const void *image, size_t size,
			    const struct unwind_table_opts *opts);
/*
 * From the bytes of a .eh_frame (debug_frame false) or .debug_frame section alone, vaddr being
 * the section's address (the base of pc-relative pointers): .eh_frame read from process memory,
 * and the fuzz harness of the CFI reader.  Errors as above.
 */
int unwind_table__build_cfi(struct unwind_table **out, const void *data, size_t size,
			    uint64_t vaddr, bool debug_frame, const struct unwind_table_opts *opts);
void unwind_table__free(struct unwind_table *t);
/*
 * The address of .eh_frame that an .eh_frame_hdr (its bytes, at vaddr) points to: for
 * unwind_elf.c, which finds the sections.  -ENODATA (no pointer) or -EBADMSG.
 */
int unwind_table__eh_frame_ptr(uint64_t *out, const void *hdr, size_t size, uint64_t vaddr);

/* Row pcs are ELF virtual addresses minus this. */
uint64_t unwind_table__base(const struct unwind_table *t);
const struct prof_unwind_row *unwind_table__rows(const struct unwind_table *t, uint32_t *nr);
enum unwind_table_source unwind_table__source(const struct unwind_table *t);
const struct unwind_table_stats *unwind_table__stats(const struct unwind_table *t);

/*
 * The row that holds at ELF virtual address vaddr, searched as the BPF side will
 * (prof_unwind__search): -ENOENT when no FDE covers vaddr (before the first, in a gap, after the
 * last), and *out is then a PROF_UNWIND_CFA_NONE row.
 */
int unwind_table__find(const struct unwind_table *t, struct prof_unwind_row *out, uint64_t vaddr);

#endif /* PROF_UNWIND_TABLE_H */
