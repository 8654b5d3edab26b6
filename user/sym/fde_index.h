/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The functions an ELF file's .eh_frame_hdr lists: the start of each FDE (its table, sorted by
 * address, as the linker writes it) and, where the FDE reads as the common encoding, its end.
 * What a frame no symbol covers is named by: every return address inside one function gets the
 * same name, so a flame graph does not split it per call site.  The bytes are a target's:
 * every entry is checked inside the sections, the count is capped by their size.
 */
#ifndef PROF_FDE_INDEX_H
#define PROF_FDE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fde_index {
	uint64_t *start; /* ELF virtual addresses, ascending */
	uint32_t *len;	 /* 0: unknown (up to the next start) */
	size_t n;
};

/*
 * Read the binary search table of .eh_frame_hdr (hdr, hdr_size bytes at hdr_vaddr); eh (may be
 * NULL) is .eh_frame (eh_size bytes at eh_vaddr), where each FDE's range is read.  Only the
 * table encoding GNU ld and lld write (DW_EH_PE_datarel | DW_EH_PE_sdata4) is read.  0 (an
 * empty index when there is no table), -EBADMSG (a table that does not fit or is not sorted),
 * -ENOMEM.
 */
int fde_index__parse(struct fde_index *out, const uint8_t *hdr, size_t hdr_size, uint64_t hdr_vaddr,
		     const uint8_t *eh, size_t eh_size, uint64_t eh_vaddr);
/* The start of the FDE covering vaddr: true and *start, or false (none covers it). */
bool fde_index__find(const struct fde_index *x, uint64_t vaddr, uint64_t *start);
void fde_index__release(struct fde_index *x);

#endif /* PROF_FDE_INDEX_H */
