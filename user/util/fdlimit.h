/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Open files: the symbolizer keeps up to 1024 ELF files loaded (sym/symfiles.h), each with its
 * own DWARF holding a descriptor until its lines are read, beside the BPF maps, links and
 * perf events of a wide scope.  The soft RLIMIT_NOFILE (1024 under most logins) goes up to the
 * hard one at start, and `-- CMD` gets the caller's back before exec: the program runs with the
 * limits it would have without us.
 */
#ifndef PROF_FDLIMIT_H
#define PROF_FDLIMIT_H

/* Raise the soft limit to the hard one (at most FDLIMIT_WANT), the caller's kept. */
#define FDLIMIT_WANT 65536
void fdlimit__raise(void);
/* The caller's limit back (async-signal-safe: between fork and exec). */
void fdlimit__restore(void);

#endif
