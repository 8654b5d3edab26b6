/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* --calls: the calls profile (calls/count, wall/nanoseconds) from the aggregated call paths,
 * with functions named in each language's own convention. */
#ifndef PROF_CALLS_PROFILE_H
#define PROF_CALLS_PROFILE_H

#include <stddef.h>

struct calls_name;
struct collect;
struct env;
struct profile;

/* name: Python "function", Ruby "Class#method", PHP "Class::method" or "function", Java
 * "package.Class.method"; system_name: the same, with the JVM signature appended for Java. */
void calls_profile__format_name(const struct calls_name *n, char *name, size_t name_len,
				char *system_name, size_t system_len);
int calls_profile__build(struct collect *c, const struct env *env, struct profile **out);

#endif /* PROF_CALLS_PROFILE_H */
