/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Where `-- CMD` will come from: the file execvp(3) would run, found before it runs so that
 * its allocator and interpreter can be probed from its first instruction. */
#ifndef PROF_CMDPATH_H
#define PROF_CMDPATH_H

#include <stddef.h>

/* cmd as given if it contains a '/', else the first executable match in $PATH, into out.
 * 0, -ENOENT (no executable match), -errno of access(2) for a path, or -ENOMEM. */
int cmdpath__resolve(char *out, size_t len, const char *cmd);

#endif /* PROF_CMDPATH_H */
