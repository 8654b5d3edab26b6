/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The process tracker: the table of target processes (pidfds: a signal never reaches a stranger
 * that reused a number), what each process event means for them (fork, exec, dlopen, exit), the
 * processes BPF or ptrace holds for us until what they need is in, and what a new image needs
 * before it runs: its unwind tables, allocator probes in its libraries and root, the loader and
 * exit hooks, and the Python the unwinder finds in it.
 *
 * It owns the unwinder and the holds; the symbolizer's front door (stackres) and the process
 * names (procinfo) are the session's, handed in.  The collector (agg/collect) calls it for the
 * process records of the ring buffer and keeps the modes' own reactions (aggregators, --calls
 * and per-process heap probes) to itself.  Single-threaded: the consumer's thread, but for the
 * exit holds the symbolizer's worker resumes (holds are thread-safe).
 */
#ifndef PROF_TRACKER_H
#define PROF_TRACKER_H

#include <stdbool.h>
#include <stdint.h>

#include "prof_common.h"

struct tracker;
struct loader;
struct stackres;
struct procinfo;
struct owners;
struct unwinder_stats;
struct maps;

struct tracker_opts {
	struct loader *loader; /* NULL: unit tests without BPF */
	struct stackres *stacks;
	struct procinfo *procs;
	bool wide;		  /* --cgroup / --container / -a: BPF decides who is in scope */
	bool cmd;		  /* `-- CMD`: its tree is followed and ptrace-held at exec */
	bool hold_exits;	  /* wide scopes: libc's _exit hooked (holds on) */
	bool unwind_tables;	  /* build .eh_frame tables for the BPF walker (not --unwind fp) */
	uint64_t unwind_memory;	  /* --unwind-memory; 0: the unwinder's default */
	uint32_t unwind_max_rows; /* --unwind-max-rows; 0: the table builder's default */
	uint64_t unwind_max_cfi;  /* --unwind-max-cfi; 0: the table builder's default */
	/* --heap with `-- CMD` or a wide scope: each new image's libraries get allocator probes. */
	bool probe_allocators;
};

int tracker__new(struct tracker **out, const struct tracker_opts *opts);
/* Resumes every process still held, closes the pidfds. */
void tracker__free(struct tracker *tr);
/* The first fatal error met (python discovery out of memory, …), or 0. */
int tracker__error(struct tracker *tr);
/* The collector met a fatal error: holds are released at once from now on. */
void tracker__fail(struct tracker *tr, int err);
/* The ring buffer exists: draining it (process_exiting, traced_sigstop) is allowed. */
void tracker__events_started(struct tracker *tr);
/* Wide scopes: what keeps each probed file (NULL otherwise). */
struct owners *tracker__owners(struct tracker *tr);

/* pid became a target (given, started, a followed child): its pidfd, mappings and loader hook. */
int tracker__track(struct tracker *tr, uint32_t pid);
/* The same for `-- CMD` forked and not yet exec'd: no unwind tables (it runs our image). */
int tracker__add_child(struct tracker *tr, uint32_t pid);
/* A target given with -p or found in scope: tracked, named and its symbols loaded now. */
int tracker__add_pid(struct tracker *tr, uint32_t pid);
/* Wide scopes: a process in scope found at start: its root probed and its image prepared. */
int tracker__add_scoped(struct tracker *tr, uint32_t pid);
/* Wide scopes: probe the allocators and loaders of pid's root (once per root). */
int tracker__discover_root(struct tracker *tr, uint32_t pid);
/* `-- CMD`: build the tables of exe and of the libraries it names before CMD starts. */
void tracker__prepare_unwind(struct tracker *tr, const char *exe);

/* PROF_REC_PROC_FORK: a followed child (same image as its parent until it execs). */
int tracker__fork(struct tracker *tr, uint32_t pid, uint32_t ppid);
/* PROF_REC_PROC_EXEC: new maps, names, root and image (the modes' reactions come after). */
int tracker__exec(struct tracker *tr, uint32_t pid, const char *comm);
/* PROF_REC_PROC_DLOPEN: the loader mapped objects into pid (before the modes' reactions);
 * held: pid is stopped until its tables are in (tracker__release reads its maps). */
