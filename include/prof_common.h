/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Shared by every BPF program and the loader: ring-buffer record tags, limits and the drop
 * counters.  Fixed-width fields only; each record starts with its type tag.
 */
#ifndef PROF_COMMON_H
#define PROF_COMMON_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* User frames kept whole per stack, as a user counts them (a Python frame is one, in two words);
 * deeper stacks keep both ends around a cut frame (include/prof_stack.h). */
#define PROF_MAX_FRAMES	     1024
#define PROF_STACK_WORDS     (2 * PROF_MAX_FRAMES) /* words of a user stack in a record, at most */
/* Past PROF_MAX_FRAMES the walk goes on this far (words) for the root side, then stops. */
#define PROF_WALK_WORDS	     3584
/* Kernel frames: bpf_get_stack stops at kernel.perf_event_max_stack (127 by default) first. */
#define PROF_KERN_FRAMES     255
#define PROF_COMM_LEN	     16
#define PROF_MAX_TARGETS     65536 /* tgids in the filter set */
/*
 * The ring buffer every program writes (a power-of-two number of pages), unless --ring-buffer
 * says: PROF_RINGBUF_PER_CPU for each possible CPU, between PROF_RINGBUF_MIN and
 * PROF_RINGBUF_BYTES.  A smaller ring costs each record less (its lines stay in the caches):
 * on an AMD VM a 13-frame allocation's return program cost 1,273 ns at 1 MiB against 1,911 at
 * 16 (docs/benchmarks.md, *The ring buffer's size*).  Bursts wait in the backlog (ring__backlog),
 * a thread's copy of the records in memory, up to PROF_BACKLOG_BYTES unless --backlog says.
 */
#define PROF_RINGBUF_PER_CPU (256 << 10)
#define PROF_RINGBUF_MIN     (1 << 20)
#define PROF_RINGBUF_BYTES   (16 << 20)
#define PROF_RINGBUF_MAX_MIB 1024 /* --ring-buffer, at most */
#define PROF_BACKLOG_BYTES   (256ULL << 20)
#define PROF_BACKLOG_MAX_MIB 65536 /* --backlog, at most */

/* The ring's default size for ncpus possible CPUs (< 1: unknown, taken as 1). */
static inline __u32 prof_ringbuf_default(int ncpus)
{
	__u64 want = (__u64)(ncpus > 0 ? ncpus : 1) * PROF_RINGBUF_PER_CPU;
	__u32 b = PROF_RINGBUF_MIN;

	while (b < PROF_RINGBUF_BYTES && b < want)
		b <<= 1;
	return b;
}
/* Wake the consumer once a sixteenth of the ring is queued, or 256 KiB. */
#define PROF_WAKEUP_SHIFT 4
#define PROF_WAKEUP_MAX	  (256 << 10)

/* Executable mappings per process the unwinder knows (include/prof_unwind.h says why this
 * many); here because unwind_mappings_dropped's description names it. */
#define PROF_UNWIND_MAX_MAPPINGS 1024
#define PROF_STR_(x)		 #x
#define PROF_STR(x)		 PROF_STR_(x)

/* Tag at offset 0 of every ring-buffer record. */
enum prof_rec_type {
	PROF_REC_HEAP_ALLOC = 1,
	PROF_REC_HEAP_FREE,
	PROF_REC_HEAP_REALLOC,
	PROF_REC_PROC_FORK,
	PROF_REC_PROC_EXEC,
	PROF_REC_PROC_EXIT,
	PROF_REC_CALL_ENTRY,
	PROF_REC_CALL_RETURN,
	PROF_REC_CALL_NAME,
	PROF_REC_PROC_DLOPEN, /* the dynamic loader changed a target's link map (prof_proc_event) */
	PROF_REC_CPU_SAMPLE,  /* one cpu sample with its frames (include/prof_cpu.h) */
	/* The unwinder met a pc outside the process's known mappings (prof_proc_event): re-read */
	PROF_REC_UNWIND_MISS,
	/* Wide scopes: a process called _exit and is stopped (SIGSTOP) with its address space
	 * intact: everything it sent before is consumed by now; resume it (SIGCONT). */
	PROF_REC_PROC_EXIT_HOLD,
	PROF_REC_OFFCPU, /* a thread's time off the CPU with its frames (include/prof_offcpu.h) */
	/* An exception, import or log line a runtime reported (include/prof_calls.h) */
	PROF_REC_CALL_MARKER,
	PROF_REC_DUMP_THREAD, /* `dump`: one thread's state and frames (include/prof_dump.h) */
	/* A target that runs Python started a thread (prof_proc_event; tid: the new thread) */
	PROF_REC_PROC_THREAD,
	/* The OOM killer chose a process in scope (struct prof_oom_event) */
	PROF_REC_OOM_VICTIM,
};

/*
 * What a counter of the lists below counts (their last field): where users see it.
 *   DROP   data lost or doubtful: listed under "drops" (text, svg, live, pprof comments).
 *   EVENT  a total of what happened, not a loss (Python frames read, frees of blocks allocated
 *          before attach): pprof comments, never under "drops".
 *   BOOK   our own bookkeeping (tables built, their kernel memory, ms spent): only the -v log,
 *          as `go tool pprof -raw`'s header is read by users who did not ask for it.
 */
enum prof_counter_kind {
	PROF_KIND_DROP,
	PROF_KIND_EVENT,
	PROF_KIND_BOOK,
};

