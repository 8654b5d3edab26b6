/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `bpftrace-prof report FILE`: a recorded trace (memtrace) back into a profile, written in the
 * chosen format.  Returns the exit status: 0, 2 for a bad file or usage, 1 otherwise. */
#ifndef PROF_TRACE_REPORT_H
#define PROF_TRACE_REPORT_H

struct report_env;

int trace_report__run(const struct report_env *env);

#endif /* PROF_TRACE_REPORT_H */
