/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The output formats (-f): their names, what a file name's extension says it holds, and the one
 * function that writes a profile in a format, atomically (export/output.h) — used by the
 * end-of-run writer and the `report` subcommand alike.  The event traces are recorded while a run
 * goes (trace writers, memtrace_rec.h): they are named here, written elsewhere.
 */
#ifndef PROF_FORMAT_H
#define PROF_FORMAT_H

#include <stdbool.h>

struct profile;

enum out_format {
	FMT_PPROF,
	FMT_FOLDED,
	FMT_TEXT,
	FMT_MEMTRACE,	/* --heap only: a memtrace allocation trace (trace/memtrace_rec.h) */
	FMT_CHROME,	/* event trace: Trace Event JSON (--calls) */
	FMT_PERFETTO,	/* event trace: Perfetto TrackEvent protobuf (--calls) */
	FMT_FIREFOX,	/* event trace: Firefox Profiler processed format (--calls) */
	FMT_CODETRACER, /* event trace: CodeTracer trace folder, -o is a directory (--calls) */
	FMT_SVG,	/* interactive flame graph (export/svg.h), one per mode */
};

/* The name -f takes ("pprof", "folded", …). */
const char *format__name(enum out_format f);
/* -f's name -> *out: 0, or -EINVAL for a name no format has. */
int format__parse(enum out_format *out, const char *name);
/* Formats that record events as they happen rather than aggregate them (one file, whatever the
 * modes; memtrace records too, but allocations only). */
bool format__event_trace(enum out_format f);

/* What an output name's extension says it holds. */
struct format_ext {
	const char *ext; /* ".pb.gz", … */
	enum out_format format;
	unsigned also; /* 1 << other formats such a name may hold */
};
/* The longest known extension path's base name ends with, or NULL (a name that is only the
 * extension, a hidden file, has none). */
const struct format_ext *format__ext(const char *path);

struct format_opts {
	enum out_format format; /* pprof, folded, text or svg; the others are -EINVAL */
	unsigned top;		/* text: rows per table, 0 for 10 */
	const char *svg_type;	/* svg: the sample type; NULL (or one p lacks): its default */
	bool icicle;		/* svg: the root at the top */
	const char *cmdline;	/* svg: shown in its title */
	bool no_backup;		/* replace without keeping <path>.old (output__no_backup) */
};

/*
 * Writes p to path ("-": stdout) in o->format, atomically: nothing at path until the whole
 * profile is there.  Prints one line on stderr on failure, and p's bookkeeping counters at -v
 * (run__log_bookkeeping) once the commit was tried.  0 or -errno (-ELOOP: path is a symbolic link).
 */
int format__write(const struct profile *p, const char *path, const struct format_opts *o);

#endif /* PROF_FORMAT_H */