/*
 * Every way data can be lost, counted per CPU in BPF and printed by userspace.
 * X(enum suffix, short name, what it means, kind)
 */
/* How far ahead userspace opens the exit-hold gate at each turn of its loop (bpf/proc.bpf.c). */
#define PROF_HOLD_GATE_NS (300 * 1000000ULL)

#define PROF_COUNTERS(X)                                                                           \
	X(RINGBUF_FULL, "ringbuf_full", "events dropped: ring buffer full (see --ring-buffer)",    \
	  DROP)                                                                                    \
	X(PENDING_FULL, "pending_full",                                                            \
	  "allocations dropped: no memory for the thread's heap state (task storage)", DROP)       \
	X(PENDING_MISSING, "pending_missing", "returns without a recorded entry", DROP)            \
	X(PENDING_JOINED, "pending_joined",                                                        \
	  "returns of calls entered before their process joined the cgroup (not lost: not in "     \
	  "scope then)",                                                                           \
	  EVENT)                                                                                   \
	X(STACK_FAIL, "stack_fail", "stacks lost: stack capture failed", DROP)                     \
	X(SAMPLED_FULL, "sampled_full",                                                            \
	  "sampled allocations counted but not tracked live: address map full", DROP)              \
	X(SAMPLED_PROC_CAP, "sampled_proc_cap",                                                    \
	  "sampled allocations counted but not tracked live: their process held its quarter of "   \
	  "the address map (that process's in-use values are then low)",                           \
	  DROP)                                                                                    \
	X(HEAP_READ_FAIL, "heap_read_fail",                                                        \
	  "posix_memalign results unreadable (block not counted)", DROP)                           \
	X(CXX_NEW_LOST, "cxx_new_lost",                                                            \
	  "operator new calls whose block was never seen (it called no probed allocator)", DROP)   \
	X(OTEL_ARG_FAIL, "otel_arg_fail",                                                          \
	  "otel_memory probe firings whose arguments the USDT spec could not fetch (not counted)", \
	  DROP)                                                                                    \
	X(SAMPLER_LOST, "sampler_lost",                                                            \
	  "--heap: allocations our preloaded sampler drew but could not track (its 65,536 live "   \
	  "sampled blocks full): not seen",                                                        \
	  DROP)                                                                                    \
	X(CXX_THROWS, "cxx_throws",                                                                \
	  "operator new calls ended by an exception (bad_alloc; not counted as allocations)",      \
	  EVENT)                                                                                   \
	X(TARGETS_FULL, "targets_full", "child processes not followed: target map full", DROP)     \
	X(CALL_NAME_FULL, "call_name_full", "call names not interned: name map full", DROP)        \
	X(CALL_READ_FAIL, "call_read_fail", "call events with unreadable arguments", DROP)         \
	X(CALL_ARG_FAIL, "call_arg_fail", "call probe arguments the USDT spec could not fetch",    \
	  DROP)                                                                                    \
	X(CALL_LOST_FULL, "call_lost_full",                                                        \
	  "threads whose dropped call events could not be flagged (lost-thread map full)", DROP)   \
	X(MARKER_LOST, "marker_lost",                                                              \
	  "markers (exceptions, imports, logs) dropped: ring buffer full", DROP)                   \
	X(MARKER_READ_FAIL, "marker_read_fail",                                                    \
	  "markers whose text was unreadable (written without it)", DROP)                          \
	X(CALL_BUSY_COARSE, "call_busy_coarse",                                                    \
	  "call events whose busy clock is the scheduler's, up to a tick behind (switch not "      \
	  "seen)",                                                                                 \
	  EVENT)                                                                                   \
	X(UNWIND_NO_MAPPING, "unwind_no_mapping",                                                  \
	  "stacks cut: a pc in no known mapping, and no frame pointer to go on", DROP)             \
	X(UNWIND_NO_TABLE_YET, "unwind_no_table_yet",                                              \
	  "stacks cut: a file whose unwind table was still being built, and no frame pointer to "  \
	  "go on",                                                                                 \
	  DROP)                                                                                    \
	X(UNWIND_NO_TABLE_NEVER, "unwind_no_table_never",                                          \
	  "stacks cut: a file without a usable unwind table (no CFI, refused, over a cap, no row " \
	  "for the pc), and no frame pointer to go on",                                            \
	  DROP)                                                                                    \
	X(UNWIND_UNSUPPORTED, "unwind_unsupported", "stacks cut: an unwind rule we cannot follow", \
	  DROP)                                                                                    \
	X(UNWIND_READ_FAULT, "unwind_read_fault", "stacks cut: stack memory unreadable", DROP)     \
	X(UNWIND_CFA_STUCK, "unwind_cfa_stuck", "stacks cut: the stack pointer did not grow",      \
	  DROP)                                                                                    \
	X(UNWIND_DEPTH, "unwind_depth",                                                            \
	  "stacks deeper than 1024 frames: middle cut out, ends kept (a frame [N frames cut])",    \
	  DROP)                                                                                    \
	X(UNWIND_CUT_FRAMES, "unwind_cut_frames", "frames cut out of those stacks", EVENT)         \
	X(UNWIND_WALK_BOUND, "unwind_walk_bound",                                                  \
	  "of those, stacks deeper than the walk's bound (3584 words): their root not reached",    \
	  DROP)                                                                                    \
	X(UNWIND_FP_FRAMES, "unwind_fp_frames",                                                    \
	  "frames walked by frame pointer (no unwind table for their file)", EVENT)                \
	X(UNWIND_WALKS_CACHED, "unwind_walks_cached",                                              \
	  "stacks not walked again: a kept walk from the same registers whose stack words all "    \
	  "held (the walk cache)",                                                                 \
	  BOOK)                                                                                    \
	X(EXIT_HOLD_FAIL, "exit_hold_fail",                                                        \
	  "exiting processes not held for symbolization (consumer busy, signal refused)", DROP)    \
	X(EXEC_HOLD_FAIL, "exec_hold_fail",                                                        \
	  "first execs of an executable not held for its probes (consumer busy, signal refused)",  \
	  DROP)                                                                                    \
	X(DLOPEN_HOLD_FAIL, "dlopen_hold_fail",                                                    \
	  "dlopens not held for their unwind table (consumer busy, signal refused, a terminal's "  \
	  "job)",                                                                                  \
	  DROP)                                                                                    \
	X(DLOPEN_HOLDS_SPENT, "dlopen_holds_spent",                                                \
	  "dlopens not held for their unwind table: their process was held at 32 already "         \
	  "(frame pointers until the table is in; a stack cut meanwhile is unwind_no_table_yet)",  \
	  EVENT)                                                                                   \
	X(DLOPEN_UNHELD_OTEL, "dlopen_unheld_otel",                                                \
	  "dlopens not held for their unwind table: the process's heap comes from its "            \
	  "otel_memory probes and no other mode walks its stacks (frame pointers until the "       \
	  "table is in)",                                                                          \
	  EVENT)                                                                                   \
	X(HOLD_RATE_LIMITED, "hold_rate_limited",                                                  \
	  "execs and exits not held: their cgroup's holds for this second were spent "             \
	  "(--hold-rate)",                                                                         \
	  DROP)                                                                                    \
	X(PY_READ_FAIL, "py_read_fail",                                                            \
	  "Python frames unreadable (the native interpreter frame kept in their place), or their " \
	  "code objects (named later, else [python])",                                             \
	  DROP)                                                                                    \
	X(PY_FRAMES, "py_frames", "Python frames read from interpreters", EVENT)                   \
	X(PY_CODE_CACHED, "py_code_cached",                                                        \
	  "Python frames named from the per-CPU cache of code objects, not read again", BOOK)      \
	X(PY_CODE_FREED, "py_code_freed",                                                          \
	  "code objects freed in the processes that cache serves (each empties it for them)",      \
	  BOOK)                                                                                    \
	X(OFFCPU_FULL, "offcpu_full",                                                              \
	  "off-CPU periods not measured: the map of threads off the CPU was full (or busy)", DROP) \
	X(OFFCPU_DEEP_FULL, "offcpu_deep_full",                                                    \
	  "off-CPU stacks deeper than 255 words cut to 255 (ends kept): no room to keep them "     \
	  "whole (4096 threads off the CPU held one, or no memory)",                               \
	  DROP)                                                                                    \
	X(OFFCPU_UNSEEN, "offcpu_unseen_returns",                                                  \
	  "off-CPU periods whose end was never reported (timed by the thread's CPU time)", EVENT)  \
	X(OOM_LOST, "oom_lost",                                                                    \
	  "OOM kills of processes in scope not reported: ring buffer full (no profile written)",   \
	  DROP)                                                                                    \
	X(HEAP_TRAPS_OTEL, "heap_traps_otel",                                                      \
	  "allocator probe hits in processes on their own otel_memory probes (ignored: a file "    \
	  "still probed for every process; each hit is a trap the sampler did not save)",          \
	  EVENT)

