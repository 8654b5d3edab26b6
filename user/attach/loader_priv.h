/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The loader's state, for its own files (loader.c, attached.c, heap_path.c): nothing else reads
 * it. */
#ifndef PROF_LOADER_PRIV_H
#define PROF_LOADER_PRIV_H

#include "attach/loader.h"
#include "calls.skel.h"
#include "cpu.skel.h"
#include "dump.skel.h"
#include "heap.skel.h"
#include "offcpu.skel.h"
#include "proc.skel.h"

/* Maps that several objects declare under one name (bpf/common.bpf.h and the headers beside
 * it).  The first object loaded that declares one creates it; every later one reuses its fd. */
enum shared_map {
	SHARED_TARGETS,
	SHARED_COUNTERS,
	SHARED_EVENTS,
	SHARED_UNWIND_TABLES,
	SHARED_UNWIND_PROCS,
	SHARED_UNWIND_ASKED,
	SHARED_UNWIND_FILES,
	SHARED_SCOPE_CGROUP,
	SHARED_SCOPE_BORN,
	SHARED_OTEL_PROCS,
	SHARED_SAMPLED_PROCS,
	SHARED__COUNT,
};

/* An entry of the attached set: what loader__attached hands out first, then its links. */
struct attached {
	int32_t value;
	size_t nlinks, cap;
	struct bpf_link **links;
	/* uprobe session or uprobe_multi links made without libbpf (uprobe_multi.c); a multi
	 * link's probes go in one grace period when it is closed, not one each */
	int fds[3];
	uint32_t nfds;
};

/* Append link to links (nlinks of cap, grown from first_cap): 0, or -ENOMEM with link
 * destroyed (attached.c). */
int loader__links_push(struct bpf_link ***links, size_t *nlinks, size_t *cap, size_t first_cap,
		       struct bpf_link *link);

/* Destroy a's links (the uprobes go from every process now); a itself is the caller's (its
 * entry stays).  The links destroyed (attached.c). */
int loader__destroy_links(struct loader *l, struct attached *a);

struct loader {
	struct loader_opts opts;
	struct proc_bpf *proc;
	struct heap_bpf *heap;
	struct cpu_bpf *cpu;
	struct offcpu_bpf *offcpu;
	struct calls_bpf *calls;
	struct dump_bpf *dump;
	int *perf_fds;
	int nperf;
	struct ring *rb;
	ring_record_fn record_fn; /* what loader__start_events was given, called by on_record */
	void *record_ctx;
	/* The hold gate (loader__hold_gate): open for PROF_HOLD_GATE_NS from each time it is
	 * armed, gate_armed_ns the last. */
	bool gate_open;
	uint64_t gate_armed_ns;
	uint32_t gate_records; /* records taken, for a look at the clock once in 64 */
	struct bpf_link **links;
	size_t nlinks, cap;
	struct hashmap *attached;     /* struct loader_attach_key -> struct attached */
	int shared_fd[SHARED__COUNT]; /* -1 until an object declaring the map is loaded */
	struct loader_attach_stats stats;
	/* The per-function programs (heap_enter, heap_return, heap_free) for files whose session
	 * or uprobe_multi links are refused: loaded on the first refusal, on the maps of heap. */
	struct heap_bpf *heap_fallback;
	/* The otel_memory USDTs' programs, loaded when a file with the probes is first met. */
	struct heap_bpf *heap_otel;
	bool heap_session; /* the allocator probes are session links (heap_session) */
	bool heap_multi;   /* else uprobe_multi links (heap_*_multi) */
	/* BPFTRACE_PROF_FAULT_SESSION (tests only): the basename of a file whose session or multi
	 * links are refused as by the kernel, so that its fallback runs on kernels that never do */
	const char *session_fault;
};

#endif
