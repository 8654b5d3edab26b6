/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What an event-trace file format writes (chrome: Trace Event JSON, perfetto: TrackEvent
 * protobuf).  The recorder (trace/evtrace.c) decides what happens when; a sink only spells it.
 * Timestamps are bpf_ktime_get_ns() values (CLOCK_MONOTONIC ns), written as they are.  Each
 * operation returns 0 or -errno.
 */
#ifndef PROF_TRACE_SINK_H
#define PROF_TRACE_SINK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "prof_common.h"

struct trace_sink;
struct trace_stack;

struct trace_sink_ops {
	/* First sight of a process, of a thread (names may be "" when unknown). */
	int (*process)(struct trace_sink *s, uint32_t pid, const char *name);
	int (*thread)(struct trace_sink *s, uint32_t pid, uint32_t tid, const char *name);
	/* A name first used: iid is its number (1, 2, …), given to begin/instant with it after. */
	int (*name)(struct trace_sink *s, uint32_t iid, const char *name);
	int (*begin)(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts, uint32_t iid,
		     const char *name);
	int (*end)(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts);
	int (*instant)(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts, uint32_t iid,
		       const char *name);
	/* End of the trace: what was lost, names[i] = values[i], then the file's closing bytes. */
	int (*finish)(struct trace_sink *s, uint64_t ts, const char *const *names,
		      const uint64_t *values, size_t n);
	void (*free)(struct trace_sink *s);
	/* Optional (NULL: not wanted), for formats that keep source positions (firefox,
	 * codetracer).  source: the file of name iid's function, told once after name() when the
	 * runtime names one (not Java's signature), with the process to read it from.
	 * begin_line: used in place of begin, with the line the probe reported (0: none).
	 * thread_exit: thread tid ended at ts (its frames already ended). */
	int (*source)(struct trace_sink *s, uint32_t iid, uint32_t pid, const char *file);
	int (*begin_line)(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts,
			  uint32_t iid, const char *name, uint32_t line);
	int (*thread_exit)(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts);
	/* Optional, --heap: tid allocated bytes at addr (bytes > 0) or freed the block of -bytes
	 * at addr (bytes < 0: the recorder pairs frees with allocations itself and tells only
	 * those of blocks it follows), at ts, while its open calls are what begin/end left open. */
	int (*heap)(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr,
		    int64_t bytes);
	/* Optional (NULL: not wanted; the recorder then ignores markers): a runtime reported kind
	 * (enum prof_marker_kind) on tid at ts: text (exception class, module, message), file and
	 * line ("" / 0 when the probe gives none), arg (import found; class from the CDS archive).
	 */
	int (*marker)(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts, uint32_t kind,
		      const char *text, const char *file, uint32_t line, uint32_t arg);
	/* Optional, --heap, for formats that show the heap over time (chrome, perfetto); the
	 * recorder pairs frees with allocations itself.  heap_in_use: process pid's bytes in use
	 * (of the blocks the trace saw allocated) are bytes from ts on.  large_alloc: tid
	 * allocated size bytes (>= EVTRACE_LARGE_ALLOC) at addr, at ts: an instant named name,
	 * interned as iid like a call's. */
	int (*heap_in_use)(struct trace_sink *s, uint32_t pid, uint64_t ts, uint64_t bytes);
	int (*large_alloc)(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts,
			   uint32_t iid, const char *name, uint64_t addr, uint64_t size);
	/* Optional, --cpu (chrome, perfetto): tid was on a CPU at ts in the function name
	 * (interned as iid), its stack root first ("a;b;c", kernel frames "[k] …" last).  Told
	 * at the end, when the stacks are symbolized: not in time order. */
	int (*cpu_sample)(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts,
			  uint32_t iid, const char *name, const char *stack);
	/* Optional, --cpu (firefox, chrome), besides cpu_sample when both are set: the same
	 * sample as its frames, the same frames as the sample's pprof stack. */
	int (*cpu_stack)(struct trace_sink *s, uint32_t pid, uint32_t tid,
			 const struct trace_stack *st);
};

/* A --cpu sample's stack: iids[0] / names[0] the root, [n - 1] the leaf (n 0: no stack).  The
 * names are interned by the recorder: one pointer per text, valid until the sink is freed. */
struct trace_stack {
	uint64_t ts;
	uint64_t period; /* ns between two samples of a thread (0: not known) */
	const uint32_t *iids;
	const char *const *names;
	uint32_t n;
};

struct trace_sink {
	const struct trace_sink_ops *ops;
};

/* Trace Event JSON into f ({"traceEvents":[…]}); gzip: compressed (f gets the gzip bytes). */
int chrome_trace__new(struct trace_sink **out, FILE *f, int gzip);
/* Perfetto TracePackets into f. */
int perfetto_trace__new(struct trace_sink **out, FILE *f);
/*
 * The Firefox Profiler's processed format (gzip JSON when gzip) into f, at finish.  Events
 * wait in an unlinked temporary file (O_TMPFILE in spill_dir, else $TMPDIR, else /tmp).
 */
int firefox_trace__new(struct trace_sink **out, FILE *f, int gzip, const char *spill_dir);
/*
 * A CodeTracer trace folder's trace.json and trace_paths.json, written into the directory
 * dir_fd (ours, empty), and the sources under files/, read from each process's root below
 * proc_root with that process's rights (proc/asuser.h), on a thread of their own.
 */
int codetracer_trace__new(struct trace_sink **out, int dir_fd, const char *proc_root);
/* Sources copied into files/, and those missing or refused (each also logged); final once
 * finish has returned. */
void codetracer_trace__files(const struct trace_sink *s, uint64_t *copied, uint64_t *missing);

/* Why sources were not copied, one counter each (include/prof_common.h). */
struct codetracer_stats {
#define CODETRACER_FIELD(f, n, d) uint64_t f;
	PROF_CODETRACER_STATS(CODETRACER_FIELD)
#undef CODETRACER_FIELD
};
const struct codetracer_stats *codetracer_trace__stats(const struct trace_sink *s);

#endif /* PROF_TRACE_SINK_H */