#define PROF_CNT_ENUM(e, n, d, k) PROF_CNT_##e,
enum prof_counter { PROF_COUNTERS(PROF_CNT_ENUM) PROF_CNT__COUNT };
#undef PROF_CNT_ENUM

/*
 * Counted in userspace, printed beside the BPF counters: X(field, short name, what it means,
 * kind).
 * The field is the member of the aggregator's stats struct that holds the value; report.c
 * checks at compile time that every member of those structs is listed here.
 */
#define PROF_HEAP_STATS(X)                                                                       \
	X(unknown_frees, "unknown_frees",                                                        \
	  "frees of blocks never seen allocated (before attach, or inside libc)", EVENT)         \
	X(failed_allocs, "failed_allocs", "allocations that returned NULL", EVENT)               \
	X(replaced_live, "replaced_live", "blocks handed out again before their free was seen",  \
	  DROP)                                                                                  \
	X(no_stack, "no_stack", "allocations kept without a stack", DROP)                        \
	X(exec_released, "exec_released",                                                        \
	  "live blocks ended by their process's exec (freed, not leaked)", EVENT)                \
	X(live_capped, "live_capped",                                                            \
	  "allocations counted but not tracked live: their process had 1 Mi live blocks "        \
	  "tracked, or all had 4 Mi (that process's in-use values are then low; the block's "    \
	  "free is an unknown free)",                                                            \
	  DROP)                                                                                  \
	X(size_filtered, "size_filtered",                                                        \
	  "allocations outside --min-size/--max-size, left out (their frees are unknown frees)", \
	  EVENT)

