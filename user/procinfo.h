/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Thread and process names for the comm/process labels, read at first sight of a tid and
 * replaced by the final name the exit tracepoint reports. */
#ifndef PROF_PROCINFO_H
#define PROF_PROCINFO_H

#include <stdint.h>

struct procinfo;

int procinfo__new(struct procinfo **out, const char *proc_root);
void procinfo__free(struct procinfo *pi);
/* First sight of a thread: read its name (and its process's) while it lives. Cheap if known. */
void procinfo__note(struct procinfo *pi, uint32_t pid, uint32_t tid);
/* Authoritative name from the kernel (exit, exec). */
void procinfo__set_comm(struct procinfo *pi, uint32_t pid, uint32_t tid, const char *comm);
const char *procinfo__comm(struct procinfo *pi, uint32_t pid, uint32_t tid);
const char *procinfo__process(struct procinfo *pi, uint32_t pid);

#endif /* PROF_PROCINFO_H */
