/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a run's collector works with and the end of the run reads: the symbolizer, the process
 * names, the stack store with its worker, and the process tracker (with the unwinder and the
 * holds).  The session (and `dump`) opens them, hands them to the collector, the profile writer
 * and the trace writers, and closes them after the collector: none reaches another through it.
 */
#ifndef PROF_PARTS_H
#define PROF_PARTS_H

#include <stdbool.h>
#include <stdint.h>

#include "sym/stackres.h" /* enum stackres_py_frames */

struct loader;
struct symbolizer;
struct procinfo;
struct stackres;
struct tracker;

struct run_parts {
	struct loader *loader; /* not owned; NULL in unit tests without BPF */
	struct symbolizer *sym;
	struct procinfo *procs;
	struct stackres *stacks; /* the symbolizer's front door; its worker thread runs */
	struct tracker *tracker;
};

struct run_parts_opts {
	unsigned modes;	    /* enum prof_mode_bit: the tracker's unwinder serves those that walk */
	bool wide;	    /* --cgroup / --container / -a: processes labelled with their scope */
	bool cmd;	    /* `-- CMD` */
	bool hold_exits;    /* wide scopes: libc's _exit hooked */
	bool unwind_tables; /* not --unwind fp */
	uint64_t unwind_memory;		       /* --unwind-memory */
	uint32_t unwind_max_rows;	       /* --unwind-max-rows */
	uint64_t unwind_max_cfi;	       /* --unwind-max-cfi */
	bool no_debuginfod;		       /* --no-debuginfod */
	bool no_inline;			       /* --no-inline */
	unsigned debuginfod_timeout;	       /* --debuginfod-timeout */
	enum stackres_py_frames python_frames; /* --python-frames */
};

/* 0 or -errno (then nothing is left open). */
int run_parts__open(struct run_parts *p, struct loader *l, const struct run_parts_opts *o);
/* After the collector: the worker joined (it resumes exit holds), then what is still held
 * resumed, then the rest. */
void run_parts__close(struct run_parts *p);

#endif /* PROF_PARTS_H */