#define PROF_CALL_STATS(X)                                                                         \
	X(entries, "call_entries", "function entries seen", EVENT)                                 \
	X(returns, "call_returns", "function returns seen", EVENT)                                 \
	X(return_only, "call_return_only", "calls seen only by their return (callers unknown)",    \
	  DROP)                                                                                    \
	X(outer_returns, "call_outer_returns",                                                     \
	  "returns of frames entered before the thread was seen", DROP)                            \
	X(unwound_frames, "call_unwound_frames",                                                   \
	  "frames closed without their own return (exceptions)", EVENT)                            \
	X(mismatched_returns, "call_mismatched_returns",                                           \
	  "returns matching no open frame (ignored)", DROP)                                        \
	X(resyncs, "call_resyncs", "thread stacks restarted after lost events", DROP)              \
	X(unfinished_frames, "call_unfinished_frames",                                             \
	  "frames still open at thread exit or end (time kept, not counted as calls)", EVENT)      \
	X(depth_exceeded, "call_depth_exceeded", "entries deeper than the stack limit (not kept)", \
	  DROP)                                                                                    \
	X(clamped_times, "call_clamped_times", "timestamps going backwards (counted as 0 ns)",     \
	  DROP)                                                                                    \
	X(attach_window, "call_attach_window",                                                     \
	  "events of a running process before all its probes were attached (not used)", EVENT)     \
	X(names_over_cap, "call_names_over_cap",                                                   \
	  "function names past the 262144 kept at once: their calls unnamed", DROP)

/* Counted by the symbolizer (user/sym/symbolizer.c): foreign files it would not read. */
#define PROF_SYMBOLIZER_STATS(X)                                                            \
	X(files_refused, "files_refused",                                                   \
	  "mapped files not read: not regular, too large, or swapped", DROP)                \
	X(perfmaps_refused, "perfmaps_refused",                                             \
	  "perf maps not read: symlink, FIFO, device, other owner, or too large", DROP)     \
	X(perfmap_lines_skipped, "perfmap_lines_skipped",                                   \
	  "perf map lines skipped: too long, or too many", DROP)                            \
	X(files_evicted, "sym_files_evicted",                                               \
	  "symbol files unloaded by the LRU caps (opened again when needed)", BOOK)         \
	X(py_code_unreadable, "py_code_unreadable",                                         \
	  "Python frames whose code object could not be read (shown as [python])", DROP)    \
	X(debuginfod_fetched, "debuginfod_fetched",                                         \
	  "debug files received from debuginfod (or its cache)", EVENT)                     \
	X(debuginfod_missing, "debuginfod_missing",                                         \
	  "build ids no debuginfod server has (frames named by file offset)", EVENT)        \
	X(debuginfod_timeouts, "debuginfod_timeouts",                                       \
	  "debuginfod fetches cut at --debuginfod-timeout (frames by file offset)", DROP)   \
	X(debuginfod_failed, "debuginfod_failed",                                           \
	  "debuginfod fetches failed: server error, over the size cap, file refused", DROP) \
	X(inline_unnamed, "inline_unnamed",                                                 \
	  "inlined calls left out of stacks: no name (in a dwz alternate file)", DROP)

/* Counted by the unwind-table registry (user/unwind/unwinder.c). */
#define PROF_UNWINDER_STATS(X)                                                                    \
	X(tables_built, "unwind_tables_built", "unwind tables built and loaded into the kernel",  \
	  BOOK)                                                                                   \
	X(tables_shared, "unwind_tables_shared",                                                  \
	  "files whose unwind table equals one already loaded (one kernel copy)", BOOK)           \
	X(table_bytes, "unwind_table_bytes", "kernel memory of the loaded unwind tables (bytes)", \
	  BOOK)                                                                                   \
	X(table_build_failed, "unwind_table_build_failed",                                        \
	  "files without an unwind table (no CFI, over a cap, malformed): frame pointers", DROP)  \
	X(table_load_failed, "unwind_table_load_failed",                                          \
	  "unwind tables built but not loaded (table map full, kernel refused): frame pointers",  \
	  DROP)                                                                                   \
	X(tables_over_budget, "unwind_tables_over_budget",                                        \
	  "unwind tables not loaded: past --unwind-memory with no unused table left to unload: "  \
	  "frame pointers",                                                                       \
	  DROP)                                                                                   \
	X(files_refused, "unwind_files_refused",                                                  \
	  "mapped files or vDSOs not read for unwinding (swapped, not regular, too large)", DROP) \
	X(mappings_dropped, "unwind_mappings_dropped",                                            \
	  "executable mappings past the per-process limit (" PROF_STR(                            \
		  PROF_UNWIND_MAX_MAPPINGS) "): no unwinding there",                              \
	  DROP)                                                                                   \
	X(files_unpublished, "unwind_files_unpublished",                                          \
	  "unwind tables not findable by inode (file map full): only through process entries",    \
	  DROP)                                                                                   \
	X(procs_failed, "unwind_procs_failed",                                                    \
	  "process mappings not written to the kernel (process map full)", DROP)                  \
	X(build_ms, "unwind_build_ms", "wall time the worker spent building unwind tables (ms)",  \
	  BOOK)                                                                                   \
	X(load_waits, "unwind_load_waits",                                                        \
	  "kernel waits (an RCU grace period each) to insert unwind tables: one per batch", BOOK) \
	X(tables_evicted, "unwind_tables_evicted",                                                \
	  "unwind tables unloaded after no process mapped them (LRU; rebuilt if mapped again)",   \
	  BOOK)                                                                                   \
	X(evict_waits, "unwind_evict_waits",                                                      \
	  "kernel waits (an RCU grace period each) to unload unwind tables: one per batch", BOOK) \
	X(files_forgotten, "unwind_files_forgotten",                                              \
	  "records of files no process maps forgotten (LRU; read again if mapped again)", BOOK)   \
	X(python_refused, "python_refused",                                                       \
	  "Python interpreters whose memory contradicted their file: their stacks stay native",   \
	  DROP)

