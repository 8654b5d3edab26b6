/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * BPF lifecycle: open every needed skeleton, point them at one set of shared maps (targets,
 * ring buffer, counters), load, attach, poll, read counters, destroy.
 */
#ifndef PROF_LOADER_H
#define PROF_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include <bpf/libbpf.h>

#include "attach/ring.h"
#include "prof_calls.h"
#include "prof_common.h"
#include "prof_stack.h"

struct loader;
struct bpf_program;

struct loader_opts {
	bool heap;
	bool cpu;
	unsigned cpu_hz;
	bool offcpu;
	bool calls;
	bool dump;	      /* `dump`: the task iterator (loader__dump) */
	bool follow_children; /* -- CMD: children of targets become targets */
	uint64_t sample_bytes;
	/* Heap records timed by the fine clock (event traces); false: the coarse one
	 * (bpf/heap.bpf.c heap_now). */
	bool heap_fine_ts;
	struct prof_walk_knobs walk; /* the BPF walker's (include/prof_stack.h) */
	bool unwind_fp;		     /* --unwind fp: the unwinder's maps are not used */
	uint32_t scope;		     /* enum prof_scope */
	int scope_cgroup_fd;	     /* PROF_SCOPE_CGROUP: the cgroup v2 directory, open */
	bool hold_execs;	     /* stop each executable's first exec until loader__exec_seen */
	uint32_t hold_rate;	     /* holds per cgroup and second (0: no limit) */
	/* Stop each dlopen after mapping, before constructors, until its unwind tables are in
	 * (PROF_PROC_DLOPEN_HELD); hold_traced: the targets are ptraced by us (`-- CMD`). */
	bool hold_dlopen;
	bool hold_traced;
	/* hold_dlopen for --heap alone: processes on their own otel_memory probes are not held. */
	bool dlopen_skip_otel;
	/* Sampled `-- CMD` with our sampler preloaded: no allocator probe is attached (every
	 * process of the tree samples itself through its otel_memory probes, no trap per malloc);
	 * an image that never loads it is counted in heap_procs_unsampled, its allocations unseen.
	 */
	bool heap_otel_only;
	/* --sample-bytes: the allocator probes as uprobe sessions where the kernel has them
	 * (6.13); false keeps an entry and a return probe per function (for comparison). */
	bool heap_sessions;
	/* The other allocator probes (exact mode, sampled without sessions) as uprobe_multi links
	 * where the kernel has them (6.6); false keeps a uprobe per function (for the tests). */
	bool heap_multi;
	/* Wide scopes: a file mapped by a process on its otel_memory probes is probed per process
	 * (heap_attach.h); false keeps it probed for every process (for comparison). */
	bool heap_split;
	uint32_t ring_bytes;	/* --ring-buffer; 0: loader__ring_bytes' default */
	uint64_t backlog_bytes; /* --backlog: the backlog's cap (ring__backlog); 0: read the ring
				   itself */
};

int loader__open(struct loader **out, const struct loader_opts *opts);
/* The size of the ring buffer of records to us. */
uint32_t loader__ring_bytes(const struct loader_opts *o);
void loader__free(struct loader *l);

int loader__add_target(struct loader *l, uint32_t pid);
/* 1 if pid is in the target set now (BPF drops a tgid when its thread group dies), 0 if not. */
int loader__has_target(struct loader *l, uint32_t pid);
int loader__start_events(struct loader *l, ring_record_fn fn, void *ctx);
/* Wait up to timeout_ms for a batch, then drain whatever is queued. Returns events or -errno. */
int loader__poll(struct loader *l, int timeout_ms);
/* The backlog's figures (zeroes without one). */
struct ring_backlog_stats loader__backlog_stats(struct loader *l);
/* Sum of each drop counter over CPUs. */
int loader__counters(struct loader *l, uint64_t out[PROF_CNT__COUNT]);

/* The heap programs (entry, return, free; the otel_memory USDTs', our sampler's loss USDT's);
 * -ENOENT without --heap. */
struct loader_heap_progs {
	struct bpf_program *enter, *ret, *free_;
	struct bpf_program *otel_alloc, *otel_free, *otel_lost;
};
int loader__heap_progs(struct loader *l, struct loader_heap_progs *out);
/* The same with per-function programs that can attach (a file whose session or uprobe_multi
 * links were refused): loaded now where they were left out (-errno when the kernel refuses). */
int loader__heap_progs_fallback(struct loader *l, struct loader_heap_progs *out);
/* The same with otel_memory programs that can attach: loaded now where they were left out. */
int loader__heap_progs_otel(struct loader *l, struct loader_heap_progs *out);
/* loader_opts.heap_otel_only. */
bool loader__heap_otel_only(const struct loader *l);
/* May a file be probed per process: heap_split, and a process went onto its otel_memory probes
 * (before, none can be: heap_attach.h). */
