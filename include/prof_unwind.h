/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Unwind tables shared by userspace (user/unwind/unwind_table.c builds them from .eh_frame /
 * .debug_frame) and the BPF unwinder (bpf/unwind.bpf.h): one sorted array of rows per ELF file.
 * A row holds from its pc up to the next row's pc.  On x86_64 the return address is always at
 * CFA-8; rows where the CFI says otherwise are PROF_UNWIND_CFA_UNSUPPORTED.
 *
 * A row is 8 bytes: the four libraries of shared/notes/unwinding.md (libc, libstdc++,
 * libsqlite3, python3.11) have about 150 k rows together, so 8 B keeps them near 1.2 MiB of
 * locked kernel memory (the goal is < 4 MiB) and one binary-search probe reads one u64.  That
 * needs pc relative to the table's base (ELF files span < 4 GiB) and offsets in units of 8 bytes
 * (every stack slot on x86_64 is 8 bytes; an offset that is not a multiple of 8 or out of range
 * makes the row unsupported, counted at build time).
 */
#ifndef PROF_UNWIND_H
#define PROF_UNWIND_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "prof_python.h"

/* How to compute the CFA (the caller's rsp after return: return address at CFA-8). */
enum prof_unwind_cfa {
	/* No FDE covers this pc (a gap between functions, past the last one): no information. */
	PROF_UNWIND_CFA_NONE = 0,
	PROF_UNWIND_CFA_RSP = 1, /* CFA = rsp + off*8 */
	PROF_UNWIND_CFA_RBP = 2, /* CFA = rbp + off*8 */
	/*
	 * A PLT stub: CFA = rsp + off*8 + ((pc & 15) >= thr ? 8 : 0), thr in the rbp_off byte (the
	 * PLT's RBP rule is always "unchanged"): the stub pushes once more after its jmp.
	 */
	PROF_UNWIND_CFA_PLT = 3,
	PROF_UNWIND_CFA_DEREF_RBP = 4, /* CFA = *(rbp + off*8): stack realignment (and $-16,%rsp) */
	PROF_UNWIND_CFA_DEREF_RSP = 5, /* CFA = *(rsp + off*8) */
	/*
	 * A signal trampoline (CIE augmentation "S", glibc's __restore_rt): rsp points at the
	 * ucontext; the interrupted registers are in it (glibc's CFI: rbp at rsp+120, rsp at
	 * rsp+160, rip at rsp+168), not given by the rule fields.
	 */
	PROF_UNWIND_CFA_SIGNAL = 6,
	/* The return address is undefined: the outermost frame (_start, clone's child). */
	PROF_UNWIND_CFA_STOP = 7,
	/* A rule we cannot follow (another base register, an expression, RA not at CFA-8). */
	PROF_UNWIND_CFA_UNSUPPORTED = 8,
};

/* How to recover the caller's rbp. */
enum prof_unwind_rbp {
	PROF_UNWIND_RBP_UNCHANGED = 0,	 /* the caller's rbp is the current rbp */
	PROF_UNWIND_RBP_CFA = 1,	 /* saved at CFA + off*8 */
	PROF_UNWIND_RBP_DEREF_RBP = 2,	 /* saved at rbp + off*8 (realigned frames) */
	PROF_UNWIND_RBP_UNDEFINED = 3,	 /* not recoverable: an rbp-based CFA above must stop */
	PROF_UNWIND_RBP_UNSUPPORTED = 4, /* another register, val_offset, an expression */
};

struct prof_unwind_row {
	__u32 pc;      /* ELF virtual address - the table's base */
	__u8 kinds;    /* enum prof_unwind_cfa | enum prof_unwind_rbp << 4 */
	__s8 rbp_off;  /* RBP rule offset / 8; PLT: the pc & 15 threshold */
	__s16 cfa_off; /* CFA rule offset / 8 */
};
_Static_assert(sizeof(struct prof_unwind_row) == 8, "prof_unwind_row layout");

/* Enough halvings for 2^24 rows: the largest binaries seen have about 2 M (Parca). */
#define PROF_UNWIND_SEARCH_STEPS 24
#define PROF_UNWIND_MAX_ROWS	 (1u << PROF_UNWIND_SEARCH_STEPS)

static inline __u32 prof_unwind_row__cfa(const struct prof_unwind_row *r)
{
	return r->kinds & 15;
}

static inline __u32 prof_unwind_row__rbp(const struct prof_unwind_row *r)
{
	return r->kinds >> 4;
}

/*
 * Index of the last row whose pc <= pc, or -1 when pc is below the first row.  A bounded loop so
 * the BPF side can use it as is (nr <= PROF_UNWIND_MAX_ROWS).  The caller reads a row of kind
 * PROF_UNWIND_CFA_NONE as "no information" (gaps and the end of the table are such rows).
 */