/* Counted by cgroup discovery (user/proc/cgroup.c): what a walk of the cgroup2 tree or a read
 * of cgroup files left out. */
#define PROF_CGROUP_STATS(X)                                                                     \
	X(walk_depth_cut, "cgroup_walk_depth_cut",                                               \
	  "cgroup directories not searched: deeper than 16 levels below the start", DROP)        \
	X(walk_dirs_cut, "cgroup_walk_dirs_cut", "cgroup walks stopped at 100000 directories",   \
	  DROP)                                                                                  \
	X(walk_open_failed, "cgroup_walk_open_failed",                                           \
	  "cgroup directories or cgroup.procs files not opened (removed during the walk)", DROP) \
	X(procs_lines_skipped, "cgroup_procs_lines_skipped",                                     \
	  "cgroup.procs lines that are not a pid, or past 4194304 lines", DROP)

/* Counted by the /proc/PID/maps parser (user/proc/maps.c), for every reader of it. */
#define PROF_MAPS_STATS(X)                                                                       \
	X(reads, "maps_reads",                                                                   \
	  "reads of /proc/PID/maps: one per process event, shared by all that need the maps",    \
	  BOOK)                                                                                  \
	X(reads_cut, "maps_reads_cut",                                                           \
	  "reads of /proc/PID/maps cut at 65536 lines or 16 MiB: mappings past the cut unknown " \
	  "(not symbolized, probed or unwound)",                                                 \
	  DROP)

/* The probes attached to files (user/attach/loader.c): bookkeeping, and the images a preloaded
 * sampler did not reach. */
#define PROF_ATTACH_STATS(X)                                                                    \
	X(links, "probe_links", "uprobe links attached now (allocators, calls, hooks)", BOOK)   \
	X(files_detached, "probe_files_detached",                                               \
	  "files whose probes were removed: nothing in scope maps them any more", EVENT)        \
	X(heap_procs_otel, "heap_procs_otel",                                                   \
	  "--heap: process images traced through their own otel_memory probes", EVENT)          \
	X(heap_procs_uprobes, "heap_procs_uprobes",                                             \
	  "--heap: process images traced through the allocator probes", EVENT)                  \
	X(heap_procs_own, "heap_procs_own",                                                     \
	  "--heap, wide scopes: process images moved onto allocator probes of their own (a "    \
	  "file they map serves a process on its otel_memory probes, which must not trap)",     \
	  EVENT)                                                                                \
	X(heap_own_late, "heap_own_late",                                                       \
	  "--heap, wide scopes: of those, forks and execs that ran before their own probes "    \
	  "were in (their first allocations in such files are not seen)",                       \
	  DROP)                                                                                 \
	X(heap_own_merged, "heap_own_merged",                                                   \
	  "--heap, wide scopes: of those, moved back onto the probes for every process (a "     \
	  "file probed per process came to be mapped by too many of them)",                     \
	  EVENT)                                                                                \
	X(heap_split_merged, "heap_split_merged",                                               \
	  "--heap, wide scopes: files probed per process that went back to the probes for "     \
	  "every process (more than 4 processes of their own would have mapped them)",          \
	  EVENT)                                                                                \
	X(heap_procs_unsampled, "heap_procs_unsampled",                                         \
	  "--heap -- CMD with our sampler preloaded: process images that never loaded it "      \
	  "(static, LD_PRELOAD cleared) or whose own allocator comes first: their allocations " \
	  "not seen (--no-preload sees them)",                                                  \
	  DROP)                                                                                 \
	X(heap_session_files, "heap_session_files",                                             \
	  "--heap --sample-bytes: files probed through one uprobe session link (an unsampled "  \
	  "call skips its return probe)",                                                       \
	  EVENT)                                                                                \
	X(heap_session_refused, "heap_session_refused",                                         \
	  "--heap --sample-bytes: files whose session link the kernel refused: an entry and a " \
	  "return probe per function instead",                                                  \
	  EVENT)                                                                                \
	X(heap_multi_files, "heap_multi_files",                                                 \
	  "--heap without sessions: files probed through uprobe_multi links (one per kind of "  \
	  "probe; detached in one batch)",                                                      \
	  EVENT)                                                                                \
	X(heap_multi_refused, "heap_multi_refused",                                             \
	  "--heap without sessions: files whose uprobe_multi links the kernel refused: a "      \
	  "uprobe per function instead",                                                        \
	  EVENT)                                                                                \
	X(otel_nop5_refused, "otel_nop5_refused",                                               \
	  "--heap: files whose otel_memory probes sit on 5-byte nops, not attached (Linux "     \
	  "6.18 turns them into calls that write below %rsp and crash forked children): "       \
	  "their processes take the allocator probes",                                          \
	  EVENT)

/* Counted by the report (user/writeout.c): profiles it could not write. */
#define PROF_REPORT_STATS(X)                                                                  \
	X(interval_writes_failed, "interval_writes_failed",                                   \
	  "interval profiles not built or not written to --output-dir (disk full, directory " \
	  "gone): lost",                                                                      \
	  DROP)

