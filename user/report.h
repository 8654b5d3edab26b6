/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* End of a run: build one profile per mode from the collected data, write each in the chosen
 * format (atomically), and print the top-N summary. */
#ifndef PROF_REPORT_H
#define PROF_REPORT_H

#include <stdint.h>

struct collect;
struct env;

/* Returns 0 when every profile was written, else -errno (the message is printed). */
int report__write(struct collect *c, const struct env *env, int64_t start_wall_ns,
		  int64_t duration_ns);

#endif /* PROF_REPORT_H */
