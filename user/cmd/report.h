/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `bpftrace-prof report FILE`: a recorded trace (memtrace) back into a profile, written in the
 * chosen format.  Not the run's own profiles (writeout.h). */
#ifndef PROF_CMD_REPORT_H
#define PROF_CMD_REPORT_H

#include <stdbool.h>

#include "export/format.h"

/* `bpftrace-prof report FILE [-f pprof|folded|text] [-o OUT] [--at SECONDS]` (cli__parse_report).
 */
struct report_env {
	const char *file;
	enum out_format format; /* FMT_PPROF, FMT_FOLDED or FMT_TEXT */
	const char *output;	/* default: bpftrace-prof.pb.gz for pprof, else stdout */
	bool at;		/* --at given */
	double at_s;
	unsigned top; /* --top N for the text output */
	int verbosity;
};

/* Returns the exit status: 0, 2 for a bad file or usage, 1 otherwise. */
int report__run(const struct report_env *env);

#endif /* PROF_CMD_REPORT_H */
