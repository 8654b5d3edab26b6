/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Source lines of a file's DWARF (a debug file's, or the file's own): its .debug_line programs
 * (DWARF 2 to 5, compressed sections too) run by a reader of our own into one table of
 * (address, file, line) rows, so native frames get pprof Lines; and its inlined calls
 * (sym/dwarf_inline.h), so an address in inlined code gets the functions inlined there.  The bytes
 * are foreign (a debug file a debuginfod server sent, or one a target's root holds): every read is
 * bounded by its section, every table capped, and the reader is fuzzed
 * (tests/fuzz/fuzz_debug_file.c).  libdw is not used: 0.188 overflowed a heap buffer in its
 * line-table reader on the first minute of that fuzzing.  The file is opened through safe_open and
 * read, not mapped (a file truncated under us cannot raise SIGBUS).
 */
#ifndef PROF_SYM_DWARF_LINES_H
#define PROF_SYM_DWARF_LINES_H

#include <stddef.h>
#include <stdint.h>

#include "util/dwcursor.h"

#define DWLINES_MAX_BYTES	 (8ULL << 30)	/* the file (safe_open's cap for ELF files) */
#define DWLINES_MAX_SECTION	 (512ULL << 20) /* .debug_line and its strings, each, inflated */
#define DWLINES_MAX_ROWS	 (16u << 20)	/* rows kept (16 bytes each) */
#define DWLINES_MAX_FILES	 (1u << 20)	/* file names kept */
/* The inlined calls' index (sym/dwarf_inline.h), at most, per file: past it, calls are left out. */
#define DWLINES_MAX_INLINE_BYTES (64ULL << 20)
#define DWLINES_MAX_INLINE	 64 /* levels of one address */

struct dwlines;
struct Elf;

/*
 * The line table of debug file path: -ENOENT when it has none, -EFBIG over a cap.  Names in dwz's
 * alternate file are read from the one found under debug_dir (sym/dwarf_alt.h; NULL: not looked
 * for).
 */
int dwlines__open(struct dwlines **out, const char *path, const char *debug_dir);
/* The same for an open ELF file (a mapped file's own DWARF); the caller still owns fd. */
int dwlines__open_fd(struct dwlines **out, int fd, const char *debug_dir);
/* The same with alt_fd taken as its alternate file, unchecked (tests and fuzzing). */
int dwlines__open_alt(struct dwlines **out, int fd, int alt_fd);
void dwlines__free(struct dwlines *d);
/* The heap bytes it holds (for the symbolizer's cap). */
uint64_t dwlines__bytes(const struct dwlines *d);
/*
 * The source file and line of ELF virtual address vaddr: 0 and *file (valid while d lives) and
 * *line, or -ENOENT when no line covers it.
 */
int dwlines__lookup(struct dwlines *d, uint64_t vaddr, const char **file, int *line);

/* A level of the inlined calls at an address. */
struct dwlines_frame {
	const char *name; /* as DWARF has it (a linkage name is mangled); NULL: the symbol's */
	const char *file; /* NULL when unknown */
	int line;	  /* 0 when unknown */
};

/*
 * The functions inlined at vaddr, innermost first, into out[0..*n): each named, with the file
 * and line vaddr is at in it (the innermost: the line table's; the others: where the one inside
 * was called from); out[*n - 1] has no name: the call site in the function the symbol names.
 * 0, or -ENOENT when vaddr is in no inlined call (*n 0).  Levels without a name (their origin in
 * a dwz alternate file not found, or malformed) are left out and counted (dwlines__unnamed).
 */
int dwlines__inlined(struct dwlines *d, uint64_t vaddr, struct dwlines_frame *out, unsigned max,
		     unsigned *n);
uint64_t dwlines__unnamed(const struct dwlines *d);

/* Section name's bytes, decompressed if compressed (capped: *err -EFBIG), or an empty reader. */
struct cur dwlines__section(struct Elf *elf, size_t shstrndx, const char *name, int *err);

#endif /* PROF_SYM_DWARF_LINES_H */
