/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One profile per service, for backends that keep one series per service (Pyroscope's
 * service_name).  A sample's service is its process's container id when the process has one
 * (profile__process), else its process name (else its thread name, else "unknown").  Each part
 * holds the samples of one service with the mappings, functions and locations they use (mappings
 * in their original order, so the first one stays a main executable), the process labels of its
 * pids, and the original's sample types, period, times, comments and counters.
 *
 * Every service is a series in the backend, and a host (-a) can run a thousand differently
 * named processes an interval: past max_parts services, containers first and then the services
 * with the largest values (the default sample type's, in absolute value) keep parts of their
 * own, max_parts - 1 of them, and all the others share one part, SPLIT_OTHER.
 */
#ifndef PROF_SPLIT_H
#define PROF_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

struct profile;

/* The service name of the part that holds the services past the cap. */
#define SPLIT_OTHER "other"

struct split_part {
	const char *service; /* interned in profile */
	bool is_container;   /* service is a container id */
	struct profile *profile;
};

/* *out gets *nout parts in the order their services first appear among p's samples (none for a
 * profile without samples), SPLIT_OTHER last when services were folded; *nfolded says how many
 * services went into it.  max_parts 0: no cap.  Free with split__free. */
int split__by_service(struct split_part **out, uint32_t *nout, uint32_t *nfolded,
		      const struct profile *p, uint32_t max_parts);
void split__free(struct split_part *parts, uint32_t n);

#endif /* PROF_SPLIT_H */
