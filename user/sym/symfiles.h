/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The symbolizer's ELF files: one record per file content, found by the (dev, inode) of a maps
 * line or by build id, shared by every process mapping it, opened through safe_open (hostile
 * files are refused and counted) and kept loaded by an LRU capped in count and in symbol bytes;
 * an evicted file is opened again, through a process that maps it, when an address needs it.
 * Our own vDSO stands for every target's "[vdso]" of its size.
 */
#ifndef PROF_SYM_SYMFILES_H
#define PROF_SYM_SYMFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc/maps.h"
#include "sym/elf_file.h"
#include "sym/symbolizer.h"
#include "util/hashmap.h"

/*
 * The defaults of symbolizer_opts.max_files / max_file_bytes.  A C program maps 10-40 files, but
 * `import torch` alone maps 316 (its extension modules and libraries); their tables
 * (elf_file__bytes, measured here without debug files) run from 17 KiB (libz) through 280 KiB
 * (libc) and 680 KiB (libstdc++) to 7.4 MiB (libjvm).  The count cap once was 256: below one
 * torch process's files, whose symbols the LRU then evicted and read again in a cycle (1,911
 * reloads in a 4 s training loop).  1024 files hold a few big processes' libraries, and the
 * byte cap bounds a host of big ones.
 */
#define DEFAULT_MAX_FILES      1024
#define DEFAULT_MAX_FILE_BYTES (256ULL << 20)

struct file_key {
	uint32_t major, minor;
	uint64_t inode;
};

enum file_state {
	FILE_NONE,    /* not an ELF file, or refused: nothing to load, ever */
	FILE_LOADED,  /* its symbols are in memory (on the LRU list, unless fixed) */
	FILE_EVICTED, /* an ELF file the LRU unloaded: opened again when an address needs it */
};

/*
 * One ELF file (or a set of files of one build id), shared by every process mapping it.  The
 * record lives while a process's maps name it (refs) or while it is loaded; its symbols are
 * loaded while the LRU keeps them.
 */
struct dwbuild;
struct dwlines;

struct sym_file {
	struct elf_file *elf; /* FILE_LOADED only */
	enum file_state state;
	bool fixed;	  /* the vDSO: loaded once, never evicted, never on the LRU */
	bool has_symbols; /* as last loaded: kept while evicted, so mapping records stay one */
	char *build_id;	  /* owned; "" when none */
	uint64_t bid_hash;
	bool in_build_ids;     /* registered in symfiles.build_ids under bid_hash */
	bool debug_asked;      /* its debug file was asked of debuginfod (symbolizer) */
	struct dwlines *lines; /* its DWARF lines (symfiles__lines), while loaded */
	bool lines_tried;
	bool lines_wanted; /* being built (symfiles.defer_lines): taken at symfiles__read_wanted */
	size_t bytes;	   /* elf_file__bytes while loaded */
	unsigned refs;	   /* proc_map entries naming it */
	struct file_key *keys; /* its entries in symfiles.files */
	size_t nkeys;
	struct sym_file *newer, *older; /* LRU list of loaded files */
};

/* A debug file fetched for a build id (symfiles__debug_file); both strings owned. */
struct symfiles_fetched {
	char *build_id, *path;
};

/* Embedded in the symbolizer; the fields are symfiles.c's. */
struct symfiles {
	const char *proc_root, *debug_dir; /* the symbolizer's */
	struct symbolizer_stats *stats;	   /* the symbolizer's: files_refused, files_evicted */
	struct hashmap *files;		   /* file_key -> struct sym_file * */
	struct hashmap *build_ids;	   /* uint64_t hash of the build id -> struct sym_file * */
	struct hashmap *fetched; /* uint64_t hash of the build id -> struct symfiles_fetched */
	struct sym_file *newest, *oldest; /* the LRU of loaded files */
	size_t nloaded, nrecords;
	uint64_t loaded_bytes;
	size_t max_files;
	uint64_t max_file_bytes;
	/* A file's DWARF is indexed on build's thread, not at the first ask (a worker runs), and
	 * taken by symfiles__read_wanted. */
	bool defer_lines;
	struct dwbuild *build;
	struct sym_file vdso;
	uint64_t vdso_size;
	bool vdso_tried;
};

/* Empty, with the symbolizer's roots and counters (borrowed) and caps (0: the defaults).  0 or
 * -ENOMEM; symfiles__fini either way. */
int symfiles__init(struct symfiles *fc, const char *proc_root, const char *debug_dir,
		   size_t max_files, uint64_t max_file_bytes, struct symbolizer_stats *stats);
/* Once no process holds a file (symfiles__put). */
void symfiles__fini(struct symfiles *fc);
/*
 * The file behind file mapping e of pid (root_fd: its root, -1 when gone), loaded, with a
 * reference taken; *out NULL when nothing could be opened (a later load tries again).  0 or
 * -ENOMEM.
 */
int symfiles__get(struct symfiles *fc, struct sym_file **out, uint32_t pid,
		  const struct maps_entry *e, int root_fd);
/* Drop a reference symfiles__get took (NULL and the vDSO: nothing). */
void symfiles__put(struct symfiles *fc, struct sym_file *f);
/* Our vDSO when a target's "[vdso]" of size is the same image, else NULL.  No reference. */
struct sym_file *symfiles__vdso(struct symfiles *fc, uint64_t size);
/* f was used now (a resolve): the last to be evicted. */
void symfiles__touch(struct symfiles *fc, struct sym_file *f);
/* Evicted f, needed again: opened through pid's maps line e.  -ENOENT (or -ESTALE: another
 * build now) when that is no longer possible; -ENOMEM. */
int symfiles__reload(struct symfiles *fc, struct sym_file *f, uint32_t pid,
		     const struct maps_entry *e, int root_fd);

/*
 * The source lines of loaded file f's debug file (local or fetched), else of its own DWARF (a
 * file built with -g, not stripped: read from the fd elf_file kept), opened at the first ask
 * and counted in the byte cap with its symbols; NULL when it has none.  Dropped with them.
 */
struct dwlines *symfiles__lines(struct symfiles *fc, struct sym_file *f);
/*
 * Take the DWARF indexed since for files whose lines were asked for while deferred (symfiles.
 * defer_lines): fn(ctx, build id) for each loaded file that has some now.  0 or what fn
 * returned.
 */
int symfiles__read_wanted(struct symfiles *fc, int (*fn)(void *ctx, const char *bid), void *ctx);
/* Until every file asked for is indexed (the run's end). */
void symfiles__wait_lines(struct symfiles *fc);
/* The record of build id bid (lowercase hex), or NULL. */
struct sym_file *symfiles__find_build_id(struct symfiles *fc, const char *bid);
/*
 * The debug file at path was fetched for build id bid: used now by the loaded file of that
 * build id that lacks full symbols (elf_file__use_debug_file), and whenever it is opened again.
 * *used: a record of that build id will name its frames from it.  0, -ENOMEM, or the error the
 * file was refused for (still remembered: the next open of the file tries it again).
 */
int symfiles__debug_file(struct symfiles *fc, const char *bid, const char *path, bool *used);

#endif
