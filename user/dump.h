/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `bpftrace-prof dump -p PID…`: every thread's current stack, once (py-spy dump). */
#ifndef PROF_DUMP_RUN_H
#define PROF_DUMP_RUN_H

struct dump_env;

/* Returns the exit status: 0 printed, 1 runtime failure, 2 bad target. */
int dump__run(const struct dump_env *env);

#endif /* PROF_DUMP_RUN_H */