/* Counted by the OOM kill profiles' writer (user/oomout.c). */
#define PROF_OOM_STATS(X)                                                                        \
	X(kills, "oom_kills",                                                                    \
	  "processes in scope the OOM killer chose: a heap profile of each written at once "     \
	  "(<UTC time>.oom.<pid>.heap.pb.gz)",                                                   \
	  EVENT)                                                                                 \
	X(writes_failed, "oom_writes_failed",                                                    \
	  "OOM kill profiles not built or not written (disk full, directory gone): lost", DROP)  \
	X(unwatched, "oom_unwatched",                                                            \
	  "1: the kernel has no oom/mark_victim tracepoint (or refused it): OOM kills not seen", \
	  DROP)

/* Counted by the ring-buffer consumer (user/agg/collect.c). */
#define PROF_COLLECT_STATS(X)                                                                      \
	X(bad_records, "bad_records", "ring-buffer records not understood", DROP)                  \
	X(hold_timeouts, "hold_timeouts",                                                          \
	  "held processes resumed at the hold time limit before their work was done (1 s)", DROP)  \
	X(hold_gone, "hold_gone",                                                                  \
	  "holds whose process was gone or replaced (another start time) when read: not resumed",  \
	  DROP)                                                                                    \
	X(dlopen_holds, "dlopen_holds",                                                            \
	  "dlopens held (before the library's constructors) until its unwind table was in", EVENT) \
	X(dlopen_hold_timeouts, "dlopen_hold_timeouts",                                            \
	  "dlopens resumed at the 50 ms limit before the library's unwind table was in", DROP)     \
	X(stacks_capped, "stacks_capped",                                                          \
	  "allocations whose new stack was not kept: its process past 512 MiB of allocation "      \
	  "stacks, or all past 2 GiB (the allocation counts under [stacks capped])",               \
	  DROP)

/* Counted by the event-trace recorder (user/trace/evtrace.c, -f chrome / perfetto). */
#define PROF_TRACE_STATS(X)                                                                        \
	X(unmatched_returns, "trace_unmatched_returns",                                            \
	  "returns whose entry was not seen (entered before attach, or lost): skipped", DROP)      \
	X(unwound_frames, "trace_unwound_frames",                                                  \
	  "slices closed without their own return (exceptions), at the return that left them",     \
	  EVENT)                                                                                   \
	X(unfinished_frames, "trace_unfinished_frames",                                            \
	  "slices still open at thread exit, exec or the end: closed there", EVENT)                \
	X(depth_exceeded, "trace_depth_exceeded", "entries deeper than 4096 frames (not written)", \
	  DROP)                                                                                    \
	X(resyncs, "trace_resyncs", "thread stacks closed after lost events", DROP)                \
	X(before_attach, "trace_before_attach",                                                    \
	  "events of a running process before all its probes were in (skipped: half a call)",      \
	  DROP)                                                                                    \
	X(unnamed, "trace_unnamed",                                                                \
	  "events whose function name never arrived (written as [unknown function …])", DROP)      \
	X(heap_unknown_frees, "trace_heap_unknown_frees",                                          \
	  "frees of blocks allocated before the trace saw them: not in the heap counter, not "     \
	  "written (firefox)",                                                                     \
	  EVENT)                                                                                   \
	X(heap_untracked, "trace_heap_untracked",                                                  \
	  "allocations not followed: their process had 1 Mi live blocks followed, or all had 4 "   \
	  "Mi (its heap counter is then low, firefox shows them live to the end; their frees are " \
	  "trace_heap_unknown_frees)",                                                             \
	  DROP)

/* Counted by -f memtrace's recorder (user/trace/memtrace_rec.c): printed after the run and, but
 * the bookkeeping, written into the trace's context as field=value. */
#define PROF_MEMTRACE_STATS(X)                                                                     \
	X(allocs, "memtrace_allocs", "allocations traced", BOOK)                                   \
	X(collects, "memtrace_collects", "frees traced (collects)", BOOK)                          \
	X(unknown_frees, "memtrace_unknown_frees",                                                 \
	  "frees of blocks not in the trace (allocated before attach, past a cap)", EVENT)         \
	X(replaced_live, "memtrace_replaced_live",                                                 \
	  "blocks handed out again while live in the trace (free lost)", DROP)                     \
	X(no_stack, "memtrace_no_stack", "allocations traced without a backtrace", DROP)           \
	X(exec_released, "memtrace_exec_released",                                                 \
	  "objects collected because their process exec'd", EVENT)                                 \
	X(failed_allocs, "memtrace_failed_allocs",                                                 \
	  "allocations that returned NULL: nothing traced", EVENT)                                 \
	X(live_capped, "memtrace_live_capped",                                                     \
	  "objects traced but not followed: their process had 1 Mi objects live in the trace, or " \
	  "all had 4 Mi; never collected, a reader sees them live to the end (their frees are "    \
	  "memtrace_unknown_frees)",                                                               \
	  DROP)                                                                                    \
	X(untracked, "memtrace_untracked",                                                         \
	  "objects whose free BPF could not follow (sampled_proc_cap, sampled_full): never "       \
	  "collected, a reader sees them live to the end",                                         \
	  EVENT)

/* Counted by -f codetracer's source copies (user/trace/codetracer_trace.c): each source not
 * copied, by why.  Its path stays in the trace; each is also listed on stderr. */
