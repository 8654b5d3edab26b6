/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Address -> (file mapping, function) for user and kernel addresses.
 * Maps are read from <proc>/PID/maps when a pid is loaded and again when an address falls
 * outside every known mapping; ELF files are opened through <proc>/PID/map_files (else
 * <path> resolved inside <proc>/PID/root: other mount namespaces work, and a target cannot point
 * us at a host file; safe_open.h) and cached per (dev, inode); their symbols are read with libelf
 * (.symtab, then .dynsym) while the process is alive, so resolving works after it exits.
 * Kernel addresses come from /proc/kallsyms, JIT code from /tmp/perf-PID.map.
 */
#ifndef PROF_SYMBOLIZER_H
#define PROF_SYMBOLIZER_H

#include <stdbool.h>
#include <stdint.h>

struct hashmap;
struct symbolizer;

struct sym_mapping {
	uint64_t start, limit, offset; /* runtime range and file offset, as in /proc/PID/maps */
	const char *path;	       /* as the target sees it; "[kernel.kallsyms]" for kernel */
	const char *build_id;	       /* lowercase hex from .note.gnu.build-id, "" if none */
	bool has_symbols;
};

struct sym_result {
	const char *name;	       /* demangled display name; NULL when unknown */
	const char *system_name;       /* raw symbol name; NULL when unknown */
	const char *file;	       /* source file when known, else NULL */
	uint64_t sym_addr;	       /* runtime address of the symbol's start (0 when unknown) */
	const struct sym_mapping *map; /* NULL when the address is in no mapping */
};

/* Files we refused to read (hostile or odd), and what we skipped in those we read. */
struct symbolizer_stats {
	uint64_t files_refused;		/* mapped files: not regular, too big, swapped */
	uint64_t perfmaps_refused;	/* perf maps: symlink, FIFO, device, wrong owner, too big */
	uint64_t perfmap_lines_skipped; /* lines too long, or past the entry cap */
};

struct symbolizer_opts {
	const char *proc_root;	 /* "/proc" unless a test points elsewhere */
	const char *kallsyms;	 /* "/proc/kallsyms" unless a test points elsewhere */
	const char *perfmap_dir; /* "/tmp" */
	const char *debug_dir;	 /* debug files: "/usr/lib/debug" when NULL, none when "" */
};

/* opts may be NULL for the defaults. */
int symbolizer__new(struct symbolizer **out, const struct symbolizer_opts *opts);
void symbolizer__free(struct symbolizer *s);
const struct symbolizer_stats *symbolizer__stats(const struct symbolizer *s);

/* Read the process's mappings and load symbols of its executable mappings now. */
int symbolizer__load_pid(struct symbolizer *s, uint32_t pid);
/* Forget a pid's mappings (after exec), keeping file caches. */
void symbolizer__forget_pid(struct symbolizer *s, uint32_t pid);
/* The process is gone for good (continuous mode): its entry goes too. */
void symbolizer__drop_pid(struct symbolizer *s, uint32_t pid);
/*
 * Free every mapping record (sym_result.map) not in used (a hashmap whose keys are
 * `const struct sym_mapping *`): continuous mode, once the stacks of forgotten processes are
 * gone, so mapping records do not pile up with every process that ever ran.
 */
void symbolizer__sweep_mappings(struct symbolizer *s, const struct hashmap *used);

/*
 * Resolve a user address in pid's address space.  Returns 0 and fills *out (strings valid until
 * symbolizer__free); out->name is NULL for an address that did not symbolize.  Never fails for
 * an unknown address — it reports it with out->map (possibly NULL) so the caller keeps it.
 */
int symbolizer__resolve_user(struct symbolizer *s, uint32_t pid, uint64_t addr,
			     struct sym_result *out);
int symbolizer__resolve_kernel(struct symbolizer *s, uint64_t addr, struct sym_result *out);

#endif /* PROF_SYMBOLIZER_H */
