/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The kernel-side view the BPF unwinder reads (include/prof_unwind.h), kept up to date for every
 * target process:
 *   - prof_unwind_tables (HASH_OF_MAPS, table id -> inner ARRAY of 16 KiB chunks): one unwind
 *     table per distinct file content, built once (user/unwind/unwind_table.c) and shared by every
 *     process and container mapping that file.  Two files with identical tables (the same
 *     library in two containers, which overlayfs shows with other dev/inode) share one inner map.
 *   - prof_unwind_procs (HASH, tgid -> struct prof_unwind_proc): a process's executable
 *     mappings with the table and bias of each (table id 0: frame pointers).
 * Tables are built by one worker thread; the caller's thread never waits for a build: a process's
 * entry is written at once with table id 0 for files still building and rewritten by
 * unwinder__poll when their tables are loaded.  Files are opened through /proc/PID/map_files
 * (user/safe_open.h), identified by (dev, inode, size, mtime); the vDSO is read from process
 * memory and identified by its content.  A file that yields no table (no CFI, over a cap, refused)
 * is remembered and counted once, not rebuilt while remembered.
 * Bounded for days: each table counts the process records mapping its files; one no process
 * maps joins an LRU of unused tables and is unloaded past its caps (its id reused, its file
 * records forgotten: rebuilt if mapped again); file records no process maps are forgotten past
 * theirs.  The eviction order that keeps the BPF side from ever reading a reused id through a
 * stale entry is explained above evict_pass in bpf_tables.c.
 * Not thread-safe: every call but the worker's own work runs on the caller's thread.
 */
#ifndef PROF_UNWINDER_H
#define PROF_UNWINDER_H

#include <stdint.h>

#include "prof_common.h"
#include "proc/maps.h"
#include "sym/python.h"
#include "unwind/unwind_table.h"

struct unwinder;
struct maps;

/* PROF_UNWINDER_STATS as a struct (every member listed there, so the report prints it). */
#define UNWINDER_STAT_FIELD(f, n, d, k) uint64_t f;
struct unwinder_stats {
	PROF_UNWINDER_STATS(UNWINDER_STAT_FIELD)
};
#undef UNWINDER_STAT_FIELD

/* CPython's code_dealloc in a process: a mapping of its file (an entry of the process's maps:
 * its path not set) and its offset in that file. */
struct unwinder_py_code {
	struct maps_entry map;
	uint64_t offset;
};

struct unwinder_opts {
	int procs_fd;	       /* prof_unwind_procs (dup'd: the caller keeps its own fd) */
	int tables_fd;	       /* prof_unwind_tables (dup'd likewise) */
	int files_fd;	       /* prof_unwind_files (dup'd likewise); 0 or -1: none */
	const char *proc_root; /* "/proc" when NULL */
	struct unwind_table_opts table_opts; /* caps per file (0: unwind_table's defaults) */
	/*
	 * Builds queued at once (each holds an open file; 0: 64).  Files past it wait, known but
	 * closed, and are opened again through a process mapping them when room is made.
	 */
	uint32_t max_queued;
	/*
	 * Tables no process maps any more stay loaded for when one maps the file again, the
	 * least recently used unloaded past these caps (0: 256 tables, 64 MiB of chunks): their
	 * ids are reused, their files rebuilt when mapped again.  The vDSO's stays.
	 */
	uint32_t max_unused_tables;
	uint64_t max_unused_bytes;
	/*
	 * Kernel memory of all loaded tables, in use or not (0: UNWINDER_TABLE_BYTES;
	 * --unwind-memory).  A table that does not fit once the unused ones are unloaded is not
	 * loaded: its file is left to frame pointers (tables_over_budget).
	 */
	uint64_t max_table_bytes;
	/* Records of files no process maps (no table, a failed build, or one sharing a table
	 * still in use), the least recently used forgotten past this (0: 4096). */
	uint32_t max_idle_files;
	/*
	 * Test seam: called on the worker thread before each build, so a test can hold a build
	 * in progress and check that the caller's thread goes on.  NULL in the product.
	 */
	void (*build_hook)(void *arg);
	void *build_hook_arg;
	/*
	 * Told (on the caller's thread) when the CPython that a process's entry describes changes:
	 * v its version's layout (NULL: none any more), py its runtime addresses (&_PyRuntime,
	 * &PyCode_Type, …), so that whoever names Python frames and threads (the symbolizer) knows
	 * how to read that process's interpreter.  code: where its code_dealloc lies (NULL: not
	 * found).  Returns true when code_dealloc is probed for pid from now on: the entry then
	 * lets BPF cache code objects for it (prof_py_proc.code_watch).  NULL: nobody is told.
	 */
	bool (*on_python)(void *arg, uint32_t pid, const struct py_version *v,
			  const struct prof_py_proc *py, const struct unwinder_py_code *code);
	void *on_python_arg;
	/* Build at the caller's priority, not in the background (util/bgprio.h), until the first
	 * builds are in and none is queued: a start that does not wait for them (wide scopes). */
	bool catch_up;
};