bool loader__heap_split(const struct loader *l);
/*
 * --heap: the path pid's image takes, kept in BPF (bpf/heap_state.bpf.h: prof_otel_procs; the
 * allocator probes skip the processes on their otel_memory probes) and counted once per image
 * (heap_procs_otel, heap_procs_uprobes).  The first decision of an image stands, except that
 * otel moves an image from the allocator probes onto its otel_memory ones (and its count).  The
 * path in force: 1 the otel_memory probes, 0 the allocator probes (also when the map had no
 * room), -errno.
 */
int loader__heap_path(struct loader *l, uint32_t pid, bool otel);
/*
 * Wide scopes: pid's image on its own allocator links from now on (PROF_PATH_OWN; they must be
 * attached, with PROF_COOKIE_OWN, before), counted in heap_procs_own (and heap_own_late when
 * it ran before they were in).  1 moved (or already), 0 on its otel_memory probes, -errno (no
 * room: it stays on the links for every process).
 */
int loader__heap_own(struct loader *l, uint32_t pid, bool late);
/*
 * Wide scopes: pid's image back from its own allocator links onto those for every process (they
 * must be attached before; its own go after), counted in heap_own_merged.  1 moved, 0 not on
 * links of its own, -errno.
 */
int loader__heap_unown(struct loader *l, uint32_t pid);
/* A file probed per process went back to probes for every process (heap_split_merged). */
void loader__heap_split_merged(struct loader *l);
/* The path pid's image is on (enum prof_heap_path), or -ENOENT (none decided). */
int loader__heap_path_of(struct loader *l, uint32_t pid);
/* A file's otel_memory probes refused for their 5-byte nop sites (otel_nop5_refused). */
void loader__otel_nop5_refused(struct loader *l);
/*
 * The heap probes record from now on (bpf/heap.bpf.c: heap_armed): called once the start's
 * probes are all in, so that they begin together.  Probes attached later (an exec, a dlopen, a
 * process joining a wide scope) record as soon as they are in.
 */
void loader__arm_heap(struct loader *l);

/*
 * The one (kind, dev, inode, pid) set of files already probed, shared by every attach plan:
 * uprobes live on the inode, so a file is probed once per pid (or once for every process, pid
 * -1) whatever path reached it.  *slot: the entry's value (probes attached; 0 = none usable),
 * valid until the next call; *created: the entry is new (value 0).  0 or -ENOMEM.
 */
enum loader_attach_kind {
	LOADER_ATTACH_HEAP,
	LOADER_ATTACH_CALLS,
	LOADER_ATTACH_DL_HOOK,
	LOADER_ATTACH_EXIT_HOOK,
	LOADER_ATTACH_OTEL, /* the otel_memory USDTs; the value: 1 if the file has them, else 0 */
	LOADER_ATTACH_HEAP_SPLIT, /* wide scopes: the file's allocators probed per process (no
				     link; heap_attach.c) */
	LOADER_ATTACH_PY_CODE,	  /* CPython's code_dealloc, per process (py_watch.c) */
};
struct loader_attach_key {
	uint64_t dev, ino;
	int64_t pid;
	uint32_t kind; /* enum loader_attach_kind */
	uint32_t pad;
};
int loader__attached(struct loader *l, const struct loader_attach_key *key, int32_t **slot,
		     bool *created);
/* key's value without making an entry; NULL when it has none. */
const int32_t *loader__attached_find(const struct loader *l, const struct loader_attach_key *key);
/* Keep link with key's entry (created by loader__attached): destroyed when the entry goes.
 * 0, or -ENOENT / -ENOMEM (the link destroyed). */
int loader__attached_link(struct loader *l, const struct loader_attach_key *key,
			  struct bpf_link *link);
/*
 * The allocator probes of a file as one uprobe session link (bpf/heap.bpf.c: heap_session),
 * kept with key's entry: offsets and cookies as heap_attach__plan gives the entries and frees.
 * name: the file as logs name it; path: what the kernel opens.  -EOPNOTSUPP when sessions are
 * not in use (exact mode, an older kernel, heap_sessions off) or the kernel refused this
 * file's link (counted in heap_session_refused): the caller attaches one uprobe per function.
 * 0 or -errno.
 */
int loader__heap_session(struct loader *l, const struct loader_attach_key *key, const char *name,
			 const char *path, int pid, const uint64_t *offsets,
			 const uint64_t *cookies, size_t cnt);
/*
 * The allocator probes of a file as uprobe_multi links (bpf/heap.bpf.c: heap_*_multi), kept
 * with key's entry: one link per non-empty set, made in index order.  -EOPNOTSUPP when they
 * are not in use (sessions chosen, an older kernel, heap_multi off) or the kernel refused one
 * of this file's links (none kept; counted in heap_multi_refused): the caller attaches one
 * uprobe per function.  0 or -errno.
 */
enum loader_multi_kind {
	LOADER_MULTI_RETURN,
	LOADER_MULTI_FREE,
	LOADER_MULTI_ENTRY,
};
struct loader_multi_set {
	const uint64_t *offsets, *cookies;
	size_t cnt;
};
int loader__heap_multi(struct loader *l, const struct loader_attach_key *key, const char *name,
		       const char *path, int pid, const struct loader_multi_set sets[3]);
