/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* End of a run: build one profile per mode from the collected data, write each in the chosen
 * format (atomically), and print the top-N summary. */
#ifndef PROF_REPORT_H
#define PROF_REPORT_H

#include <stdint.h>

struct collect;
struct env;
struct profile;

/* Returns 0 when every profile was written, else -errno (the message is printed). */
int report__write(struct collect *c, const struct env *env, int64_t start_wall_ns,
		  int64_t duration_ns);

/* Heap profile from the collected data (exposed for the calls/cpu builders' shared parts). */
int report__build_heap(struct collect *c, const struct env *env, struct profile **out);
/* Drop counters, the command line and the version, common to every mode's profile. */
int report__add_common(struct collect *c, const struct env *env, struct profile *p);

#endif /* PROF_REPORT_H */
