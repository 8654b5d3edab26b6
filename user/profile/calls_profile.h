/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* --calls: the calls profile (calls/count, wall/nanoseconds) from the aggregated call paths,
 * with functions named in each language's own convention. */
#ifndef PROF_CALLS_PROFILE_H
#define PROF_CALLS_PROFILE_H

#include <stddef.h>

struct build_inputs;
struct calls_agg;
struct calls_name;
struct profile;

/* name: Python "function", Ruby "Class#method", PHP "Class::method" or "function", Java
 * "package.Class.method"; system_name: the same, with the JVM signature appended for Java. */
void calls_profile__format_name(const struct calls_name *n, char *name, size_t name_len,
				char *system_name, size_t system_len);
/* notes[0..nnotes): limits the attach met, recorded as comments. */
int calls_profile__build(struct profile **out, struct calls_agg *agg, const struct build_inputs *in,
			 const char *const *notes, size_t nnotes);

#endif /* PROF_CALLS_PROFILE_H */