/* Detach an entry: its links destroyed, the entry forgotten (a later attach works again; also
 * what an attach that failed does).  Returns the links destroyed, or -ENOENT. */
int loader__detach(struct loader *l, const struct loader_attach_key *key);
/* Detach every entry of kind attached for process pid alone (-p): the links destroyed, or
 * -ENOMEM with nothing detached. */
int loader__detach_pid(struct loader *l, int64_t pid, uint32_t kind);
/* Wide scopes, a file nothing in scope maps any more: detach its entries for every process
 * (pid -1) of every kind.  Returns the links destroyed (0: none were attached). */
int loader__detach_file(struct loader *l, uint64_t dev, uint64_t ino);

/* PROF_ATTACH_STATS as a struct. */
#define LOADER_STAT_FIELD(f, n, d, k) uint64_t f;
struct loader_attach_stats {
	PROF_ATTACH_STATS(LOADER_STAT_FIELD)
};
#undef LOADER_STAT_FIELD
/* NULL without a loader. */
const struct loader_attach_stats *loader__attach_stats(const struct loader *l);

/* The unwinder's maps (bpf/unwind_maps.bpf.h, bpf/unwind.bpf.h): -ENOENT before a program that
 * walks stacks is loaded. */
struct loader_unwind_fds {
	int procs, tables, asked, files;
};
int loader__unwind_fds(struct loader *l, struct loader_unwind_fds *out);

/* Holds taken (open) for the next PROF_HOLD_GATE_NS: at every turn of the loop, and closed
 * before the last drain.  While records are taken, and across a BPF object's load, the gate is
 * kept open (loader.c, on_record). */
void loader__hold_gate(struct loader *l, bool open);
/* prof_held: the processes BPF stopped for us (struct prof_held_key -> prof_held_val). */
int loader__held_map_fd(struct loader *l);

/* The executable of a held exec is prepared: its later execs run on.  0 or -errno. */
int loader__exec_seen(struct loader *l, const struct prof_exec_key *key);
/* --heap in a cgroup scope: pid was found in the cgroup at start, in scope as if born there
 * (bpf/heap_state.bpf.h: prof_scope_born). */
void loader__scope_found(struct loader *l, uint32_t pid);
/* Its probes are gone (nothing in scope ran it for an interval): hold its next first exec. */
void loader__exec_forget(struct loader *l, const struct prof_exec_key *key);

/* --sample-bytes: the map of sampled live blocks (struct prof_sampled_key); -1 without it. */
int loader__sampled_fd(struct loader *l);

/* One cpu-clock perf event per online CPU running the sampler at opts.cpu_hz. */
int loader__attach_cpu(struct loader *l);
/* No more cpu samples (the end of a run: what is queued is what the profile gets). */
void loader__stop_cpu(struct loader *l);

/* `dump`: one pass of the task iterator over pid's threads; their records are in the ring
 * buffer when it returns.  0, -ENOENT without opts.dump, or -errno. */
int loader__dump(struct loader *l, uint32_t pid);

/* --offcpu: the scheduler tracepoint that measures off-CPU time.  -ENOENT without --offcpu. */
int loader__attach_offcpu(struct loader *l);
/* No more off-CPU records (the end of a run). */
void loader__stop_offcpu(struct loader *l);
/* The map of threads off the CPU now (tid -> struct prof_offcpu_record), or with deep the map of
 * their deep stacks' records (tid -> struct prof_offcpu_deep); -1 without --offcpu. */
int loader__offcpu_fd(struct loader *l, bool deep);

/* The --calls program for a runtime's entry (ret false) or return probe; NULL without --calls. */
struct bpf_program *loader__calls_prog(struct loader *l, enum prof_runtime rt, bool ret);
/* The --calls program of a marker probe (enum prof_marker_kind); NULL without --calls. */
struct bpf_program *loader__marker_prog(struct loader *l, enum prof_marker_kind kind);

/*
 * The lifecycle program's uprobes, on a file open as fd (name: for messages), for every process
 * running it (filtered in BPF), once per file:
 *   LOADER_HOOK_DL: a dynamic loader's _dl_debug_state, which glibc calls for debuggers before
 *     and after it maps objects (startup, dlopen): PROF_REC_PROC_DLOPEN;
 *   LOADER_HOOK_EXIT: a libc's _exit (wide scopes): the process stops until its records are
 *     consumed, PROF_REC_PROC_EXIT_HOLD.
 * 1 when hooked (now or before), 0 when the file lacks the function, or -errno.
 */
enum loader_hook {
	LOADER_HOOK_DL,
	LOADER_HOOK_EXIT,
};
int loader__attach_hook(struct loader *l, enum loader_hook hook, int fd, const char *name);

/* The lifecycle object's OOM victim program (bpf/proc.bpf.c), loaded, not attached
 * (attach/oom_attach.h). */
struct bpf_program *loader__oom_prog(struct loader *l);
/* Keep a link of no attached-set entry (the CPU sampler's) so loader__free destroys it. */
int loader__keep_link(struct loader *l, struct bpf_link *link);

#endif /* PROF_LOADER_H */