static inline long prof_unwind__search(const struct prof_unwind_row *rows, __u32 nr, __u32 pc)
{
	__u32 lo = 0, hi = nr; /* invariant: rows[< lo].pc <= pc, rows[>= hi].pc > pc */

	for (int i = 0; i <= PROF_UNWIND_SEARCH_STEPS && lo < hi; i++) {
		__u32 mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

/*
 * In the kernel a table is an inner array map of 16 KiB chunks (exact size per file: the number
 * of chunks), in the outer map prof_unwind_tables under its table id.  A table of one chunk
 * holds its rows in chunk 0.  A larger one has an index in chunk 0 (index.pcs[i] = the first pc
 * of chunk i + 1, UINT32_MAX past the last) and its rows in chunks 1..n-1: a lookup costs two
 * map lookups and two in-memory binary searches.  The last chunk is padded with rows of pc
 * UINT32_MAX, kind PROF_UNWIND_CFA_NONE.
 */
#define PROF_UNWIND_CHUNK_ROWS	   2048
#define PROF_UNWIND_CHUNK_STEPS	   11 /* log2(PROF_UNWIND_CHUNK_ROWS) */
#define PROF_UNWIND_INDEX_PCS	   4096
#define PROF_UNWIND_INDEX_STEPS	   12 /* log2(PROF_UNWIND_INDEX_PCS) */
#define PROF_UNWIND_TABLE_ROWS_MAX ((__u64)PROF_UNWIND_CHUNK_ROWS * PROF_UNWIND_INDEX_PCS)

struct prof_unwind_chunk {
	struct prof_unwind_row rows[PROF_UNWIND_CHUNK_ROWS];
};

struct prof_unwind_index {
	__u32 pcs[PROF_UNWIND_INDEX_PCS];
};
_Static_assert(sizeof(struct prof_unwind_chunk) == sizeof(struct prof_unwind_index),
	       "index and row chunks share the inner map's value");

#define PROF_UNWIND_TABLES	  8192 /* tables loaded at once (distinct unwind tables) */
/*
 * PROF_UNWIND_MAX_MAPPINGS (include/prof_common.h): executable mappings per process the unwinder
 * knows (file-backed first, the rest counted in unwind_mappings_dropped).  `import torch` maps
 * 316; 256 once cut its stacks wherever a dropped library was on them.  Each traced process's
 * entry is 32 KiB of kernel memory (the hash map allocates entries as processes come, never
 * ahead).
 */
#define PROF_UNWIND_MAPPING_STEPS 11   /* log2(PROF_UNWIND_MAX_MAPPINGS) + 1: the search's steps */
#define PROF_UNWIND_ASKED_ENTRIES 4096 /* processes without mappings waiting for a re-read */

/* One executable mapping of a process, as the unwinder sees it. */
struct prof_unwind_mapping {
	__u64 start, end; /* [start, end) */
	__u64 bias;	  /* table pc = address - bias (must fit in 32 bits) */
	__u32 table_id;	  /* key in prof_unwind_tables; 0 = no table: frame pointers */
	/* Chunks in that table (1: rows in chunk 0; more: chunk 0 is the index); with table_id 0,
	 * why there is none (enum prof_unwind_none): a stack cut there is counted by it. */
	__u32 nchunks;
};
_Static_assert(sizeof(struct prof_unwind_mapping) == 32, "prof_unwind_mapping layout");
_Static_assert((1u << (PROF_UNWIND_MAPPING_STEPS - 1)) == PROF_UNWIND_MAX_MAPPINGS,
	       "the mapping search's steps cover every mapping");

/* A mapping without a table (table_id 0): is one coming? */
enum prof_unwind_none {
	PROF_UNWIND_NONE_NEVER = 0, /* no usable table: no CFI, refused, over a cap, not a file */
	PROF_UNWIND_NONE_YET = 1,   /* its file's table is being built (or waits for the queue) */
};

/* prof_unwind_procs value: a process's executable mappings, sorted by start, disjoint. */
struct prof_unwind_proc {
	__u32 nr;
	__u32 flags; /* enum prof_unwind_proc_flags, set by BPF; userspace writes 0 */
	/* Never 0, and new at every write by userspace (a fork's copy keeps its parent's): one
	 * generation is one content, so the BPF walker may keep what it found in it (a pc's
	 * row). */
	__u32 gen;
	__u32 pad;
	/* The CPython interpreter the process runs (py.version 0: none), for bpf/python.bpf.h. */
	struct prof_py_proc py;
	struct prof_unwind_mapping maps[PROF_UNWIND_MAX_MAPPINGS];
};

/*
 * prof_unwind_files: the tables of files by the inode the kernel maps (the vma's file), so that
 * the BPF walker can unwind through a mapping userspace has not read yet (a library mapped since:
 * ld.so at startup, dlopen) by asking the kernel for the pc's vma.
 */
#define PROF_UNWIND_FILES     16384
#define PROF_UNWIND_FILE_SEGS 4

struct prof_unwind_file_key {
	__u64 dev; /* the kernel's encoding: major << 20 | minor */
	__u64 ino;
};

struct prof_unwind_file {
	__u32 table_id, nchunks;
	__u64 base;  /* the table's base (row pcs are ELF addresses - base) */
	__u32 nsegs; /* executable PT_LOAD segments below */
	__u32 pad;
	struct {
		__u64 offset, vaddr, filesz;
	} segs[PROF_UNWIND_FILE_SEGS];
};

enum prof_unwind_proc_flags {
	/* A pc outside every mapping was reported (PROF_REC_UNWIND_MISS): no more until the entry
	 * is rewritten. */
	PROF_UNWIND_PROC_MISS_SENT = 1,
};

#endif /* PROF_UNWIND_H */
