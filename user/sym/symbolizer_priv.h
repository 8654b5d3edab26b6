/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside the symbolizer: its state, shared by symbolizer.c (processes, mappings, resolving) and
 * symbolizer_debug.c (debug files fetched from debuginfod).  Nothing else includes this.
 */
#ifndef PROF_SYMBOLIZER_PRIV_H
#define PROF_SYMBOLIZER_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "prof_python.h"
#include "sym/symbolizer.h"
#include "sym/symfiles.h"

struct dbgfetch;
struct kallsyms;
struct perfmap;
struct pynames;
struct strpool;

enum map_kind {
	MAP_FILE,    /* a path we can open */
	MAP_VDSO,    /* "[vdso]": the kernel's image, the same as ours */
	MAP_ANON,    /* anonymous or "[anon:…]", "[heap]": JIT code, via the perf map */
	MAP_SPECIAL, /* "[vsyscall]" and the like: a name only */
};

struct proc_map {
	uint64_t start, end, offset;
	const char *path; /* interned; without " (deleted)" */
	enum map_kind kind;
	struct sym_file *file; /* MAP_FILE (NULL when it could not be opened), MAP_VDSO; a ref */
	struct file_key key;   /* MAP_FILE: the maps line's (dev, inode), to open it again */
	bool deleted;
	bool reload_failed; /* evicted and could not be opened again: not retried until a reload */
};

struct sym_proc {
	const char *comm;      /* interned */
	struct proc_map *maps; /* executable mappings, by start */
	size_t nmaps;
	bool load_tried; /* a load was attempted since the last forget */
	bool loaded;	 /* maps read since the last forget */
	bool gone;	 /* maps could not be read: the process exited */
	bool reread;	 /* maps re-read since the last load */
	uint64_t resolves, reread_at, reread_every;
	struct hashmap *unknown; /* uint64_t addr -> char: outside every mapping after a re-read */
	struct perfmap *perfmap;
	int perfmap_cand;      /* which candidate it came from (load_perfmap) */
	uint64_t perfmap_size; /* its size then: a larger file has new entries */
	bool perfmap_checked;
	uint64_t perfmap_checked_at;
	bool uid_known;
	bool perfmap_refused; /* said and counted once per process */
	uid_t uid;	      /* owner of the process: its perf map must be this user's or root's */
	struct pynames *py;   /* its CPython's frame and thread names (symbolizer__set_python) */
	struct prof_py_proc py_proc; /* its CPython as the walker has it (version 0: none) */
};

/* Mappings are shared by every result that falls in them; compared by interned pointers. */
struct mapping_key {
	uint64_t start, limit, offset;
	const char *path, *build_id;
	uint64_t has_symbols;
};

struct symbolizer {
	char *proc_root, *kallsyms_path, *perfmap_dir, *debug_dir;
	/* Every string a result or a record holds: swept by symbolizer__sweep. */
	struct strpool *pool;
	struct symfiles files;	  /* the ELF files processes map, loaded by an LRU */
	struct hashmap *procs;	  /* uint64_t pid -> struct sym_proc * */
	struct hashmap *mappings; /* mapping_key -> struct sym_mapping * */
	struct hashmap *display;  /* interned raw name -> interned demangled name */
	struct kallsyms *ksyms;
	bool ksyms_tried;
	struct sym_mapping kernel_map;
	struct symbolizer_stats stats;
	struct dbgfetch *fetch; /* debuginfod (symbolizer_opts.debuginfod), NULL when off */
	uint64_t debug_refused; /* fetched debug files not used (counted in debuginfod_failed) */
	bool no_inline;		/* symbolizer_opts.no_inline */
	/* The inlined calls of the last user address resolved (symbolizer__inlined). */
	struct sym_result inl[SYM_MAX_INLINE];
	unsigned ninl;
};

/* The parts of symbolizer.c that symbolizer_debug.c uses. */
const struct sym_mapping *symbolizer_mapping(struct symbolizer *s, const struct proc_map *m,
					     const struct sym_file *f, bool has_symbols);
/* addr of file mapping m named by f's symbols (out->name NULL when none covers it); *vaddr: its
 * ELF virtual address (0 when f is not loaded). */
int symbolizer_file_symbol(struct symbolizer *s, const struct proc_map *m, struct sym_file *f,
			   uint64_t addr, uint64_t *vaddr, struct sym_result *out);
int symbolizer_offset_name(struct symbolizer *s, const struct proc_map *m, const struct sym_file *f,
			   uint64_t addr, uint64_t vaddr, struct sym_result *out);
/* The source file and line of vaddr in loaded file f, from its DWARF (a debug file's or its
 * own), into out (nothing when unknown), and the calls inlined there into s->inl.  0 or -ENOMEM. */
int symbolizer_line(struct symbolizer *s, struct sym_file *f, uint64_t vaddr,
		    struct sym_result *out);
/* Display name of an interned raw name (demangled, cached); NULL: -ENOMEM. */
const char *symbolizer_display_name(struct symbolizer *s, const char *raw);
/* f's frames need names: ask debuginfod for its debug file, once. */
int symbolizer_want_debug(struct symbolizer *s, struct sym_file *f);

#endif /* PROF_SYMBOLIZER_PRIV_H */
