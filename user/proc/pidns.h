/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A process's pid inside its own pid namespace (a container's "pid 1"), for the ns_pid label:
 * the innermost (last) number of the "NSpid:" line of /proc/PID/status. */
#ifndef PROF_PIDNS_H
#define PROF_PIDNS_H

#include <stddef.h>
#include <stdint.h>

/* From the content of a status file.  -ENOENT without an NSpid line (kernels before 4.1),
 * -EINVAL when the line holds no pid. */
int pidns__parse_nspid(uint32_t *out, const char *buf, size_t len);

/* The same, read from <proc_fd>/<pid>/status (at most 64 KiB).  -ENOENT/-ESRCH: gone. */
int pidns__read_nspid(uint32_t *out, int proc_fd, uint32_t pid);

#endif /* PROF_PIDNS_H */
