/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* System call names by number, for this machine's architecture (from <asm/unistd.h>). */
#ifndef PROF_SYSCALLS_H
#define PROF_SYSCALLS_H

/* The name of system call nr, or NULL when it is not one this build knows. */
const char *syscalls__name(long nr);

#endif /* PROF_SYSCALLS_H */
