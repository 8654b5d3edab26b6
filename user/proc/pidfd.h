/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef PROF_PIDFD_H
#define PROF_PIDFD_H
/*
 * Processes by pidfd, never by number once found: a pidfd pins the process itself, so a signal
 * sent through it never reaches one that took the pid later.
 */
#include <stdint.h>
#include <sys/types.h>

/* A pidfd of pid (close-on-exec), or -errno. */
int pidfd__open(pid_t pid);
/* sig to the process of fd: 0 or -errno (-ESRCH once it is gone). */
int pidfd__signal(int fd, int sig);
/*
 * A pidfd of pid if it is the process that started at start_ns (a task's start_boottime, ns,
 * as BPF reads it; /proc/PID/stat's start time in clock ticks is checked against it after the
 * pidfd pins whatever has the pid): >= 0, -ESRCH (gone, or the pid is another's), or -errno.
 */
int pidfd__open_started(uint32_t pid, uint64_t start_ns);

#endif /* PROF_PIDFD_H */