int tracker__dlopen(struct tracker *tr, uint32_t pid, bool held);
/* After the modes reacted to a process record: the holds it announces (exec, loader startup,
 * dlopen) taken, and resumed when what the process waits for is in. */
void tracker__release(struct tracker *tr, const struct prof_proc_event *e);
/* PROF_REC_PROC_EXIT of a whole thread group: pidfd closed, tables and owners released. */
void tracker__group_exited(struct tracker *tr, uint32_t pid);
/* PROF_REC_PROC_EXIT_HOLD: symbolized once more, resumed when its stacks are. */
void tracker__exit_hold(struct tracker *tr, const struct prof_proc_event *e);
/* PROF_REC_UNWIND_MISS: a pc outside pid's known mappings (a dlopen since they were read). */
void tracker__unwind_miss(struct tracker *tr, uint32_t pid);
/* Continuous mode: pid's last interval is written: it leaves the table. */
void tracker__forget(struct tracker *tr, uint32_t pid);

/*
 * The mappings of pid as the current event sees them, read once (proc/maps) for every user:
 * the modes' attach plans call this after tracker__exec, __dlopen, __add_scoped, … of the same
 * event; 0, or -ESRCH/-ENOENT (gone), -ENOMEM with *out NULL.  Valid until tracker__event_end,
 * which the collector calls once it is done with a record or a call of the session.
 */
int tracker__maps(struct tracker *tr, uint32_t pid, const struct maps **out);
void tracker__event_end(struct tracker *tr);

/* `-- CMD`: pid stopped (ptrace) at its exec: true when kept stopped until its tables load. */
bool tracker__exec_stop(struct tracker *tr, uint32_t pid);
/* `-- CMD`: thread tid of pid in the delivery stop of the kernel's SIGSTOP (a dlopen hold):
 * true when it stays stopped (continued by us once its tables are in). */
bool tracker__traced_sigstop(struct tracker *tr, uint32_t pid, uint32_t tid);
/* pid is stopped at its exit with its address space intact: last chance to symbolize. */
void tracker__process_exiting(struct tracker *tr, uint32_t pid);

/* Every turn of the loop: expired holds resumed, finished tables loaded, stale maps re-read,
 * the processes held for tables let go.  0 or a fatal -errno. */
int tracker__poll(struct tracker *tr);
/* About once a second: the probes of files no process in scope maps any more go. */
int tracker__tick(struct tracker *tr);
/* Wait up to timeout_ms for the tables being built (a warning past it).  0 or -errno. */
int tracker__wait_unwinder(struct tracker *tr, int timeout_ms);
/* The run ends: the processes held for tables go on, and none is held again. */
void tracker__holds_over(struct tracker *tr);
/* Some process waits for its tables: the event loop should turn again within milliseconds. */
bool tracker__holding(struct tracker *tr);

/* Whether a target (any of its threads) still runs; a reused pid does not count. */
bool tracker__any_alive(struct tracker *tr);
/* sig to every target still alive, through pidfds. */
void tracker__signal_all(struct tracker *tr, int sig);
/* fn(ctx, pid) for every target alive. */
void tracker__each_alive(struct tracker *tr, void (*fn)(void *ctx, uint32_t pid), void *ctx);

/* PROF_COLLECT_STATS' hold counts since the interval began (reset: a new interval). */
void tracker__hold_stats(struct tracker *tr, uint64_t *timeouts, uint64_t *gone);
void tracker__dlopen_stats(struct tracker *tr, uint64_t *holds, uint64_t *timeouts);
void tracker__new_interval(struct tracker *tr);
/* NULL when the unwinder is not running (--unwind fp). */
const struct unwinder_stats *tracker__unwinder_stats(struct tracker *tr);
/* The first files whose unwind table could not be built, and why (NULL: no unwinder). */
const char *tracker__unwinder_failed(struct tracker *tr);

#endif /* PROF_TRACKER_H */