#define PROF_CODETRACER_STATS(X)                                                                 \
	X(not_plain, "ct_source_not_plain",                                                      \
	  "sources not copied: not a plain absolute path (.., <frozen …>, <string>)")            \
	X(missing, "ct_source_missing",                                                          \
	  "sources not copied: no such file, or its process gone before it was read")            \
	X(denied, "ct_source_denied",                                                            \
	  "sources refused: not readable by the process that named them (its fsuid, groups)")    \
	X(kernel_fs, "ct_source_kernel_fs",                                                      \
	  "sources refused: on /proc, /sys, /dev or another kernel or FUSE file system")         \
	X(refused, "ct_source_refused",                                                          \
	  "sources refused: not a regular file, a magic link, or larger than 16 MiB")            \
	X(files_cap, "ct_source_files_cap", "sources not copied: past the 4096 files tried")     \
	X(bytes_cap, "ct_source_bytes_cap", "sources not copied: past 256 MiB of copies")        \
	X(stalled, "ct_source_stalled",                                                          \
	  "sources not copied: their opener answered nothing for 2 s (killed), or after 4 such") \
	X(failed, "ct_source_failed",                                                            \
	  "sources not copied: no opener started, or writing the copy failed")

/* Counted by the pusher (user/export/push.c), one profile each unless said otherwise. */
#define PROF_PUSH_STATS(X)                                                                        \
	X(submitted, "push_submitted", "profiles handed to --push", EVENT)                        \
	X(sent, "push_sent", "profiles the backend accepted", EVENT)                              \
	X(retried, "push_retried", "sends retried: connection error, timeout, 5xx or 429", EVENT) \
	X(failed, "push_failed",                                                                  \
	  "profiles not sent: refused by the backend (4xx), or out of tries with no spool", DROP) \
	X(spooled, "push_spooled", "profiles written to the spool (backend down, queue full)",    \
	  EVENT)                                                                                  \
	X(spool_sent, "push_spool_sent", "spooled profiles sent later", EVENT)                    \
	X(aged_out, "push_aged_out", "spooled profiles deleted unsent: older than an hour", DROP) \
	X(dropped, "push_dropped",                                                                \
	  "profiles lost: queue full without a spool, spool full or unwritable, spool file bad",  \
	  DROP)                                                                                   \
	X(auth_failed, "push_auth_failed",                                                        \
	  "sends refused with 401/403 (check the credentials); the profile kept in the spool",    \
	  DROP)                                                                                   \
	X(build_failed, "push_build_failed",                                                      \
	  "profiles or service parts not queued: splitting by service or encoding failed", DROP)  \
	X(series_folded, "push_series_folded",                                                    \
	  "services sent in the series \"other\": more services than series in one profile",      \
	  EVENT)                                                                                  \
	X(rejected, "push_rejected",                                                              \
	  "OTLP Profiles (a service's sample type) a partial_success rejected", DROP)             \
	X(sent_bytes, "push_sent_bytes", "profile bytes the backend accepted", EVENT)

/* murmur3's 64-bit finalizer: every input bit reaches every output bit. */
static inline __u64 prof_mix64(__u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb53a185ec87cULL;
	h ^= h >> 33;
	return h;
}

/* prof_proc_event.flags */
enum prof_proc_flags {
	/*
	 * Exit: the last thread of the process is leaving (signal->live reached 0).  The leader's
	 * exit is not that: a leader may pthread_exit while other threads run on.
	 */
	PROF_PROC_GROUP_DEAD = 1,
	/*
	 * Exec (wide scopes, holds on): the first exec of this executable (dev, ino) while the
	 * gate is open; the process is stopped (SIGSTOP) before its new image's first instruction
	 * until userspace has prepared the image (probes, hooks, tables) and resumes it.
	 */
	PROF_PROC_EXEC_HELD = 2,
	/*
	 * Loader hook (PROF_REC_PROC_DLOPEN): a process whose exec was held, stopped again at its
	 * dynamic loader's second state change (glibc: RT_ADD, the DT_NEEDED libraries mapped,
	 * RT_CONSISTENT), before their constructors and main, until userspace has read its maps.
	 */
	PROF_PROC_DL_HELD = 4,
	/*
	 * Loader hook (PROF_REC_PROC_DLOPEN): stopped at _dl_debug_state with r_state RT_CONSISTENT
	 * after an RT_ADD — a dlopen's objects mapped, their constructors not run yet — until
	 * userspace has read the maps and loaded the new files' unwind tables (at most
	 * PROF_DL_HOLD_MS, PROF_DL_HOLDS_MAX times per process).
	 */
	PROF_PROC_DLOPEN_HELD = 8,
};

/* glibc's struct r_debug: r_state at this offset (int: RT_CONSISTENT 0, RT_ADD 1, RT_DELETE 2). */
#define PROF_R_DEBUG_STATE_OFF 24
#define PROF_RT_CONSISTENT     0
#define PROF_RT_ADD	       1
/* A process is held at its first PROF_DL_HOLDS_MAX dlopens (the total cap: `import torch` maps
 * hundreds of libraries), each time at most PROF_DL_HOLD_MS (the per-dlopen cap). */
#define PROF_DL_HOLDS_MAX      32
#define PROF_DL_HOLD_MS	       50
#define PROF_DL_STATE_ENTRIES  16384

