/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One profiling run: validate targets, start `-- CMD` held at a barrier until the probes are
 * in, attach, consume events until the stop condition (duration, signal, targets gone), then
 * hand the collected data to the report.  Returns the process exit status (DESIGN.md §4).
 */
#ifndef PROF_SESSION_H
#define PROF_SESSION_H

struct env;

int session__run(const struct env *env);

#endif /* PROF_SESSION_H */