/*
 * Default budget of max_table_bytes: 512 MiB, about 2,000 tables the size of libc's (240 KiB),
 * or 16 of the largest a file may have (32 MiB).  A process mapping python3.11, libc and
 * libstdc++ needs about 1 MiB of them.
 */
#define UNWINDER_TABLE_BYTES (512ull << 20)

/* Largest vDSO image read from a process (it is 8 KiB on x86_64 today). */
#define UNWINDER_VDSO_MAX (256u << 10)

/* Starts the worker thread.  -errno when it cannot (the maps are not touched). */
int unwinder__new(struct unwinder **out, const struct unwinder_opts *opts);
/* Stops and joins the worker, closes our map fds.  Loaded tables and entries stay in the maps
 * (they belong to the caller's maps, destroyed with them). */
void unwinder__free(struct unwinder *u);

/*
 * Write pid's entry in prof_unwind_procs from its mappings m (the tracker's read at the event;
 * NULL: read them now under opts' proc_root), queueing the files whose tables are not known yet.
 * Called when a process is first seen and again after exec or dlopen (the entry is replaced).
 * -ESRCH/-ENOENT when the process is gone; -ENOSPC when the process map is full (counted).
 * Never waits for a build.
 */
int unwinder__add_process(struct unwinder *u, uint32_t pid, const struct maps *m);
/* Forget pid and delete its entry (exit).  -ENOENT when it was not known. */
int unwinder__remove_process(struct unwinder *u, uint32_t pid);

/*
 * Queue the file open on fd (dup'd; the caller keeps fd) before any process maps it, e.g. the
 * libraries of a command about to start; path names it in messages (may be NULL).  0 also when
 * the file is already known.
 */
int unwinder__prepare(struct unwinder *u, int fd, const char *path);

/*
 * Load the tables the worker finished, and rewrite the entries of the processes mapping their
 * files.  Never blocks on a build; meant to be called often by the event loop.  Returns the
 * number of tables that became ready (loaded or shared), or -errno for a failure of our own
 * (allocation); kernel refusals are counted, not returned.  Unloads the unused tables and
 * forgets the idle file records past their caps (after processes were removed or re-read).
 */
int unwinder__poll(struct unwinder *u);
/* Processes are held until the builds queued are in (true) or not any more (false): the worker
 * runs at the caller's priority meanwhile instead of in the background (util/bgprio.h). */
void unwinder__set_urgent(struct unwinder *u, bool urgent);

/* Poll until no build is queued or running and every result is loaded, or -ETIMEDOUT after
 * timeout_ms (session start, tests). */
int unwinder__wait(struct unwinder *u, int timeout_ms);

/* Builds queued, running or waiting for room in the queue (0 once everything is loaded). */
uint32_t unwinder__pending(const struct unwinder *u);
const struct unwinder_stats *unwinder__stats(const struct unwinder *u);
/* The first files whose table could not be built and why, escaped ("" when none). */
const char *unwinder__build_failed(const struct unwinder *u);

#endif /* PROF_UNWINDER_H */
