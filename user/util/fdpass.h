/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef FDPASS_H
#define FDPASS_H
/*
 * A message and at most one file descriptor over a Unix socket (SCM_RIGHTS): the watchdog is
 * handed the map of held processes, the source opener hands back what it opened.  System calls
 * only (no allocation, no stdio): safe in a child forked from a threaded process.
 */
#include <stddef.h>
#include <sys/types.h>

/* msg (len bytes) and, when fd >= 0, fd.  0 or -errno; EINTR retried. */
int fdpass__send(int sock, const void *msg, size_t len, int fd);
/*
 * Up to len bytes into msg, and the descriptor that came with them in *fd (close-on-exec; -1
 * when none).  The bytes received (0 at end of file) or -errno; EINTR retried.
 */
ssize_t fdpass__recv(int sock, void *msg, size_t len, int *fd);

#endif /* FDPASS_H */