/* prof_exec_seen: an executable whose first exec userspace prepared (kernel dev_t, inode). */
struct prof_exec_key {
	__u64 dev, ino;
};
#define PROF_EXEC_SEEN_ENTRIES	16384
/* prof_dl_pending: processes whose exec was held, until their loader's startup is held too. */
#define PROF_DL_PENDING_ENTRIES 4096

/* Which processes are profiled (bpf/common.bpf.h prof_is_target). */
enum prof_scope {
	PROF_SCOPE_PIDS = 0, /* the tgids in prof_targets (-p, -- CMD and its followed children) */
	PROF_SCOPE_CGROUP,   /* every task under the cgroup in prof_scope_cgroup (--cgroup) */
	PROF_SCOPE_ALL,	     /* every process but ours (-a) */
};

/* Process lifecycle (bpf/proc.bpf.c): follow children, learn exec and exit. */
struct prof_proc_event {
	__u32 type;  /* PROF_REC_PROC_* */
	__u32 pid;   /* tgid of the process concerned */
	__u32 tid;   /* thread concerned (exit: the exiting thread) */
	__u32 ppid;  /* fork: parent tgid */
	__u32 flags; /* enum prof_proc_flags */
	__u32 pad;
	char comm[PROF_COMM_LEN];
	struct prof_exec_key exe; /* exec with PROF_PROC_EXEC_HELD: the executable */
	/* A hold (exec/loader held, PROF_REC_PROC_EXIT_HOLD): its key in prof_held. */
	__u64 hold_seq;
	__u64 start_ns; /* a hold: the process's start (leader's start_boottime, ns) */
};
_Static_assert(sizeof(struct prof_proc_event) == 72, "prof_proc_event layout");

/*
 * The OOM killer marked a victim (tracepoint oom/mark_victim, bpf/proc.bpf.c): it is being
 * killed (SIGKILL) and never reaches an exit hold.
 */
enum prof_oom_flags {
	PROF_OOM_ADJ_KNOWN = 1,	 /* oom_score_adj was read */
	PROF_OOM_TID_ONLY = 2,	 /* an older kernel gave the victim's thread id only: pid == tid */
	PROF_OOM_MEMCG = 4,	 /* memcg_id and memcg_max_pages were read */
	PROF_OOM_MEMCG_V1 = 8,	 /* the memory cgroup is in a v1 hierarchy (else v2's) */
	PROF_OOM_NAMES = 16,	 /* memcg_names holds the cgroup's path, memcg_levels deep */
	PROF_OOM_NAMES_CUT = 32, /* ... but not all of it: deeper, or a name longer than a slot */
};
/* Memory cgroups looked at, the victim's and its ancestors, for the limit that binds. */
#define PROF_OOM_MEMCG_DEPTH 16
/* The memory cgroup's path as named at the kill (the runtime may remove the cgroup before
 * userspace could look its id up): the names of its levels below the root, the leaf first. */
#define PROF_OOM_NAME_LEVELS 8
#define PROF_OOM_NAME_LEN    96
struct prof_oom_event {
	__u32 type; /* PROF_REC_OOM_VICTIM */
	__u32 pid;  /* tgid of the victim */
	__u32 tid;  /* the thread the kernel named */
	__s32 oom_score_adj;
	__u32 flags; /* enum prof_oom_flags */
	__u32 pad;
	__u64 ts; /* bpf_ktime_get_ns() of the kill */
	char comm[PROF_COMM_LEN];
	/* Read at the kill: the victim leaves its cgroup as it exits, before userspace could ask.
	 * The kernfs id of its memory cgroup (v1's memory hierarchy, or v2's), and the smallest
	 * memory limit of that cgroup and its ancestors, in pages (huge: none set). */
	__u64 memcg_id;
	__u64 memcg_max_pages;
	__u32 memcg_levels; /* names in memcg_names (0: the root cgroup) */
	__u32 pad2;
	char memcg_names[PROF_OOM_NAME_LEVELS][PROF_OOM_NAME_LEN];
};
_Static_assert(sizeof(struct prof_oom_event) == 72 + PROF_OOM_NAME_LEVELS * PROF_OOM_NAME_LEN,
	       "prof_oom_event layout");

/*
 * prof_held (bpf/proc.bpf.c): every process BPF has stopped for us and userspace has not yet
 * resumed, written before the SIGSTOP is sent.  Userspace deletes an entry after its SIGCONT;
 * the watchdog (user/agg/holds.c), which holds the map's fd, resumes whatever is left when we
 * die — records still in the ring buffer included.  seq makes each hold of a process its own
 * entry (a process resumed from its exec hold may be held again at its loader's startup before
 * we delete the first).
 */
struct prof_held_key {
	__u32 tgid;
	__u32 pad;
	__u64 seq; /* bpf_ktime_get_ns() at the hold */
};
_Static_assert(sizeof(struct prof_held_key) == 16, "prof_held_key layout");
struct prof_held_val {
	__u64 start_ns; /* the held process's start_boottime: a reused pid is not it */
	__u32 type;	/* PROF_REC_PROC_* of the hold */
	__u32 pad;
};
_Static_assert(sizeof(struct prof_held_val) == 16, "prof_held_val layout");
#define PROF_HELD_ENTRIES      16384
/* Holds per cgroup and second (--hold-rate): one busy tenant cannot stall everyone's execs. */
#define PROF_HOLD_RATE_DEFAULT 100
#define PROF_HOLD_RATE_ENTRIES 4096

#endif /* PROF_COMMON_H */
