/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `bpftrace-prof dump -p PID…`: every thread's current stack, once (py-spy dump). */
#ifndef PROF_DUMP_RUN_H
#define PROF_DUMP_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "sym/stackres.h" /* enum stackres_py_frames */

#define DUMP_MAX_PIDS 64

/* dump's arguments (cli__parse_dump). */
struct dump_env {
	uint32_t pids[DUMP_MAX_PIDS];
	unsigned npids;
	bool json;			       /* --json: one JSON document instead of text */
	const char *output;		       /* -o; "-" (default): stdout */
	enum stackres_py_frames python_frames; /* --python-frames */
	int verbosity;
};

/* Returns the exit status: 0 printed, 1 runtime failure, 2 bad target. */
int dump__run(const struct dump_env *env);

#endif /* PROF_DUMP_RUN_H */
